package checkers

import (
	"cmp"
	"slices"

	"github.com/splitbrain/splitbrain/history"
)

// Beliefs is what a history proves about which nodes believed they led,
// and when. The leader-overlap checker judges its overlaps, and the report
// draws all of it, so the page shows exactly what was judged.
type Beliefs struct {
	// Nodes names the nodes that proved a belief, in the order they were
	// first heard from; Interval.Node indexes it.
	Nodes []string
	// Intervals are every node's belief intervals, in the order the
	// history ended them, those still open at its end last.
	Intervals []Interval
	// Overlaps are the windows in which intervals of two or more nodes
	// were open at once, in time order.
	Overlaps []Overlap
	// Leaderless are the spans from the start of the run to the history's
	// latest event in which no interval was open: no node was proven to
	// lead. Spans of no length are left out.
	Leaderless []Span
}

// Span is a stretch of run time, in ns since the run started.
type Span struct{ Start, End int64 }

// Interval is one node's belief that it led with one token: Start and End
// are the times of its first and last proof.
type Interval struct {
	Span
	Node        int   // index into Beliefs.Nodes
	Token       int64 // 0: the node never said
	First, Last int   // positions in the history of the first and last proof
}

// Overlap is a window in which intervals of two or more nodes were open.
type Overlap struct {
	Span
	// Intervals index Beliefs.Intervals: the latest open interval of each
	// node when the window began, then every interval that began inside it.
	Intervals []int
}

// BeliefsOf rebuilds every node's belief intervals from h in one pass, and
// sweeps them for overlaps and leaderless spans.
//
// An interval starts at a proof that the node led with a token (see
// beliefOf) and runs through every later proof with the same token, to the
// last of them before a proof that it did not lead (an observation as
// follower, a write it refused as not leader) or led with another token
// (which starts the next interval). Proofs are timed when their answer
// reached the controller. A token of 0 (not told) is taken as the token
// the interval already has.
//
// Silence ends an interval too: a poll the node did not answer (it was
// frozen, down, or cut off from the controller) proves nothing about its
// belief, so a node heard again with its old token afterwards starts a new
// interval. A gap between proofs with no unanswered poll in it (a sparse
// history) is bridged. Time before an interval's first proof and after its
// last is never counted.
//
// The sweep walks the interval ends in time order. At equal times starts
// come first, so a single proof (an interval of no length) inside another
// node's interval is an overlap of no length: the two beliefs were proved
// at once.
func BeliefsOf(h []history.Event) Beliefs {
	b, end := beliefIntervals(h)
	b.Overlaps, b.Leaderless = sweep(b.Intervals, len(b.Nodes), end)
	return b
}

// beliefIntervals fills the Nodes and Intervals of h's Beliefs, and finds
// the time of its latest event.
func beliefIntervals(h []history.Event) (b Beliefs, end int64) {
	var (
		open []Interval // per node: its current interval...
		isOn []bool     // ...if it has one
	)
	ids := map[string]int{}
	ops := opTracker{}
	for i := range h {
		e := &h[i]
		end = max(end, e.Time)
		inv := ops.see(h, i)
		bel := beliefOf(h, i, inv)
		if bel == noBelief {
			continue
		}
		id, ok := ids[e.Node]
		if !ok {
			id = len(b.Nodes)
			ids[e.Node] = id
			b.Nodes = append(b.Nodes, e.Node)
			open = append(open, Interval{})
			isOn = append(isOn, false)
		}
		cur := &open[id]
		switch {
		case bel == follows || bel == silent:
			if isOn[id] {
				b.Intervals = append(b.Intervals, *cur)
				isOn[id] = false
			}
		case isOn[id] && (e.Token == cur.Token || e.Token == 0 || cur.Token == 0):
			if cur.Token == 0 {
				cur.Token = e.Token
			}
			// Answers can be recorded slightly out of time order; an
			// interval only ever grows.
			if e.Time >= cur.End {
				cur.End, cur.Last = e.Time, i
			}
		default:
			if isOn[id] {
				b.Intervals = append(b.Intervals, *cur)
			}
			*cur = Interval{Span: Span{e.Time, e.Time}, Node: id, Token: e.Token, First: i, Last: i}
			isOn[id] = true
		}
	}
	for id, on := range isOn {
		if on {
			b.Intervals = append(b.Intervals, open[id])
		}
	}
	return b, end
}

// sweep walks the interval ends in time order and returns the windows in
// which intervals of at least two different nodes are open, and the spans
// of [0, end] in which none is.
func sweep(ivs []Interval, nodes int, end int64) ([]Overlap, []Span) {
	type edge struct {
		at  int64
		iv  int32
		end bool
	}
	edges := make([]edge, 0, 2*len(ivs))
	for i, iv := range ivs {
		edges = append(edges, edge{iv.Start, int32(i), false}, edge{iv.End, int32(i), true})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmpBool(a.end, b.end), cmp.Compare(a.iv, b.iv))
	})

	var (
		overlaps []Overlap
		idle     []Span
		parts    []int // the intervals of every overlap, one after another
		cur      Overlap
		from     int                    // where cur's intervals start in parts
		inside   bool                   // in cur
		active   int                    // nodes with an open interval
		idleFrom int64                  // since when none has one, while active == 0
		opened   = make([]int32, nodes) // per node: how many of its intervals are open
		latest   = make([]int, nodes)   // per node: its latest open interval
	)
	for _, ed := range edges {
		n := ivs[ed.iv].Node
		if ed.end {
			opened[n]--
			if opened[n] == 0 {
				if active--; active == 0 {
					idleFrom = ed.at
				}
			}
			if inside && active < 2 {
				// A full slice expression: appending to one overlap's
				// intervals cannot write over the next one's.
				cur.End, cur.Intervals = ed.at, parts[from:len(parts):len(parts)]
				overlaps = append(overlaps, cur)
				inside = false
			}
			continue
		}
		if opened[n] == 0 {
			if active == 0 && ed.at > idleFrom {
				idle = append(idle, Span{idleFrom, ed.at})
			}
			active++
		}
		opened[n]++
		latest[n] = int(ed.iv)
		switch {
		case inside:
			parts = append(parts, int(ed.iv))
		case active >= 2:
			inside, from = true, len(parts)
			cur = Overlap{Span: Span{Start: ed.at}}
			for m, k := range opened {
				if k > 0 {
					parts = append(parts, latest[m])
				}
			}
		}
	}
	if end > idleFrom {
		idle = append(idle, Span{idleFrom, end})
	}
	return overlaps, idle
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
