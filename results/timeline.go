package results

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"

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
// its last proof (the leader-overlap checker's intervals).
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

// timeline is what the report draws of a history, gathered in one pass so
// a million-event history never has to be held in memory as events.
type timeline struct {
	End        int64    // the last event's time
	Nodes      []string // lanes, in natural order
	Bars       []bar    // every belief interval, by start
	Overlaps   []overlap
	Leaderless []span // times no node was proven to lead, from 0 to End
	Faults     []fault
	Ops        []op
	Events     int64
	Skipped    int // lines that could not be read (a killed run's last line)
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
	open    []bar  // per node: its current belief...
	on      []bool // ...if it has one
	invokes map[int]invoke
	faults  map[string]int // open fault by name
}

func newBuilder(nodes []string) *builder {
	b := &builder{ids: map[string]int{}, invokes: map[int]invoke{}, faults: map[string]int{}}
	for _, n := range nodes {
		b.node(n)
	}
	return b
}

// readTimeline streams a history file into a timeline. A missing file is
// an empty timeline (a run that failed before its workload); unreadable
// lines are skipped and counted, so a killed run still gets its picture.
func readTimeline(path string, nodes []string) (*timeline, error) {
	b := newBuilder(nodes)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return b.finish(), nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	skipped, err := scanEvents(f, b.add)
	b.tl.Skipped = skipped
	if err != nil {
		return nil, err
	}
	return b.finish(), nil
}

// chunk is a run of history lines, decoded by one worker: line i is
// buf[ends[i-1]:ends[i]].
type chunk struct {
	buf    []byte
	ends   []int
	events []history.Event
	bad    int
	done   chan struct{}
}

const chunkLines = 4096

// scanEvents decodes a JSON-lines history and gives each event to fn, in
// the file's order. Decoding is nearly all of a report's time, so chunks of
// lines are decoded on every core while fn takes them in order; only a few
// chunks are in flight at once, so memory stays flat for any history.
// Lines that are not events, or longer than any event the harness writes,
// are counted, not fatal.
func scanEvents(r io.Reader, fn func(*history.Event)) (skipped int, err error) {
	workers := runtime.GOMAXPROCS(0)
	work := make(chan *chunk, workers)
	order := make(chan *chunk, 2*workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c := range work {
				c.events = make([]history.Event, 0, len(c.ends))
				from := 0
				for _, to := range c.ends {
					var e history.Event
					l := c.buf[from:to]
					from = to
					if json.Unmarshal(l, &e) != nil {
						c.bad++
						continue
					}
					c.events = append(c.events, e)
				}
				close(c.done)
			}
		})
	}
	var readErr error
	go func() {
		defer close(order)
		defer close(work)
		br := bufio.NewReaderSize(r, 256*1024)
		c := &chunk{done: make(chan struct{})}
		send := func() {
			work <- c
			order <- c
			// The next chunk is about as long as this one.
			c = &chunk{buf: make([]byte, 0, len(c.buf)), ends: make([]int, 0, chunkLines), done: make(chan struct{})}
		}
		for {
			line, err := br.ReadSlice('\n')
			for errors.Is(err, bufio.ErrBufferFull) { // no event is this long
				c.bad++
				_, err = br.ReadSlice('\n')
				line = nil
			}
			if line = bytes.TrimSpace(line); len(line) > 0 {
				c.buf = append(c.buf, line...)
				c.ends = append(c.ends, len(c.buf))
			}
			if err != nil {
				if err != io.EOF {
					readErr = err
				}
				send()
				return
			}
			if len(c.ends) == chunkLines {
				send()
			}
		}
	}()
	for c := range order {
		<-c.done
		skipped += c.bad
		for i := range c.events {
			fn(&c.events[i])
		}
	}
	wg.Wait()
	return skipped, readErr
}

func (b *builder) node(name string) int {
	id, ok := b.ids[name]
	if !ok {
		id = len(b.tl.Nodes)
		b.ids[name] = id
		b.tl.Nodes = append(b.tl.Nodes, name)
		b.open = append(b.open, bar{})
		b.on = append(b.on, false)
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
	case history.Leader:
		switch {
		case e.Error != "":
			b.follow(e.Node) // silence proves nothing: the belief ends here
		case e.IsLeader:
			b.lead(e.Node, e.Token, e.Time)
		default:
			b.follow(e.Node)
		}
	case history.Nemesis:
		b.nemesis(e)
	}
}

