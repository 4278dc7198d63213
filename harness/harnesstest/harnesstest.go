// Package harnesstest holds the checks that the harness's tests and the real-system tests make of a finished run.
package harnesstest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/history"
	"github.com/splitbrain/splitbrain/results"
)

// NothingLeft fails t if any container or network of run runID survived
// it, and removes them. A network the Engine refuses to remove for an
// endpoint it kept of a removed container (Removed.Stuck: the Engine's
// own fault, moby/moby#17217, which only its restart clears, and which
// the run notes) is logged, not failed: nothing of the run runs in it,
// and no teardown of ours could have removed it.
func NothingLeft(t testing.TB, runID string) {
	t.Helper()
	ctx := context.Background()
	d, err := harness.ConnectDocker(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	left, err := d.Remove(ctx, harness.LabelRun+"="+runID)
	if err != nil {
		t.Fatal(err)
	}
	if left.Containers+left.Networks > 0 {
		t.Errorf("run %s left %d containers and %d networks behind", runID, left.Containers, left.Networks)
	}
	if len(left.Stuck) > 0 {
		t.Logf("run %s: the Engine would not remove its network %v for an endpoint it kept (moby/moby#17217)", runID, left.Stuck)
	}
}

// StartTimeout is how long a test's cluster may take to start: make test
// runs several clusters at once on two cores beside go test's compiles,
// where a start has taken longer than a run's default (a cold CI's
// etcd-election members, over 30 s at a load of 15). It bounds a hang,
// and costs nothing when the cluster starts sooner.
const StartTimeout = 90 * time.Second

// FaultsTookEffect fails t unless every fault named was injected, and
// each injection that was made succeeded.
func FaultsTookEffect(t testing.TB, effects []checkers.FaultEffect, faults []string) {
	t.Helper()
	injected := map[string]bool{}
	for _, f := range effects {
		if f.Error != "" {
			t.Errorf("%s: %s", f.Fault, f.Error)
		}
		injected[f.Fault] = true
	}
	for _, f := range faults {
		if !injected[f] {
			t.Errorf("%s never injected: %+v", f, effects)
		}
	}
}

// History reads the history of the run in dir.
func History(t testing.TB, dir string) []history.Event {
	t.Helper()
	events, err := history.ReadFile(filepath.Join(dir, results.HistoryFile), history.ReadEvents)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// Margin is how long before a test's deadline Context ends. go test's
// -timeout kills the whole binary, and a run killed so leaves its
// containers behind until the next sweep; ended this much earlier, the
// harness tears the run down itself (at most a minute) and the test
// fails on its own.
const Margin = 90 * time.Second

// Context is t's context, ended Margin before t's deadline.
func Context(t testing.TB) context.Context {
	ctx := t.Context()
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if deadline, ok := d.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, deadline.Add(-Margin))
			t.Cleanup(cancel)
		}
	}
	return ctx
}

// ResultsDir is a folder for a test's runs: removed when the test
// passes, kept and named in the test's log when it fails, so that a
// real system's invalid verdict in CI can be read from its run's folder
// (its history, logs and report) instead of guessed at.
func ResultsDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "splitbrain-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("its runs are kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	return dir
}
