// Package record performs one test as the harness's three steps (up, drive, down), judges its history and keeps it in its results folder.
package record

import (
	"cmp"
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/history"
	"github.com/splitbrain/splitbrain/results"
)

// Outcome is what a finished run leaves: its folder, run.json and verdict.
type Outcome struct {
	Dir    string
	Info   results.Info
	Report checkers.Report
}

// Run performs one test: it starts the cluster cfg describes, drives it
// under faults into a history, tears it down, judges the history and
// keeps the run in cfg.ResultsDir (its folder, its report, latest and the
// index). Whatever happens, every container and network of the run is
// removed before Run returns. A run folder is left behind from the moment
// the run begins, even when it fails: a run the harness failed has an
// Outcome and an error both; bad input has no Outcome.
func Run(ctx context.Context, cfg harness.Config) (*Outcome, error) {
	r, err := harness.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	store := results.Store{Root: r.Config().ResultsDir}
	dir, err := begin(store, r.Info())
	if err != nil {
		return nil, errors.Join(err, r.Down(ctx))
	}
	return keep(store, dir, r, began, steps(ctx, r, dir))
}

// begin makes the run's folder and writes its run.json first, so that the
// history of a run whose controller is killed can still be analyzed: it
// holds the promise to judge by.
func begin(store results.Store, info results.Info) (string, error) {
	dir, err := store.Create(info.ID)
	if err != nil {
		return "", err
	}
	return dir, results.WriteJSON(filepath.Join(dir, results.RunFile), info)
}

// steps starts r's cluster in dir, drives it and tears it down, which
// happens whatever went wrong before.
func steps(ctx context.Context, r *harness.Run, dir string) error {
	err := r.Up(ctx, dir)
	if err == nil {
		err = r.Drive(ctx)
	}
	if derr := r.Down(ctx); derr != nil {
		err = errors.Join(err, derr)
	}
	return err
}

// keep judges finished run r, begun at began in dir, whose steps ended
// with runErr, and stores it. Its error is runErr as judging left it, or
// else the first thing that could not be stored.
func keep(store results.Store, dir string, r *harness.Run, began time.Time, runErr error) (*Outcome, error) {
	out := &Outcome{Dir: dir, Info: r.Info()}
	var events []history.Event
	out.Report, events, runErr = judge(&out.Info, r, dir, runErr)
	cfg := r.Config()
	out.Info.HarnessTiming = checkers.HarnessTimingOf(events, cfg.ObserveInterval, cfg.Rate)
	out.Info.HarnessTiming.Starts = r.Starts()
	out.Info.Timings.Total = time.Since(began).Seconds()
	return out, cmp.Or(runErr, storeRun(store, out, events))
}

// storeRun writes run.json again, whole now, and the report (a failed run
// gets one too: it says what failed, and the index links to it), points
// latest at the run and lists it in the index. Every step is tried; the
// first error is returned.
func storeRun(store results.Store, out *Outcome, events []history.Event) error {
	return cmp.Or(
		results.WriteJSON(filepath.Join(out.Dir, results.RunFile), out.Info),
		results.WriteReport(out.Dir, out.Info, out.Report, events),
		store.SetLatest(out.Info.ID),
		results.WriteIndex(store),
	)
}
