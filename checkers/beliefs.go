package checkers

import (
	"cmp"
	"math"
	"slices"
	"time"

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
	// Watched counts the nodes that pushed their beliefs, and Slack is the
	// widest any of their lines is dated, in ns: how far a pushed belief's
	// instant can be from where its interval puts it.
	Watched int
	Slack   int64
}

// Span is a stretch of run time, in ns since the run started.
type Span struct{ Start, End int64 }

// Interval is one node's belief that it led with one token. Start and End
// are the latest instants at which its first and last proof can have been
// made: when a polled answer reached the controller, or where a pushed
// line's own timestamp falls at the latest (see BeliefsOf).
//
// A proof was made at some instant no earlier than its Asked (a request
// leaving the controller, or the earliest a pushed line can be dated), so
// the belief was certainly held only from Start to Asked of the latest
// proof. Where Asked is before Start (a single proof, or proofs in flight
// at once) the proofs show the belief held at some instant of
// [Asked, Start], and no longer.
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
// sweeps them for overlaps and leaderless spans. every is how often a node
// was polled, or pushed its belief when it had not changed (0: the
// default, 50 ms).
//
// A polled node's interval starts at a proof that the node led with a
// token (see beliefOf) and runs through every later proof with the same
// token, to the last of them before a proof that it did not lead (an
// observation as follower, a write it refused as not leader) or led with
// another token (which starts the next interval). Proofs are timed when
// their answer reached the controller. A token of 0 (not told) is taken as
// the token the interval already has.
//
// Silence ends an interval too: a poll the node did not answer (it was
// frozen, down, or cut off from the controller) proves nothing about its
// belief, so a node heard again with its old token afterwards starts a new
// interval. A gap between proofs with no unanswered poll in it (a sparse
// history) is bridged. Time before an interval's first proof and after its
// last is never counted.
//
// A node that pushed its beliefs (see watchClocks) is judged by its
// lines: each dates a belief on the node's own clock, and the node
// promised a line at every change, so its belief held between two lines
// that show it, unless they are more than four beats apart (the node was
// frozen or starved: that gap proves nothing, as silence). Between two
// lines that differ it is not known which held. Its writes as leader are
// single proofs, each held at some instant of the write, kept where its
// lines do not already make its belief certain (see unexplained).
//
// Leaderless spans are where no interval was open. Overlaps are judged on
// what is certain (Interval.held): the spans in which two nodes' beliefs
// were both certainly held, and single proofs whose every possible instant
// lies inside another node's certain belief. Two answers that crossed in
// flight prove nothing about which belief came first, so a handover that
// the controller saw out of order is no overlap.
func BeliefsOf(h []history.Event, every time.Duration) Beliefs {
	b, end := beliefIntervals(h, cmp.Or(every, defaultEvery))
	_, b.Leaderless = sweep(b.Intervals, len(b.Nodes), end)
	b.Overlaps = certainOverlaps(b.Intervals, len(b.Nodes))
	return b
}

// defaultEvery is the observer's default interval, for histories that do
// not say theirs.
const defaultEvery = 50 * time.Millisecond

// watchGap is how many beats apart two lines of a watch may be for the
// belief they both show to count as held in between.
const watchGap = 4

// stream is one watch connection: its lines share the node and the Sent
// of the request that opened it.
type stream struct {
	node string
	sent int64
}

// clock is a clock that pushed lines read: Boot names it, whichever node
// read it (on one host, every container reads the kernel's), and lines
// without one count as a clock of their own per stream.
type clock struct {
	boot int64
	node string // only for lines without a Boot
	sent int64
}

func clockOf(e *history.Event) clock {
	if e.Boot != 0 {
		return clock{boot: e.Boot}
	}
	return clock{node: e.Node, sent: e.Sent}
}

// dating maps a clock that pushed lines read to the controller's: a line
// stamped at was made at controller time at+lo at the earliest and at+hi
// at the latest. Every line was made after the request of its stream left
// (Sent) and before it arrived (Time), so lo is the largest Sent-At of a
// stream's first line and hi the smallest Time-At of any line: every
// stream on the clock narrows the window, and a stream opened to a frozen
// node, whose first line came long after its request, borrows the window
// of the others. When lo > hi the node's clock is not a steady monotonic one, and
// each line is dated only by its own [Sent, Time].
type dating struct{ lo, hi int64 }

func (d dating) steady() bool { return d.lo <= d.hi }

// dates is when line e was made, at the earliest and at the latest.
func (d dating) dates(e *history.Event) (early, late int64) {
	if !d.steady() {
		return e.Sent, e.Time
	}
	return e.At + d.lo, e.At + d.hi
}

// watchClocks finds every clock that lines of h read, and how to date them.
func watchClocks(h []history.Event) map[clock]dating {
	out := map[clock]dating{}
	for i := range h {
		e := &h[i]
		if !pushed(e) {
			continue
		}
		k := clockOf(e)
		d, ok := out[k]
		if !ok {
			d = dating{lo: math.MinInt64, hi: math.MaxInt64}
		}
		d.lo, d.hi = max(d.lo, e.Sent-e.At), min(d.hi, e.Time-e.At)
		out[k] = d
	}
	return out
}

