package harness

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/history"
	"github.com/splitbrain/splitbrain/results"
)

// Watched are the checkers a run can watch its history with as it is
// written: their violations are facts about a prefix of the history that
// no later event undoes. Linearizability and availability are judged
// over the whole run only.
var Watched = []string{"election-safety", "leader-overlap", "stale-token"}

// watchEvery is how often a watched run's history is judged again.
const watchEvery = 500 * time.Millisecond

// watch judges the history and the resource log as they are written, and
// tells on the channel once every checker of want (or any watched one, if
// want is empty) has found a violation. It reads the files only, as
// Analyze does: what it sees is what the final verdict will judge.
func (r *run) watch(ctx context.Context, start time.Time) <-chan results.StoppedEarly {
	found := make(chan results.StoppedEarly, 1)
	var cs []checkers.Checker
	for _, c := range checkers.All(r.cfg.checkOptions()) {
		if slices.Contains(Watched, c.Name) {
			cs = append(cs, c)
		}
	}
	go func() {
		t := time.NewTicker(watchEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			in, err := r.readSoFar()
			if err != nil {
				continue // a file not yet there, or being written: next time
			}
			invalid := checkers.Run(in, cs).Invalid()
			if len(invalid) > 0 && (len(r.cfg.StopOn) == 0 || containsAll(invalid, r.cfg.StopOn)) {
				found <- results.StoppedEarly{At: time.Since(start).Seconds(), Checkers: invalid}
				return
			}
		}
	}()
	return found
}

// readSoFar is the checkers' input from the run's files as they are now;
// a line being written is left for the next look.
func (r *run) readSoFar() (checkers.Input, error) {
	events, _, err := history.ReadComplete(filepath.Join(r.dir, results.HistoryFile), history.ReadEvents)
	if err != nil {
		return checkers.Input{}, err
	}
	decisions, _, err := history.ReadComplete(filepath.Join(r.dir, results.ResourceFile), history.ReadDecisions)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return checkers.Input{}, err
	}
	return checkers.Input{History: events, Resource: decisions, Promise: r.promise, ObserveInterval: r.cfg.ObserveInterval}, nil
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
