package results

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/history"
)

// outcome is how a write ended, as the timeline draws it.
type outcome uint8

const (
	accepted outcome = iota // the node acknowledged it
	fenced                  // the resource refused the node's token
	failed                  // certainly not done: not leader, unreachable
	unsure                  // indeterminate (info): may or may not have happened
	outcomes
)

// span is a stretch of run time, in ns since the run started.
type span struct{ From, To int64 }

// bar is one node's belief that it led with one token, from its first to
// its last proof: a checkers.Interval on its lane.
type bar struct {
	span
	Node  int
	Token int64 // 0: the node never said
}

// overlap is a time in which two or more nodes believed they led.
type overlap struct {
	span
	Nodes []int
}

// fault is one nemesis fault, from its decision to its heal.
type fault struct {
	span
	Name, What string
	Nodes      []string
	Healed     bool // false: the history holds no heal; To is the end
	Err        string
}

// op is one completed client operation: all the charts need of it. Kept
// small, since a long run has hundreds of thousands.
type op struct {
	At    int64 // completion, ns
	Took  int64 // ns since the invoke
	Node  int32 // the node a write went to; -1 for reads
	Kind  outcome
	Write bool
}

// timeline is what the report draws of a history, in a form small enough
// for a million events: the checkers' beliefs on lanes, the faults and, in
// a few bytes each, the operations.
type timeline struct {
	End        int64    // the last event's time
	Nodes      []string // lanes, in natural order
	Bars       []bar    // every belief interval, by start
	Overlaps   []overlap
	Leaderless []span // times no node was proven to lead, from 0 to End
	Faults     []fault
	Ops        []op
	Events     int
}

// invoke is what a completion needs of its invoke.
type invoke struct {
	at   int64
	f    string
	node string
}

// builder folds events into a timeline.
type builder struct {
	tl      timeline
	ids     map[string]int
	invokes map[int]invoke
	faults  map[string]int // open fault by name
}

// buildTimeline draws h, a run's history in index order, with a lane for
// each of nodes and for any other node h names. Beliefs, overlaps and
// leaderless times are checkers.BeliefsOf's: those the leader-overlap
// checker judged, with the run's observe interval every.
func buildTimeline(h []history.Event, nodes []string, every time.Duration) *timeline {
	b := &builder{ids: map[string]int{}, invokes: map[int]invoke{}, faults: map[string]int{}}
	for _, n := range nodes {
		b.node(n)
	}
	for i := range h {
		b.add(&h[i])
	}
	b.believe(checkers.BeliefsOf(h, every))
	return b.finish()
}

func (b *builder) node(name string) int {
	id, ok := b.ids[name]
	if !ok {
		id = len(b.tl.Nodes)
		b.ids[name] = id
		b.tl.Nodes = append(b.tl.Nodes, name)
	}
	return id
}

// add takes one event, in the history's order.
func (b *builder) add(e *history.Event) {
	b.tl.Events++
	b.tl.End = max(b.tl.End, e.Time)
	switch e.Type {
	case history.Invoke:
		b.invokes[e.Process] = invoke{at: e.Time, f: e.F, node: e.Node}
	case history.OK, history.Fail, history.Info:
		inv, ok := b.invokes[e.Process]
		if !ok {
			return
		}
		delete(b.invokes, e.Process)
		b.complete(e, inv)
	case history.Nemesis:
		b.nemesis(e)
	}
}

// complete records an operation. A read's node is the register's writer,
// not where the read went, so only writes are drawn on a lane.
func (b *builder) complete(e *history.Event, inv invoke) {
	f := cmp.Or(e.F, inv.f)
	o := op{At: e.Time, Took: e.Time - inv.at, Node: -1, Write: f == history.Write}
	switch e.Type {
	case history.OK:
		o.Kind = accepted
	case history.Info:
		o.Kind = unsure
	default:
		o.Kind = failed
	}
	if o.Write {
		node := cmp.Or(e.Node, inv.node)
		if node != "" {
			o.Node = int32(b.node(node))
		}
		// A refusal for not leading is no fencing, whatever token it names.
		if e.Type == history.Fail && e.Error != contract.ErrNotLeader && (e.Token > 0 || e.Error == contract.ErrFenced) {
			o.Kind = fenced
		}
	}
	b.tl.Ops = append(b.tl.Ops, o)
}

// believe puts the checkers' beliefs on the builder's nodes.
func (b *builder) believe(bs checkers.Beliefs) {
	id := make([]int, len(bs.Nodes))
	for i, n := range bs.Nodes {
		id[i] = b.node(n)
	}
	for _, iv := range bs.Intervals {
		b.tl.Bars = append(b.tl.Bars, bar{span: span{iv.Start, iv.End}, Node: id[iv.Node], Token: iv.Token})
	}
	for _, o := range bs.Overlaps {
		ov := overlap{span: span{o.Start, o.End}}
		for _, iv := range o.Intervals {
			if n := id[bs.Intervals[iv].Node]; !slices.Contains(ov.Nodes, n) {
				ov.Nodes = append(ov.Nodes, n)
			}
		}
		b.tl.Overlaps = append(b.tl.Overlaps, ov)
	}
	for _, s := range bs.Leaderless {
		b.tl.Leaderless = append(b.tl.Leaderless, span{s.Start, s.End})
	}
}

func (b *builder) nemesis(e *history.Event) {
	if e.Phase == history.Inject {
		b.faults[e.F] = len(b.tl.Faults)
		b.tl.Faults = append(b.tl.Faults, fault{
			span: span{cmp.Or(e.Sent, e.Time), e.Time}, Name: e.F, What: e.Value,
			Nodes: e.Nodes, Err: e.Error,
		})
		for _, n := range e.Nodes {
			b.node(n)
		}
		return
	}
	i, ok := b.faults[e.F]
	if !ok {
		return
	}
	delete(b.faults, e.F)
	f := &b.tl.Faults[i]
	f.To, f.Healed = max(f.From, e.Time), true
	if e.Error != "" && f.Err == "" {
		f.Err = "heal: " + e.Error
	}
}

// finish closes the faults still open and puts the lanes in natural
// order.
func (b *builder) finish() *timeline {
	tl := &b.tl
	for i := range tl.Faults {
		if f := &tl.Faults[i]; !f.Healed {
			f.To = max(f.From, tl.End)
		}
	}

	// n2 before n10: shorter names first, then by name.
	order := slices.Clone(tl.Nodes)
	slices.SortFunc(order, func(a, c string) int { return cmp.Or(cmp.Compare(len(a), len(c)), strings.Compare(a, c)) })
	lane := make([]int, len(tl.Nodes))
	for i, n := range order {
		lane[b.ids[n]] = i
	}
	tl.Nodes = order
	for i := range tl.Bars {
		tl.Bars[i].Node = lane[tl.Bars[i].Node]
	}
	for _, o := range tl.Overlaps {
		for i, n := range o.Nodes {
			o.Nodes[i] = lane[n]
		}
	}
	for i := range tl.Ops {
		if n := tl.Ops[i].Node; n >= 0 {
			tl.Ops[i].Node = int32(lane[n])
		}
	}
	slices.SortFunc(tl.Bars, func(p, q bar) int { return cmp.Or(cmp.Compare(p.From, q.From), cmp.Compare(p.Node, q.Node)) })
	return tl
}
