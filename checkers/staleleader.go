package checkers

import (
	"fmt"
	"time"
)

// staleLeader is a stretch after the final heal in which the one node that
// led held a token below one an acknowledged write had already carried:
// the cluster went back to a leadership older than one that had written,
// whose writes the fence refuses.
type staleLeader struct {
	node       string
	token      int64
	start, end int64
	// from is the position of the proof that began it, to of the one that
	// ended it (-1: the end of the history), newer of the acknowledged
	// write with the higher token.
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

// judgeStale takes the beliefs at now, after the final heal; by is the
// position of the proof about to change them (-1: the end of the
// history). The first stretch of a stale sole leader that outlasts the
// recovery timeout is kept.
func (s *availability) judgeStale(by int) {
	id := s.soleLeader()
	var node string
	var token int64
	if id >= 0 {
		node, token = s.names[id], s.beliefs[id].token
	}
	stale := id >= 0 && token > 0 && token < s.newest.token
	if st := s.staleNow; st != nil && (!stale || st.node != node || st.token != token) {
		s.endStale(by)
	}
	if stale && s.staleNow == nil {
		s.staleNow = &staleLeader{node: node, token: token, start: s.now, from: s.beliefs[id].last, newer: s.newest.pos}
	}
}

// endStale closes the current stale stretch at now, ended by the proof at
// position by (-1: the end of the history).
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
	v := Violation{Kind: "stale-leader", Time: st.start, Nodes: []string{st.node}}
	if newer.Node != st.node {
		v.Nodes = append(v.Nodes, newer.Node)
	}
	events := []int64{heal.Index, began.Index, newer.Index}
	until := fmt.Sprintf("to the end of the history at %s", secs(st.end))
	if st.to >= 0 {
		events = append(events, s.h[st.to].Index)
		until = fmt.Sprintf("until %s (event %d)", secs(st.end), s.h[st.to].Index)
	}
	v.Events = sortedUnique(events)
	v.Message = fmt.Sprintf("after %s (event %d at %s), from %s (event %d) %s alone led, with token %d, below the token %d of %s's write acknowledged at %s (event %d), for %s, %s: longer than the recovery timeout of %v. The cluster went back to a leadership older than one that had written: the fence refuses its leader's writes, and what the newer leadership wrote is lost to it",
		from, heal.Index, secs(heal.Time), secs(st.start), began.Index, st.node, st.token, newer.Token, newer.Node, secs(newer.Time), newer.Index, secs(st.end-st.start), until, time.Duration(s.recovery))
	return v
}
