package checkers

import (
	"fmt"
	"slices"
	"time"

	"github.com/splitbrain/splitbrain/history"
)

// rejoinWindow is how soon after nodes come back a leadership must be seen
// to end for their return to be what ended it: a node that returns with a
// higher term deposes the leader at its first exchange, once their
// connection is made again (1.0-1.6 s after the heal for etcd without
// pre-vote, docs/figures.md), and the observer sees it at its next look;
// with no fault in effect and a majority behind it, a leader has no other
// reason to go.
const rejoinWindow = int64(3 * time.Second)

// A rejoin is the heal of a fault, with no other fault in effect, while
// the node leading (the only one whose latest answer says it leads) had a
// majority: that many nodes' latest answers, its own among them, named it
// the leader (leader_id). The nodes the fault touched that did not (cut
// off, stopped, silent) are the ones that return to it.
type rejoin struct {
	heal     int      // position of the heal
	returned []string // the nodes the fault had touched that were not following the leader
	leader   string
	token    int64
	claim    int // position of the leader's latest claim before the heal
}

// openFault is an injected fault not healed yet.
type openFault struct {
	f     string
	nodes []string
}

// answer is a node's latest leader observation: whether it said it led,
// with which token, and whom it named leader ("" for none, or silence).
type answer struct {
	leads  bool
	token  int64
	leader string
	pos    int
}

// rejoins finds, in one pass over h, the rejoins whose outcome the history
// shows, and among them those that ended the leadership they came back to
// (disruptions), each a Window: the leader's claim, the heal, and the
// proof that its leadership ended. A leadership ends at a proof that its
// node no longer leads with its token (an answered observation), or that
// another node leads with a higher one (or, with no tokens, leads at
// all), within rejoinWindow of the heal and before the next fault's
// injection. A rejoin is judged when either comes first: the leadership
// ended, or the window passed (an event after it) with none; one cut
// short by the next injection or by the end of the history is not
// counted. Only "leader" events are read: a target whose nodes do not name
// their leader shows no majority, and no rejoin.
func rejoins(h []history.Event) (judged int, disruptions []Violation) {
	cluster := map[string]bool{}
	for i := range h {
		if h[i].Type == history.Leader {
			cluster[h[i].Node] = true
		}
	}
	clocks := watchClocks(h)
	var (
		latest  = map[string]answer{}
		open    []openFault
		pending *rejoin
	)
	// rejoinAt is the rejoin the heal at position i of fault f makes, or
	// nil.
	rejoinAt := func(i int, f openFault) *rejoin {
		var leader string
		for n, a := range latest {
			if a.leads {
				if leader != "" {
					return nil // two claim it: no one leader to return to
				}
				leader = n
			}
		}
		if leader == "" {
			return nil
		}
		following := 0
		for _, a := range latest {
			if a.leader == leader {
				following++
			}
		}
		if 2*following <= len(cluster) {
			return nil
		}
		var returned []string
		for _, n := range f.nodes {
			if cluster[n] && latest[n].leader != leader {
				returned = append(returned, n)
			}
		}
		if len(returned) == 0 {
			return nil
		}
		l := latest[leader]
		return &rejoin{heal: i, returned: returned, leader: leader, token: l.token, claim: l.pos}
	}
	for i := range h {
		e := &h[i]
		if pending != nil && e.Time > h[pending.heal].Time+rejoinWindow {
			judged, pending = judged+1, nil
		}
		switch e.Type {
		case history.Nemesis:
			switch {
			case e.Phase == history.Inject && e.Error == "":
				open = append(open, openFault{e.F, e.Nodes})
				pending = nil // undecided: another fault may end the leadership
			case e.Phase == history.Heal:
				k := slices.IndexFunc(open, func(o openFault) bool { return o.f == e.F })
				if k < 0 {
					continue
				}
				f := open[k]
				open = slices.Delete(open, k, k+1)
				if e.Error == "" && len(open) == 0 {
					pending = rejoinAt(i, f)
				}
			}
		case history.Leader:
			if e.Error != "" {
				latest[e.Node] = answer{pos: i} // silence names no leader
				continue
			}
			leader := e.LeaderID
			if e.IsLeader {
				leader = e.Node
			}
			latest[e.Node] = answer{leads: e.IsLeader, token: e.Token, leader: leader, pos: i}
			if pending == nil {
				continue
			}
			p := pending
			stepped := e.Node == p.leader && (!e.IsLeader || e.Token != 0 && p.token != 0 && e.Token != p.token)
			deposed := e.Node != p.leader && e.IsLeader && (e.Token > p.token || p.token == 0)
			if (stepped || deposed) && observedSince(e, clocks) < h[p.heal].Time {
				// The answer may tell of a moment before the heal took
				// effect: the leadership may have ended while the nodes
				// were still apart (a failover as long as a short cut),
				// and whether their return ended it is unknown.
				pending = nil
				continue
			}
			if stepped || deposed {
				judged++
				disruptions = append(disruptions, describeRejoin(h, p, i))
				pending = nil
			}
		}
	}
	return judged, disruptions
}

// observedSince is the earliest moment leader event e can tell of: a
// watch line's earliest date by its clock (its At is the node's clock,
// not run time), a poll's when its request left.
func observedSince(e *history.Event, clocks map[clock]dating) int64 {
	if pushed(e) {
		early, _ := clocks[clockOf(e)].dates(e)
		return early
	}
	return e.Sent
}

// describeRejoin is the Window of a leadership that rejoin p ended, as
// the event at end proves.
func describeRejoin(h []history.Event, p *rejoin, end int) Violation {
	heal, e := &h[p.heal], &h[end]
	leader := p.leader
	if p.token > 0 {
		leader = fmt.Sprintf("%s (token %d)", p.leader, p.token)
	}
	how := fmt.Sprintf("%s said it no longer led", p.leader)
	if e.Node != p.leader {
		how = fmt.Sprintf("%s claimed the lead", e.Node)
		if e.Token > 0 {
			how = fmt.Sprintf("%s claimed token %d", e.Node, e.Token)
		}
	}
	were := "was"
	if len(p.returned) > 1 {
		were = "were"
	}
	return Violation{
		Kind:   "rejoin-disruption",
		Time:   heal.Time,
		Events: sortedUnique([]int64{h[p.claim].Index, heal.Index, e.Index}),
		Nodes:  append([]string{p.leader}, p.returned...),
		Message: fmt.Sprintf("%s led with a majority while %s %s out (%s); %s came back at %s (event %d) and the leadership ended %s later: %s (event %d)",
			leader, joinAnd(p.returned), were, heal.F, joinAnd(p.returned), secs(heal.Time), heal.Index, secs(e.Time-heal.Time), how, e.Index),
	}
}
