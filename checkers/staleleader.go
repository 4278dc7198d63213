package checkers

import (
	"fmt"
	"time"
)

// staleLeader is a stretch after the final heal that begins with a sole
// leader whose token is below one an acknowledged write had already
// carried, and lasts until some node leads with a token as high: the
// cluster went back to a leadership older than one that had written, whose
// writes the fence refuses. A poll the stale leader leaves unanswered does
// not end it: silence proves no newer leadership. The controller waits
// such a stretch out before it ends a run (harness/settle.go), so that the
// history decides it.
type staleLeader struct {
	start, end int64
	// from is the position of the proof that began it (its node and
	// token the stale leader's), to of the one that ended it (-1: the end
	// of the history), newer of the acknowledged write with the higher
	// token.
	from, to, newer int
}

// newestWrite is the acknowledged write with the highest token so far.
type newestWrite struct {
	token int64
	pos   int
}

// soleLeader is the id of the one node whose latest proof says it leads,
// or -1 when none or several do.
func (s *availability) soleLeader() int {
	if s.leading != 1 {
		return -1
	}
	for id, nb := range s.beliefs {
		if nb.b == leads {
			return id
		}
	}
	return -1
}

// judgeStale takes the beliefs at now, after the final heal. The first
// stale stretch that outlasts the recovery timeout is kept.
func (s *availability) judgeStale() {
	if s.staleNow != nil {
		if by := s.newerLeader(); by >= 0 {
			s.endStale(by)
		}
		return
	}
	if id := s.soleLeader(); id >= 0 && s.behind(s.beliefs[id].token) {
		s.staleNow = &staleLeader{start: s.now, from: s.beliefs[id].last, newer: s.newest.pos}
	}
}

// behind says whether a leader's token is below that of an acknowledged
// write.
func (s *availability) behind(token int64) bool { return Behind(token, s.newest.token) }

// Behind says whether a leader with token leads a leadership older than
// one whose write was acknowledged with newest: the stale-leader rule,
// which the controller also applies to live answers before it ends a run.
// A leader with no token (0) is not judged.
func Behind(token, newest int64) bool { return token > 0 && token < newest }

// newerLeader is the position of the proof of a node that leads with a
// token that is not stale, or -1 when none does.
func (s *availability) newerLeader() int {
	for _, nb := range s.beliefs {
		if nb.b == leads && !s.behind(nb.token) {
			return nb.last
		}
	}
	return -1
}

// endStale closes the current stale stretch at now, ended by the proof at
// position by of a newer leader (-1: the end of the history).
func (s *availability) endStale(by int) {
	st := s.staleNow
	st.end, st.to = s.now, by
	if st.end-st.start > s.recovery && s.stale == nil {
		s.stale = st
	}
	s.staleNow = nil
}

// endsStale says the history ends in a stretch of a stale sole leader
// that outlasts gap but not the recovery timeout: it stops before proving
// that the cluster stayed on the older leadership.
func (s *availability) endsStale(gap int64) bool {
	return s.staleNow != nil && s.now-s.staleNow.start > gap
}

// describeStale describes the first stretch of a stale sole leader that
// outlasted the recovery timeout.
func (s *availability) describeStale(from string) Violation {
	st, heal, newer := s.stale, &s.h[s.heal], &s.h[s.stale.newer]
	began := &s.h[st.from]
	v := Violation{Kind: "stale-leader", Time: st.start, Nodes: []string{began.Node}}
	if newer.Node != began.Node {
		v.Nodes = append(v.Nodes, newer.Node)
	}
	until, events := s.until(st.end, st.to, []int64{heal.Index, began.Index, newer.Index})
	v.Events = sortedUnique(events)
	v.Message = fmt.Sprintf("after %s (event %d at %s), from %s (event %d) %s led alone, with token %d, below the token %d of %s's write acknowledged at %s (event %d), and no node led with a token as high for %s, %s: longer than the recovery timeout of %v. The cluster went back to a leadership older than one that had written: the fence refuses its leader's writes, and what the newer leadership wrote is lost to it",
		from, heal.Index, secs(heal.Time), secs(st.start), began.Index, began.Node, began.Token, newer.Token, newer.Node, secs(newer.Time), newer.Index, secs(st.end-st.start), until, time.Duration(s.recovery))
	return v
}
