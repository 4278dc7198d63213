package harness

import (
	"fmt"
	"math"
	"time"

	"github.com/splitbrain/splitbrain/nemesis"
)

// limit is how long the faults of schedule s may go on: the time limit,
// or the ceiling of a schedule bounded by its faults (--faults).
func (c Config) limit(s nemesis.Schedule) time.Duration {
	if s.Steady == 0 {
		return c.TimeLimit
	}
	return s.Ceiling(c.StartTimeout, c.Nodes)
}

// faultsOver notes how the faults of a run bounded by them ended, took
// into the run: spent (every one struck and healed, the cluster steady
// after the last), stopped sooner (a violation, Ctrl-C, a breakage), or at
// their ceiling, which fails the run: it did not test what it planned,
// and only a history that already proves it invalid gives it a verdict.
// run.json's time limit becomes the time the faults took, so that the
// run's explicit schedule replays within it. A run bounded by its time
// limit notes nothing.
func (r *run) faultsOver(g *guard, nem *nemesis.Nemesis, took time.Duration) {
	if r.schedule.Steady == 0 {
		return
	}
	r.info.Config.TimeLimit = time.Duration(math.Ceil(took.Seconds())) * time.Second
	select {
	case <-nem.Spent():
		r.info.Notes = append(r.info.Notes, fmt.Sprintf("bounded by its faults: %d struck and healed, and the cluster steady for %s after the last, in %.1f s",
			len(r.schedule.Faults), r.schedule.Steady, took.Seconds()))
		return
	default:
	}
	if ceiling := r.cfg.limit(r.schedule); took >= ceiling {
		g.fail("the run reached its ceiling of %s with %d of its %d faults healed, before its cluster was steady after the last: it did not test what it planned",
			ceiling, nem.Healed(), len(r.schedule.Faults))
	}
}
