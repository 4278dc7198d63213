package record

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/history"
	"github.com/splitbrain/splitbrain/results"
)

// judge runs the checkers over the history of run r in dir, whose steps
// ended with runErr, and notes in info what they found: the faults'
// effects, the faults that came late, how long the check took, and the
// failure. It returns the report, the history it judged, and runErr as
// the judgment leaves it.
//
// A run cut short by Ctrl-C is judged as far as it went. A run whose
// environment broke during its workload is judged all the same: what it
// recorded until then may already prove a violation, and then the
// verdict stands. Any other failure is not judged, but what was recorded
// is still returned, to be drawn.
func judge(info *results.Info, r *harness.Run, dir string, runErr error) (checkers.Report, []history.Event, error) {
	if errors.Is(runErr, context.Canceled) {
		info.Interrupted, runErr = true, nil
	}
	broken := harness.IsEnvironment(runErr)
	if runErr != nil {
		info.Error = runErr.Error()
	}
	if runErr != nil && !broken {
		// None if the history cannot be read.
		events, _ := history.ReadFile(filepath.Join(dir, results.HistoryFile), history.ReadEvents)
		return checkers.Report{}, events, runErr
	}
	cfg := r.Config()
	checkStart := time.Now()
	report, events, err := results.Analyze(dir, r.Promise(), cfg.ObserveInterval, cfg.CheckOptions(), info.Error)
	info.Faults = checkers.Faults(events)
	info.Notes = append(info.Notes, lateFaults(info.Faults)...)
	info.Timings.Check = time.Since(checkStart).Seconds()
	switch {
	case err != nil && broken:
		// The disk that failed the run may fail its judgment too: the
		// failure stays the reason.
		runErr = errors.Join(runErr, fmt.Errorf("judging the history: %v", err))
		info.Error = runErr.Error()
	case err != nil:
		runErr = err
		info.Error = err.Error()
	case broken && report.Valid == checkers.Invalid:
		// The violations stand, and the verdict with them; run.json and
		// results.json say the failure beside them.
		runErr = nil
	}
	return report, events, runErr
}
