package e2e

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/harness/harnesstest"
	"github.com/splitbrain/splitbrain/harness/record"
	"github.com/splitbrain/splitbrain/history"
	"github.com/splitbrain/splitbrain/results"
)

// run is what a finished run left for a test to judge.
type run struct {
	dir    string // the run folder: run.json, the history, the logs
	info   results.Info
	report checkers.Report
	events []history.Event
}

// runTarget runs cfg and returns what it left once nothing of it runs any
// more. Every call to the harness that a test makes goes through here.
func runTarget(t *testing.T, cfg harness.Config) run {
	t.Helper()
	ctx := harnesstest.Context(t)
	out, err := record.Run(ctx, cfg)
	if out != nil {
		harnesstest.NothingLeft(t, out.Info.ID)
	}
	switch {
	case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		t.Fatalf("stopped %v before the test's deadline: %v", harnesstest.Margin, err)
	case err != nil:
		t.Fatal(err)
	case out.Info.Interrupted:
		t.Fatal("the run was interrupted")
	}
	events, err := history.ReadFile(filepath.Join(out.Dir, results.HistoryFile), history.ReadEvents)
	if err != nil {
		t.Fatal(err)
	}
	return run{dir: out.Dir, info: out.Info, report: out.Report, events: events}
}