// complete records an operation and what a write proves about its node's
// belief: acknowledged or refused by the fence, it wrote as leader; refused
// as not leader, it followed. A read's node is the register's writer, not a
// belief, and an indeterminate write proves nothing.
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
		notLeader := strings.Contains(e.Error, "not-leader")
		if e.Type == history.Fail && !notLeader && (e.Token > 0 || strings.Contains(e.Error, "fenced")) {
			o.Kind = fenced
		}
		switch {
		case node == "":
		case o.Kind == accepted || o.Kind == fenced:
			b.lead(node, e.Token, e.Time)
		case notLeader:
			b.follow(node)
		}
	}
	b.tl.Ops = append(b.tl.Ops, o)
}

// lead extends the node's belief, or starts a new one when the token
// changes. A token of 0 (not told) is taken as the one the belief has.
func (b *builder) lead(name string, token, at int64) {
	id := b.node(name)
	cur := &b.open[id]
	if b.on[id] && (token == cur.Token || token == 0 || cur.Token == 0) {
		cur.Token = cmp.Or(cur.Token, token)
		cur.To = max(cur.To, at) // answers can be recorded slightly out of order
		return
	}
	b.follow(name)
	*cur = bar{span: span{at, at}, Node: id, Token: token}
	b.on[id] = true
}

func (b *builder) follow(name string) {
	id := b.node(name)
	if b.on[id] {
		b.tl.Bars = append(b.tl.Bars, b.open[id])
		b.on[id] = false
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

// finish closes what is open, puts the lanes in natural order and derives
// overlaps and leaderless times.
func (b *builder) finish() *timeline {
	tl := &b.tl
	for id, on := range b.on {
		if on {
			tl.Bars = append(tl.Bars, b.open[id])
		}
	}
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
	for i := range tl.Ops {
		if n := tl.Ops[i].Node; n >= 0 {
			tl.Ops[i].Node = int32(lane[n])
		}
	}
	slices.SortFunc(tl.Bars, func(p, q bar) int { return cmp.Or(cmp.Compare(p.From, q.From), cmp.Compare(p.Node, q.Node)) })
	tl.Overlaps, tl.Leaderless = sweep(tl.Bars, len(tl.Nodes), tl.End)
	return tl
}

// sweep walks the bars' ends in time order and returns the windows in
// which bars of two or more nodes are open, and the gaps in which none is.
// At equal times starts come first, so a proof inside another node's bar
// is an overlap of no length, as the leader-overlap checker counts it.
func sweep(bars []bar, nodes int, end int64) ([]overlap, []span) {
	const opens, closes = 0, 1 // the order of edges at equal times
	type edge struct {
		at   int64
		kind int
		node int
	}
	edges := make([]edge, 0, 2*len(bars))
	for _, br := range bars {
		edges = append(edges, edge{br.From, opens, br.Node}, edge{br.To, closes, br.Node})
	}
	slices.SortFunc(edges, func(a, c edge) int { return cmp.Or(cmp.Compare(a.at, c.at), cmp.Compare(a.kind, c.kind)) })
	var (
		overlaps []overlap
		gaps     []span
		open     = make([]int, nodes)
		active   int
		cur      overlap
		idleFrom int64 // start of the current gap, while active == 0
	)
	for _, ed := range edges {
		if ed.kind == closes {
			if open[ed.node]--; open[ed.node] == 0 {
				active--
			}
			switch active {
			case 1:
				if cur.Nodes != nil {
					cur.To = ed.at
					overlaps = append(overlaps, cur)
					cur = overlap{}
				}
			case 0:
				idleFrom = ed.at
			}
			continue
		}
		if open[ed.node] == 0 {
			if active == 0 && ed.at > idleFrom {
				gaps = append(gaps, span{idleFrom, ed.at})
			}
			active++
		}
		open[ed.node]++
		switch {
		case cur.Nodes != nil:
			if !slices.Contains(cur.Nodes, ed.node) {
				cur.Nodes = append(cur.Nodes, ed.node)
			}
		case active >= 2:
			cur = overlap{span: span{From: ed.at}}
			for n, k := range open {
				if k > 0 {
					cur.Nodes = append(cur.Nodes, n)
				}
			}
		}
	}
	if active == 0 && end > idleFrom {
		gaps = append(gaps, span{idleFrom, end})
	}
	return overlaps, gaps
}
