package results

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/history"
)

// Analyze runs every checker over a run folder's history and resource log
// and writes results.json. It returns the history it judged, for the
// report and checkers.Faults, so that nothing reads it twice. It reads only
// the files, so it judges a run from a killed controller, or another
// machine, the same way.
//
// failure is why the harness failed during the workload, "" if it did not:
// a history that proves no violation then proves nothing, and the verdict
// is unknown, with the reason in results.json.
func Analyze(dir string, promise contract.Promise, observeInterval time.Duration, opts checkers.Options, failure string) (checkers.Report, []history.Event, error) {
	events, eventsCut, err := history.ReadComplete(filepath.Join(dir, HistoryFile), history.ReadEvents)
	if err != nil {
		return checkers.Report{}, nil, err
	}
	decisions, decisionsCut, err := history.ReadComplete(filepath.Join(dir, ResourceFile), history.ReadDecisions)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return checkers.Report{}, events, err
	}
	report := checkers.Run(checkers.Input{
		History: events, Resource: decisions, Promise: promise, ObserveInterval: observeInterval,
	}, checkers.All(opts))
	if failure != "" {
		report = report.Broken(failure)
	}
	for _, cut := range []*history.CutShort{eventsCut, decisionsCut} {
		if cut != nil {
			report.CutShort = append(report.CutShort, *cut)
		}
	}
	// A view left by an earlier analysis must not outlive the violation.
	if err := os.Remove(filepath.Join(dir, checkers.LinearizabilityFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return report, events, err
	}
	for _, res := range report.Checkers {
		for name, body := range res.Files {
			if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
				return report, events, err
			}
		}
	}
	return report, events, writeResults(dir, report)
}
