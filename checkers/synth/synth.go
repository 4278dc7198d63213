// Package synth generates realistic histories of any size from a reference model, and plants known violations in them.
//
// The model is a timeline of leaderships, each ended by a fault on its
// leader; every node is polled for its belief (or, with Config.Push,
// pushes it on a watch stream, as nodes that serve GET /leader/watch do),
// and client processes read and write a strict fenced resource through
// the nodes. Operations take effect at a linearization point inside their
// invoke and completion, in the order a real resource would decide them,
// so a generated run is correct for every checker: no duplicate or
// regressing token, overlaps within Config.Bound (none at all in a pushed
// run with Overlap 0), no stale token accepted, linearizable, and a single
// leader soon after the final heal.
//
// The package depends on history only, so the checkers' own tests can use it.
package synth

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/history"
)

// Config shapes a run. Start from Default: every field must be set.
type Config struct {
	Seed uint64
	// Events is about how many events the history holds: the run lasts as
	// long as its nodes and clients take to produce them.
	Events    int
	Nodes     int
	Keys      int
	Processes int     // concurrent client processes (the CLI's --concurrency)
	Rate      float64 // client operations per second, all processes together
	ReadShare float64
	// InfoShare is the share of writes whose answer is lost: they end info,
	// and half of them never reached the node.
	InfoShare float64
	// Term is the mean length of a leadership. Each ends with a fault on its
	// leader: a partition (the leader answers polls and steps down on its
	// own) or a pause (it is silent, and wakes up still believing it leads).
	Term time.Duration
	// Overlap is the longest an old leader believes it leads after its
	// successor was elected (or after it wakes up from a pause).
	Overlap time.Duration
	// Gap is the longest election: from the fault to the new leader. An old
	// leader that steps down before leaves the cluster leaderless.
	Gap time.Duration
	// Interval is how often every node is polled for its belief, or, with
	// Push, how often it pushes a belief that has not changed (a beat).
	Interval time.Duration
	// OpTimeout is when a client gives up on an operation: it ends info.
	OpTimeout time.Duration
	// Bound is the overlap the target promises (overlap-bound); it must
	// exceed Overlap by an observation interval, for overlap is measured
	// from proofs that arrive a little late.
	Bound time.Duration
	// Recovery is the recovery timeout the run is judged by: an injected
	// NoRecovery stays leaderless longer than that after its heal.
	Recovery time.Duration
	// Push has every node push its beliefs on a watch stream instead of
	// being polled: a line at once, one every Interval while its belief
	// holds, and at every change the last sample of the old belief and
	// the first of the new, 1 ms apart, each stamped on the node's own
	// monotonic clock. A frozen node sends nothing; the observer gives up
	// on a stream silent for 20 intervals or a second, whichever is
	// longer, and opens another (workloads.Observer). A partitioned
	// leader that steps down before its successor is elected does so at
	// least 3 ms before, so with Overlap 0 no two nodes ever lead at once,
	// clearly more than the lines' dating apart, and the run keeps an
	// exclusive promise.
	Push bool
}

// Default is a run like the CLI's defaults: 5 nodes, 10 processes asking
// 100 operations a second on 5 keys, a quarter of them reads, every node
// polled every 50 ms (not pushed), and a new leader every 5 s or so: about
// 300 events a second.
func Default() Config {
	return Config{
		Seed:      1,
		Events:    10_000,
		Nodes:     5,
		Keys:      5,
		Processes: 10,
		Rate:      100,
		ReadShare: 0.25,
		InfoShare: 0.02,
		Term:      5 * time.Second,
		Overlap:   300 * time.Millisecond,
		Gap:       500 * time.Millisecond,
		Interval:  50 * time.Millisecond,
		OpTimeout: time.Second,
		Bound:     time.Second,
		Recovery:  30 * time.Second,
	}
}

func (c Config) validate() error {
	switch {
	case c.Events < 1:
		return fmt.Errorf("synth: Events must be positive, not %d", c.Events)
	case c.Nodes < 2:
		return fmt.Errorf("synth: a leader change needs at least 2 nodes, not %d", c.Nodes)
	case c.Keys < 1 || c.Processes < 1:
		return fmt.Errorf("synth: Keys and Processes must be positive, not %d and %d", c.Keys, c.Processes)
	case !(c.Rate > 0):
		return fmt.Errorf("synth: Rate must be positive, not %g", c.Rate)
	case !(c.ReadShare >= 0 && c.ReadShare <= 1 && c.InfoShare >= 0 && c.InfoShare <= 1):
		return fmt.Errorf("synth: shares are between 0 and 1, not %g and %g", c.ReadShare, c.InfoShare)
	case c.Term <= 0 || c.Gap <= 0 || c.Overlap < 0 || c.Interval <= 0 || c.Recovery <= 0:
		return errors.New("synth: Term, Gap, Interval and Recovery must be positive, Overlap not negative")
	case c.OpTimeout < 10*time.Millisecond:
		return fmt.Errorf("synth: OpTimeout must be at least 10ms (longer than any answer), not %v", c.OpTimeout)
	case c.Bound < c.Overlap+c.Interval:
		return fmt.Errorf("synth: Bound %v must be at least Overlap + Interval (%v)", c.Bound, c.Overlap+c.Interval)
	}
	return nil
}

