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
	// Overlaps are the windows in which the proofs make it certain that
	// two or more nodes believed they led at once, in time order.
	Overlaps []Overlap
	// Leaderless are the spans from the start of the run to the history's
	// latest event in which no interval was open: no node was proven to
	// lead. Spans of no length are left out.
	Leaderless []Span
}

// Span is a stretch of run time, in ns since the run started.
type Span struct{ Start, End int64 }

// Interval is one node's belief that it led with one token: Start and End
// are when the answers of its first and last proof reached the controller.
//
// A proof was made at some instant between its request leaving the
// controller and its answer arriving, so the belief was certainly held
// only from Start to Asked, when the request of the latest proof left.
// Where Asked is before Start (a single proof, or proofs in flight at
// once) the proofs show the belief held at some instant of [Asked, Start],
// and no longer.
type Interval struct {
	Span
	Asked       int64
	Node        int   // index into Beliefs.Nodes
	Token       int64 // 0: the node never said
	First, Last int   // positions in the history of the first and last proof
}

// held is the span in which the interval's belief was certainly held, and
// false when it was held only at some instant of [Asked, Start].
func (iv *Interval) held() (Span, bool) {
	return Span{iv.Start, iv.Asked}, iv.Asked >= iv.Start
}

// Overlap is a window in which the beliefs of two or more nodes were
// certainly held at once. A window of no length is one instant, somewhere
// in the window of a single proof that lies wholly inside another node's
// certain belief; it is dated when that proof's answer arrived.
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
// Leaderless spans are where no interval was open. Overlaps are judged on
// what is certain (Interval.held): the spans in which two nodes' beliefs
// were both certainly held, and single proofs whose every possible instant
// lies inside another node's certain belief. Two answers that crossed in
// flight prove nothing about which belief came first, so a handover that
// the controller saw out of order is no overlap.
func BeliefsOf(h []history.Event) Beliefs {
	b, end := beliefIntervals(h)
	_, b.Leaderless = sweep(b.Intervals, len(b.Nodes), end)
	b.Overlaps = certainOverlaps(b.Intervals, len(b.Nodes))
	return b
}

// certainOverlaps are the windows in which the beliefs of ivs were
// certainly held by two or more nodes at once, in time order.
func certainOverlaps(ivs []Interval, nodes int) []Overlap {
	// The certain spans, swept as intervals of their own.
	var (
		spans  []Interval
		index  []int                  // spans[k] is ivs[index[k]]
		byNode = make([][]int, nodes) // per node: its spans, positions in spans
		points []int
	)
	for i := range ivs {
		s, ok := ivs[i].held()
		if !ok {
			points = append(points, i)
			continue
		}
		iv := ivs[i]
		iv.Span = s
		byNode[iv.Node] = append(byNode[iv.Node], len(spans))
		spans, index = append(spans, iv), append(index, i)
	}
	overlaps, _ := sweep(spans, nodes, 0) // its leaderless spans are BeliefsOf's
	for _, o := range overlaps {
		for k, j := range o.Intervals {
			o.Intervals[k] = index[j]
		}
	}
	for _, n := range byNode {
		slices.SortFunc(n, func(a, b int) int { return cmp.Compare(spans[a].Start, spans[b].Start) })
	}

	// A single proof inside another node's certain span: the two beliefs
	// held at once, at an instant the proof cannot place more exactly.
	for _, p := range points {
		pt := &ivs[p]
		var with []int
		for node, own := range byNode {
			if node == pt.Node {
				continue
			}
			// A node's spans do not overlap: only the latest to start
			// before the proof's window can hold all of it.
			k, _ := slices.BinarySearchFunc(own, pt.Asked, func(s int, t int64) int {
				return cmp.Or(cmp.Compare(spans[s].Start, t), -1)
			})
			if k > 0 && spans[own[k-1]].End >= pt.Start {
				with = append(with, index[own[k-1]])
			}
		}
		if len(with) == 0 {
			continue
		}
		at := pt.Start
		k, _ := slices.BinarySearchFunc(overlaps, at, func(o Overlap, t int64) int { return cmp.Compare(o.End, t) })
		if k < len(overlaps) && overlaps[k].Start <= at {
			// Inside a window already found: one more belief in it.
			overlaps[k].Intervals = append(slices.Clip(overlaps[k].Intervals), p)
			continue
		}
		overlaps = slices.Insert(overlaps, k, Overlap{Span: Span{at, at}, Intervals: append(with, p)})
	}
	return overlaps
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
		asked, _ := span(h, i, inv)
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
			cur.Asked = max(cur.Asked, asked)
		default:
			if isOn[id] {
				b.Intervals = append(b.Intervals, *cur)
			}
			*cur = Interval{Span: Span{e.Time, e.Time}, Asked: asked, Node: id, Token: e.Token, First: i, Last: i}
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
