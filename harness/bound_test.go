package harness

import (
	"strings"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/nemesis"
)

// A run bounded by its faults that stops before its ceiling (a violation,
// Ctrl-C) keeps its verdict; one that reaches it fails; both record the
// time the faults took as their time limit. A run bounded by its time
// limit is left as it is.
func TestFaultsOver(t *testing.T) {
	cfg := DefaultConfig()
	pace := nemesis.Pace{Settle: time.Second, Wait: 6 * time.Second, React: 5 * time.Second, Hold: 3 * time.Second, Thaw: time.Second}
	bounded := nemesis.Bounded([][]string{{"kill-leader"}}, 2, pace, 0, 1)
	ceiling := bounded.Ceiling(cfg.StartTimeout, cfg.Nodes)
	nem := nemesis.New(bounded, nil, 1, nil, nil) // never run: never spent
	for _, c := range []struct {
		schedule  nemesis.Schedule
		took      time.Duration
		fails     bool
		timeLimit time.Duration
	}{
		{bounded, 12300 * time.Millisecond, false, 13 * time.Second},
		{bounded, ceiling, true, ceiling},
		{nemesis.Schedule{Faults: []string{"kill-leader"}, Pace: &pace}, ceiling, false, cfg.TimeLimit},
	} {
		r := &run{cfg: cfg, schedule: c.schedule}
		r.info.Config = cfg.Settings
		g := newGuard(time.Now())
		r.faultsOver(g, nem, c.took)
		if err := g.err(); (err != nil) != c.fails || (c.fails && !strings.Contains(err.Error(), "0 of its 2 faults healed")) {
			t.Errorf("after %s: %v, want a failure: %v", c.took, err, c.fails)
		}
		if r.info.Config.TimeLimit != c.timeLimit {
			t.Errorf("after %s: time limit %s, want %s", c.took, r.info.Config.TimeLimit, c.timeLimit)
		}
	}
}