// Run is a generated run: its history and resource log, and the model
// behind them, which Inject uses to place a violation.
type Run struct {
	History  []history.Event    // in time order; Index is the position
	Resource []history.Decision // in seq order
	Config   Config

	names    []string
	watches  []watch  // per node, with Push: its clock and open stream at the end
	terms    []term   // in start order; each but the last ends with faults[k]
	byNode   [][]term // the same, per node
	faults   []fault  // in time order, never two at once
	end      int64    // when the clients and the observer stopped
	injected bool
}

// term is one leadership: node believes it leads with token in [start, end).
type term struct {
	node       int
	token      int64
	start, end int64
}

// fault ends a leadership: node is paused or partitioned from its peers
// from at until heal.
type fault struct {
	node     int
	pause    bool
	at, heal int64
}

const (
	us = int64(time.Microsecond)
	ms = int64(time.Millisecond)
	// quiet is how long the run goes on after the final heal, so that
	// recovery is there to see.
	quiet = int64(2 * time.Second)
	// silence is how long the observer waits for an answer (4 intervals).
	silence = 4
)

// gen holds what Generate builds.
type gen struct {
	*Run
	rng  *rand.Rand
	keys []string
	ops  []op
	evs  []history.Event // in creation order
}

// op is one client operation. node is -1 for a read.
type op struct {
	invoke, at, done int64 // at: when it took effect (a write: the resource decided)
	proc, key, node  int
	value            string // a write's value; a read's result
	lost             bool   // the client got no answer: it ends info
	dropped          bool   // a lost write that never reached the node
	// Outcome, from the resource in order of at.
	leads    bool // a write: its node believed it led at `at`
	accepted bool
	token    int64
	seq      int64
	owner    string // a read: the node that wrote what it returned
}

// Generate builds a run from cfg. The same Config gives the same run.
func Generate(cfg Config) (*Run, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	g := &gen{
		Run: &Run{Config: cfg},
		rng: rand.New(rand.NewPCG(cfg.Seed, 0x5b1a17)),
		evs: make([]history.Event, 0, cfg.Events+cfg.Events/8),
	}
	for i := range cfg.Nodes {
		g.names = append(g.names, "n"+strconv.Itoa(i+1))
	}
	for i := range cfg.Keys {
		g.keys = append(g.keys, "k"+strconv.Itoa(i))
	}
	// A process's cycle: a pause, the operation's two hops, and the timeout
	// of the writes that end info.
	cycle := float64(cfg.Processes)/cfg.Rate + 0.002 + (1-cfg.ReadShare)*cfg.InfoShare*cfg.OpTimeout.Seconds()
	perSecond := float64(cfg.Nodes)/cfg.Interval.Seconds() + 2*float64(cfg.Processes)/cycle
	g.end = int64(float64(cfg.Events) / perSecond * 1e9)
	g.timeline()
	if cfg.Push {
		g.push()
	} else {
		g.observe()
	}
	g.nemesis()
	g.clients()
	g.resource()
	g.emitOps()
	g.History = sortByTime(g.evs)
	return g.Run, nil
}

// between draws uniformly from [lo, hi].
func (g *gen) between(lo, hi int64) int64 { return lo + g.rng.Int64N(hi-lo+1) }

// latency is one hop of a request or an answer.
func (g *gen) latency() int64 { return g.between(100*us, 2*ms) }

func (g *gen) emit(e history.Event) { g.evs = append(g.evs, e) }

