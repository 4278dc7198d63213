package harness

import (
	"testing"
	"time"
)

// settlingRun steps a settling on a fake clock, looked at every 50 ms
// from the final heal, and tells when it let the history end.
type settlingRun struct {
	t     *testing.T
	s     *settling
	start time.Time
	now   time.Duration
	ended time.Duration // -1 while it has not
}

// A quiet period of 10 s and a recovery timeout of 30 s, as run's
// defaults, with the two observation intervals the bound adds.
func newSettlingRun(t *testing.T) *settlingRun {
	start := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	return &settlingRun{t: t, s: newSettling(start, 10*time.Second, 30*time.Second+100*time.Millisecond), start: start, ended: -1}
}

// hold shows these leaders' tokens for d, with writes accepted up to the
// token newest.
func (r *settlingRun) hold(d time.Duration, newest int64, leaders ...int64) *settlingRun {
	for end := r.now + d; r.now < end && r.ended < 0; r.now += 50 * time.Millisecond {
		if r.s.done(r.start.Add(r.now), leaders, newest) {
			r.ended = r.now
		}
	}
	return r
}

func (r *settlingRun) endsAt(want time.Duration) {
	r.t.Helper()
	if r.ended != want {
		r.t.Errorf("the history may end at %v, want %v", r.ended, want)
	}
}

func TestSettlingEndsAfterTheQuietPeriodOnceOneLeads(t *testing.T) {
	// Two leaders after the heal, then one with the newest token.
	newSettlingRun(t).hold(3*time.Second, 2, 1, 2).hold(time.Minute, 2, 2).endsAt(10 * time.Second)
	// One leads only after the quiet period: the history ends there.
	newSettlingRun(t).hold(12*time.Second, 2).hold(time.Minute, 3, 3).endsAt(12 * time.Second)
	// A leader with no token is not judged by it.
	newSettlingRun(t).hold(time.Minute, 5, 0).endsAt(10 * time.Second)
}

func TestSettlingWaitsOutAStretchWithNoSingleLeader(t *testing.T) {
	// No leader at all, from the heal: the recovery bound.
	newSettlingRun(t).hold(time.Minute, 2).endsAt(30150 * time.Millisecond)
	// Two leaders all along: the same bound.
	newSettlingRun(t).hold(time.Minute, 2, 1, 2).endsAt(30150 * time.Millisecond)
	// A leader seen at 5 s, then none: a leader lost for good is proved
	// by the bound from its last sight, and no earlier.
	newSettlingRun(t).hold(5*time.Second, 2).hold(50*time.Millisecond, 2, 2).hold(time.Minute, 2).endsAt(35150 * time.Millisecond)
}

func TestSettlingWaitsOutAStaleLeader(t *testing.T) {
	// patroni#2689: the promoted member wrote with token 3, and the woken
	// old primary leads alone with token 2. Past the quiet period, the
	// history goes on until the stretch outlasts the bound.
	newSettlingRun(t).hold(2*time.Second, 3, 3).hold(time.Minute, 3, 2).endsAt(32150 * time.Millisecond)
	// Its polls unanswered for a while (no leader at all) do not end the
	// stretch, nor restart it.
	newSettlingRun(t).hold(2*time.Second, 3, 2).hold(5*time.Second, 3).hold(time.Minute, 3, 2).endsAt(30150 * time.Millisecond)
	// A newer leader beside it ends the stretch; alone it is a recovery.
	newSettlingRun(t).hold(20*time.Second, 3, 2).hold(time.Second, 4, 2, 4).hold(time.Minute, 4, 4).endsAt(21 * time.Second)
}
