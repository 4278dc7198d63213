package harness

import (
	"slices"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
)

// settling decides, from what the observer and the workload show after
// the final heal, when the history may end: once it proves a recovery,
// its absence, a leader lost for good after it, or a return to an older
// leadership that stayed (the availability checker's judgements), and not
// before, so that none of them is left unknown for a history ended too
// soon to tell.
type settling struct {
	healed  time.Time
	quiet   time.Duration // the quiet period
	covered time.Duration // the recovery timeout and two observation intervals

	lastSingle time.Time // a sole leader as new as the writes was last seen
	lastAny    time.Time // any leader was last seen
	staleSince time.Time // a sole leader below the writes' token was first seen; zero: none since a newer one
}

func newSettling(healed time.Time, quiet, covered time.Duration) *settling {
	return &settling{healed: healed, quiet: quiet, covered: covered, lastSingle: healed, lastAny: healed}
}

// done takes the tokens of the nodes that lead at now, by their latest
// observations however old (as the checker counts: a single leader by
// fresh answers alone could be a second one whose answer is late), and
// the highest token of an acknowledged write, and says whether the
// history can end.
func (s *settling) done(now time.Time, leaders []int64, newest int64) bool {
	// As the availability checker judges the recorded history, here on
	// the live answers.
	stale := func(token int64) bool { return checkers.Behind(token, newest) }
	recovered := len(leaders) == 1 && !stale(leaders[0])
	if recovered {
		s.lastSingle = now
	}
	if len(leaders) > 0 {
		s.lastAny = now
	}
	switch {
	case slices.ContainsFunc(leaders, func(t int64) bool { return !stale(t) }):
		s.staleSince = time.Time{}
	case len(leaders) == 1 && s.staleSince.IsZero():
		s.staleSince = now
	}
	if !s.staleSince.IsZero() {
		// The cluster went back to a leadership older than one that
		// wrote (a woken primary retaking its key): a stretch that ends
		// only when a newer leader shows, or proves it did not by
		// outlasting the timeout. Silence does not end it.
		return now.Sub(s.staleSince) > s.covered
	}
	// A stretch with no leader at all is judged as a leader lost for good
	// only once it outlasts the bound: one that began after two leaders
	// were last seen is waited out too, so that the history decides it.
	noSingleForLong := now.Sub(s.lastSingle) > s.covered && (len(leaders) > 0 || now.Sub(s.lastAny) > s.covered)
	return (recovered && now.Sub(s.healed) >= s.quiet) || noSingleForLong
}