// timeline draws the leaderships and the faults that end them.
func (g *gen) timeline() {
	c := g.Config
	start := g.between(200*ms, 500*ms) // the first election
	g.end = max(g.end, start+quiet)
	node, token := g.rng.IntN(c.Nodes), int64(1)
	earliest := start // the next fault comes no sooner
	for {
		at := max(start+g.between(int64(c.Term)/2, int64(c.Term)*3/2), earliest)
		elect := g.between(int64(c.Gap)/4, int64(c.Gap))
		next := at + elect
		f := fault{node: node, at: at, pause: g.rng.IntN(3) == 0}
		var end int64
		if f.pause {
			// Frozen, the old leader cannot step down: it wakes up still
			// leading, until it hears of the new term.
			f.heal = next + g.between(200*ms, int64(time.Second))
			end = f.heal + g.between(0, int64(c.Overlap))
		} else {
			// Cut off from its peers, it steps down on its own, before its
			// successor is elected (a leaderless gap) or after (an overlap);
			// the heal comes later, or it would hear of the new term at once.
			end = next + g.between(-elect, int64(c.Overlap))
			if c.Push && end > next-3*ms && end <= next {
				// Pushed lines date a handover to within a millisecond or
				// so: a leader that steps down first does so clearly first.
				end = max(f.at, next-3*ms)
			}
			f.heal = max(next, end) + g.between(200*ms, int64(time.Second))
		}
		if max(f.heal, end)+quiet > g.end {
			break
		}
		g.terms = append(g.terms, term{node, token, start, end})
		g.faults = append(g.faults, f)
		earliest = max(f.heal, end) + 4*int64(c.Interval)
		node = (node + 1 + g.rng.IntN(c.Nodes-1)) % c.Nodes
		token += 1 + int64(g.rng.IntN(2)) // a failed election round skips a term
		start = next
	}
	g.terms = append(g.terms, term{node, token, start, math.MaxInt64})
	g.byNode = make([][]term, c.Nodes)
	for _, t := range g.terms {
		g.byNode[t.node] = append(g.byNode[t.node], t)
	}
}

// belief is the token node leads with at time at, 0 if it does not lead.
func (r *Run) belief(node int, at int64) int64 {
	ts := r.byNode[node]
	i := sort.Search(len(ts), func(i int) bool { return ts[i].start > at }) - 1
	if i >= 0 && at < ts[i].end {
		return ts[i].token
	}
	return 0
}

// leaderAt is the newest leader at time at ("" for none): what a follower
// names as its leader.
func (r *Run) leaderAt(at int64) string {
	if k := r.termAt(at); k >= 0 && at < r.terms[k].end {
		return r.names[r.terms[k].node]
	}
	return ""
}

// termAt is the last term begun by time at, -1 before the first.
func (r *Run) termAt(at int64) int {
	return sort.Search(len(r.terms), func(i int) bool { return r.terms[i].start > at }) - 1
}

// paused says whether node is frozen at time at, and until when.
func (r *Run) paused(node int, at int64) (int64, bool) {
	f, ok := r.pauseAt(node, at)
	return f.heal, ok
}

// pauseAt is the pause node is frozen in at time at, if it is.
func (r *Run) pauseAt(node int, at int64) (fault, bool) {
	i := sort.Search(len(r.faults), func(i int) bool { return r.faults[i].at > at }) - 1
	if i >= 0 {
		if f := r.faults[i]; f.pause && f.node == node && at < f.heal {
			return f, true
		}
	}
	return fault{}, false
}

// observe polls every node like the observer: every interval, or at once
// when the previous poll took longer; a frozen node answers when it wakes
// up, or the poll times out.
func (g *gen) observe() {
	iv := int64(g.Config.Interval)
	for n, name := range g.names {
		tick := g.between(0, iv-1)
		var prev int64 // when the previous answer came
		for tick < g.end {
			sent := max(tick, prev) + g.between(0, 200*us)
			e := history.Event{Type: history.Leader, Node: name, Sent: sent}
			from, lat := sent, g.latency()
			if heal, ok := g.paused(n, sent+lat); ok {
				from = heal
			}
			if from+lat > sent+silence*iv {
				e.Time, e.Error = sent+silence*iv, "no answer: timeout"
			} else {
				e.Time = from + lat
				at := from + lat/2 // the belief is read between Sent and Time
				if tok := g.belief(n, at); tok > 0 {
					e.IsLeader, e.Token, e.LeaderID = true, tok, name
				} else {
					e.LeaderID = g.leaderAt(at)
				}
			}
			g.emit(e)
			prev = e.Time
			// A ticker keeps one tick for a slow reader and drops the rest.
			for tick += iv; tick+iv <= prev; {
				tick += iv
			}
		}
	}
}

// nemesis records each fault's injection and heal.
func (g *gen) nemesis() {
	for _, f := range g.faults {
		name := g.names[f.node]
		kind, what := "partition", "isolate "+name+" from its peers"
		if f.pause {
			kind, what = "pause", "pause "+name
		}
		nodes := []string{name}
		g.emit(history.Event{Type: history.Nemesis, F: kind, Phase: history.Inject, Nodes: nodes, Value: what, Sent: f.at - g.between(5*ms, 25*ms), Time: f.at})
		g.emit(history.Event{Type: history.Nemesis, F: kind, Phase: history.Heal, Nodes: nodes, Value: what, Sent: f.heal - g.between(5*ms, 25*ms), Time: f.heal})
	}
}

