package harness

import (
	"context"
	"path/filepath"
	"slices"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/history"
	"github.com/splitbrain/splitbrain/results"
)

// Watched names the checkers a run can watch its history with as it is
// written (checkers.Checker.Watchable), in report order: the checkers
// --stop-on may name.
var Watched = checkerNames(watchable(checkers.All(checkers.Options{})))

// watchEvery is how often a watched run's history is judged again.
const watchEvery = 500 * time.Millisecond

// watchMargin is how far behind the newest event a violation must lie for
// the watch to trust it: a belief pushed by a node, or an answer to a
// poll, can land after events the controller recorded later, and a
// violation at the very end of a prefix could be one that such a late
// event explains away.
const watchMargin = time.Second

// watch judges the history and the resource log as they are written, and
// tells on the channel once every checker of StopOn (or any watched one,
// if none is named) has found a violation. It reads the files only, as
// Analyze does: what it sees is what the final verdict will judge.
func (r *run) watch(ctx context.Context, start time.Time) <-chan results.StoppedEarly {
	found := make(chan results.StoppedEarly, 1)
	var (
		cs        = watchable(checkers.All(r.cfg.CheckOptions()))
		in        = checkers.Input{Promise: r.promise, ObserveInterval: r.cfg.ObserveInterval}
		events    = history.NewTail(filepath.Join(r.dir, results.HistoryFile), history.ReadEvents)
		decisions = history.NewTail(filepath.Join(r.dir, results.ResourceFile), history.ReadDecisions)
	)
	go func() {
		t := time.NewTicker(watchEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			e, err := events.Next()
			if err != nil {
				return // the final judgment will say what is wrong with the file
			}
			d, err := decisions.Next()
			if err != nil {
				return
			}
			in.History, in.Resource = append(in.History, e...), append(in.Resource, d...)
			if len(in.History) == 0 {
				continue
			}
			invalid := settled(checkers.Run(in, cs), in.History[len(in.History)-1].Time-int64(watchMargin))
			if len(invalid) > 0 && (len(r.cfg.StopOn) == 0 || containsAll(invalid, r.cfg.StopOn)) {
				found <- results.StoppedEarly{At: time.Since(start).Seconds(), Checkers: invalid}
				return
			}
		}
	}()
	return found
}

// settled names the checkers of rep with a violation at or before until
// (ns since the run started).
func settled(rep checkers.Report, until int64) []string {
	var out []string
	for _, name := range rep.Invalid() {
		if v := rep.Checkers[name].Violations; len(v) > 0 && v[0].Time <= until {
			out = append(out, name)
		}
	}
	return out
}

// watchable keeps the checkers of cs that a run can watch as it goes.
func watchable(cs []checkers.Checker) []checkers.Checker {
	return slices.DeleteFunc(cs, func(c checkers.Checker) bool { return !c.Watchable })
}

func checkerNames(cs []checkers.Checker) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