// pushed says whether e is a line of a watch stream.
func pushed(e *history.Event) bool {
	return e.Type == history.Leader && e.At > 0 && e.Error == ""
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

// beliefIntervals fills the Nodes, Intervals, Watched and Slack of h's
// Beliefs, and finds the time of its latest event.
func beliefIntervals(h []history.Event, every time.Duration) (b Beliefs, end int64) {
	var (
		open []Interval // per node: its current interval...
		isOn []bool     // ...if it has one
	)
	ids := map[string]int{}
	id := func(node string) int {
		n, ok := ids[node]
		if !ok {
			n = len(b.Nodes)
			ids[node] = n
			b.Nodes = append(b.Nodes, node)
			open = append(open, Interval{})
			isOn = append(isOn, false)
		}
		return n
	}
	clocks := watchClocks(h)
	for _, d := range clocks {
		if d.steady() {
			b.Slack = max(b.Slack, d.hi-d.lo)
		}
	}
	watched := map[string]bool{}
	for i := range h {
		if pushed(&h[i]) {
			watched[h[i].Node] = true
		}
	}
	b.Watched = len(watched)
	lines := map[stream]*watchLine{}
	var order []*watchLine // lines' streams, as first heard from
	var writes []Interval  // watched nodes' writes as leader
	ops := opTracker{}
	for i := range h {
		e := &h[i]
		end = max(end, e.Time)
		inv := ops.see(h, i)
		if pushed(e) {
			k := stream{e.Node, e.Sent}
			w := lines[k]
			if w == nil {
				w = &watchLine{dating: clocks[clockOf(e)], gap: watchGap * int64(every)}
				lines[k], order = w, append(order, w)
			}
			if iv, done := w.take(h, i, id(e.Node)); done {
				b.Intervals = append(b.Intervals, iv)
			}
			continue
		}
		bel := beliefOf(h, i, inv)
		if bel == noBelief {
			continue
		}
		if watched[e.Node] {
			// A watched node's write as leader is a single proof, bridged
			// to nothing: its stream, not its writes, tells its silences.
			if bel == leads {
				asked, _ := span(h, i, inv, clocks)
				writes = append(writes, Interval{Span: Span{e.Time, e.Time}, Asked: asked, Node: id(e.Node), Token: e.Token, First: i, Last: i})
			}
			continue
		}
		n := id(e.Node)
		cur := &open[n]
		asked, _ := span(h, i, inv, clocks)
		switch {
		case bel == follows || bel == silent:
			if isOn[n] {
				b.Intervals = append(b.Intervals, *cur)
				isOn[n] = false
			}
		case isOn[n] && sameToken(cur, e.Token):
			// Answers can be recorded slightly out of time order; an
			// interval only ever grows.
			if e.Time >= cur.End {
				cur.End, cur.Last = e.Time, i
			}
			cur.Asked = max(cur.Asked, asked)
		default:
			if isOn[n] {
				b.Intervals = append(b.Intervals, *cur)
			}
			*cur = Interval{Span: Span{e.Time, e.Time}, Asked: asked, Node: n, Token: e.Token, First: i, Last: i}
			isOn[n] = true
		}
	}
	for n, on := range isOn {
		if on {
			b.Intervals = append(b.Intervals, open[n])
		}
	}
	for _, w := range order {
		if w.on {
			b.Intervals = append(b.Intervals, w.cur)
		}
	}
	b.Intervals = append(b.Intervals, unexplained(b.Intervals, writes, len(b.Nodes))...)
	return b, end
}

// unexplained are the writes that prove more than their node's pushed
// beliefs do: those that fall outside every interval in which its lines
// make its belief certain. A leader woken from a freeze that answers the
// writes queued meanwhile, and steps down a millisecond later, shows its
// belief in those writes more surely than in lines that close.
func unexplained(ivs, writes []Interval, nodes int) []Interval {
	held := make([][]Span, nodes)
	for i := range ivs {
		if s, ok := ivs[i].held(); ok {
			held[ivs[i].Node] = append(held[ivs[i].Node], s)
		}
	}
	for _, h := range held {
		slices.SortFunc(h, func(a, b Span) int { return cmp.Compare(a.Start, b.Start) })
	}
	var out []Interval
	for _, w := range writes {
		own := held[w.Node]
		// The latest span to start by the write's earliest instant is the
		// only one of the node's (which do not overlap) that can hold it.
		k, _ := slices.BinarySearchFunc(own, min(w.Asked, w.Start), func(s Span, t int64) int {
			return cmp.Or(cmp.Compare(s.Start, t), -1)
		})
		if k > 0 && own[k-1].End >= w.Start && own[k-1].Start <= min(w.Asked, w.Start) {
			continue
		}
		out = append(out, w)
	}
	return out
}

// sameToken says whether a proof with token continues iv, and takes the
// token for an interval that had none.
func sameToken(iv *Interval, token int64) bool {
	if token != iv.Token && token != 0 && iv.Token != 0 {
		return false
	}
	if iv.Token == 0 {
		iv.Token = token
	}
	return true
}

// watchLine follows one stream's lines in order.
type watchLine struct {
	dating
	gap    int64 // the longest silence between lines that the belief spans
	cur    Interval
	on     bool // cur is open
	lastAt int64
}

// take reads h[i], the stream's next line about node n, and returns the
// interval it ended, if it did.
func (w *watchLine) take(h []history.Event, i, n int) (ended Interval, done bool) {
	e := &h[i]
	early, late := w.dates(e)
	held := w.on && w.steady() && e.At-w.lastAt <= w.gap
	w.lastAt = e.At
	if held && e.IsLeader && sameToken(&w.cur, e.Token) {
		w.cur.End, w.cur.Asked, w.cur.Last = late, early, i
		return Interval{}, false
	}
	ended, done = w.cur, w.on
	w.on = e.IsLeader
	if w.on {
		w.cur = Interval{Span: Span{late, late}, Asked: early, Node: n, Token: e.Token, First: i, Last: i}
	}
	return ended, done
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