// clients draws every process's operations and when they take effect.
// A process does one operation at a time; after an info it takes a new
// number, as Jepsen's do.
func (g *gen) clients() {
	c := g.Config
	think := int64(float64(c.Processes) / c.Rate * 1e9) // the mean pause that makes Rate
	timeout := int64(c.OpTimeout)
	for slot := range c.Processes {
		proc, n := slot+1, 0
		for t := g.between(0, 2*think); t < g.end-timeout; {
			n++
			o := op{invoke: t, proc: proc, key: g.rng.IntN(c.Keys), node: -1}
			o.at = t + g.latency()
			o.done = o.at + g.latency()
			if g.rng.Float64() >= c.ReadShare {
				o.node = g.rng.IntN(c.Nodes)
				o.value = "p" + strconv.Itoa(proc) + "-" + strconv.Itoa(n)
				if heal, ok := g.paused(o.node, o.at); ok {
					// A frozen node takes the request when it wakes up, and
					// writes even if the client gave up on it meanwhile.
					o.at = heal + g.latency()
					o.done = o.at + g.latency()
				}
				if g.rng.Float64() < c.InfoShare {
					o.lost, o.dropped = true, g.rng.IntN(2) == 0
				}
				if o.lost || o.done > t+timeout {
					o.lost, o.done = true, t+timeout
				}
			}
			g.ops = append(g.ops, o)
			if o.lost {
				proc += c.Processes
			}
			t = o.done + g.between(us, 2*think)
		}
	}
}

// resource applies the operations to a strict fenced resource in the
// order they took effect.
func (g *gen) resource() {
	order := make([]int32, len(g.ops))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Or(cmp.Compare(g.ops[a].at, g.ops[b].at), cmp.Compare(a, b)) })
	regs := make([]op, len(g.keys)) // per key: the write it holds
	var seq int64
	for _, i := range order {
		o := &g.ops[i]
		reg := &regs[o.key]
		if o.node < 0 {
			o.value, o.token, o.seq, o.owner = reg.value, reg.token, reg.seq, reg.owner
			continue
		}
		if o.dropped {
			continue
		}
		o.token = g.belief(o.node, o.at)
		if o.leads = o.token > 0; !o.leads {
			continue // the node refuses: not-leader
		}
		seq++
		o.seq = seq
		// The register's token is the highest accepted: strict acceptance
		// never lowers it.
		o.accepted = o.token >= reg.token
		g.Resource = append(g.Resource, history.Decision{
			Seq: seq, Key: g.keys[o.key], Value: o.value, Token: o.token, Node: g.names[o.node],
			Accepted: o.accepted, Highest: reg.token, Mode: "strict",
		})
		if o.accepted {
			*reg = op{value: o.value, token: o.token, seq: seq, owner: g.names[o.node]}
		}
	}
}

// emitOps records each operation's invoke and completion.
func (g *gen) emitOps() {
	for i := range g.ops {
		o := &g.ops[i]
		inv := history.Event{Type: history.Invoke, Time: o.invoke, Process: o.proc, F: history.Read, Key: g.keys[o.key]}
		done := history.Event{Type: history.OK, Time: o.done, Process: o.proc, F: history.Read, Key: inv.Key}
		if o.node < 0 {
			done.Value, done.Token, done.Node, done.Seq = o.value, o.token, o.owner, o.seq
		} else {
			node := g.names[o.node]
			inv.F, inv.Value, inv.Node = history.Write, o.value, node
			done.F, done.Value, done.Node = history.Write, o.value, node
			switch {
			case o.lost:
				done.Type, done.Error = history.Info, "timeout"
			case !o.leads:
				done.Type, done.Error = history.Fail, contract.ErrNotLeader
			case o.accepted:
				done.Token, done.Seq = o.token, o.seq
			default:
				done.Type, done.Token, done.Error = history.Fail, o.token, contract.ErrFenced
			}
		}
		g.emit(inv)
		g.emit(done)
	}
}

// sortByTime orders events by time, then creation, and numbers them.
func sortByTime(evs []history.Event) []history.Event {
	// Sorting small keys, not the events, keeps the sort in cache.
	type key struct {
		time int64
		pos  int
	}
	keys := make([]key, len(evs))
	for i := range evs {
		keys[i] = key{evs[i].Time, i}
	}
	slices.SortFunc(keys, func(a, b key) int { return cmp.Or(cmp.Compare(a.time, b.time), cmp.Compare(a.pos, b.pos)) })
	out := make([]history.Event, len(evs))
	for i, k := range keys {
		out[i] = evs[k.pos]
		out[i].Index = int64(i)
	}
	return out
}
