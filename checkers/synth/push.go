package synth

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/splitbrain/splitbrain/history"
)

// view is what a node's watch tells: the token it leads with (0: it
// follows) and the leader it names (itself when it leads).
type view struct {
	token int64
	lead  string
}

// watch is the observer's watch of one node: the node's clock, and the
// stream open on it with its latest line.
type watch struct {
	node    int
	off     int64 // the node's monotonic clock reads true time + off
	boot    int64 // names the node's process, as the SDK's Boot does
	sent    int64 // when the open stream's request left the controller
	t       int64 // true time of the stream's latest line
	arrived int64 // when that line reached the controller
	v       view  // what that line said
}

// trueTime is the true time of a line this node stamped at.
func (w *watch) trueTime(at int64) int64 { return at - w.off }

// pusher plays the nodes' watches, and the observer that reads them.
type pusher struct {
	rng   *rand.Rand
	iv    int64
	names []string
	emit  func(history.Event)
	// view is a node's belief at an instant; it changes only at the
	// instants of changes, which are in ascending order.
	view    func(node int, at int64) view
	changes []int64
	// frozen is the pause a node is frozen in at an instant, if any.
	frozen func(node int, at int64) (fault, bool)
	stop   int64 // nothing is sent from then on
}

func (p *pusher) between(lo, hi int64) int64 { return lo + p.rng.Int64N(hi-lo+1) }

// hop is how long a line takes to reach the controller.
func (p *pusher) hop() int64 { return p.between(50*us, 500*us) }

// silence is how long the observer waits for a line before it gives up on
// a stream, as workloads.Observer does.
func (p *pusher) silence() int64 { return max(20*p.iv, int64(time.Second)) }

// push has every node push its beliefs for the whole run, on one stream
// unless a pause outlasts the observer's patience.
func (g *gen) push() {
	p := &pusher{
		rng: g.rng, iv: int64(g.Config.Interval), names: g.names, emit: g.emit,
		view:   g.view,
		frozen: g.pauseAt,
		stop:   g.end,
	}
	for _, t := range g.terms {
		p.changes = append(p.changes, t.start)
		if t.end < math.MaxInt64 {
			p.changes = append(p.changes, t.end)
		}
	}
	slices.Sort(p.changes)
	p.changes = slices.Compact(p.changes)
	g.watches = make([]watch, len(g.names))
	for n := range g.names {
		w := &g.watches[n]
		// The node's clock started up to two hours before the run (or
		// a moment after): its readings are positive.
		first := g.between(1, p.iv) // the observer's first request
		w.node, w.boot = n, 1+g.rng.Int64N(math.MaxInt64-1)
		w.off = g.between(1-first, 2*int64(time.Hour))
		if p.open(w, first) {
			p.follow(w, w.t+p.iv)
		}
	}
}

// view is the belief node reports at time at, as a poll would read it.
func (r *Run) view(node int, at int64) view {
	if tok := r.belief(node, at); tok > 0 {
		return view{tok, r.names[node]}
	}
	return view{0, r.leaderAt(at)}
}

// line records w's node telling v, sampled at true time t and sent no
// sooner than from; a stream delivers its lines in order.
func (p *pusher) line(w *watch, t, from int64, v view) {
	e := history.Event{
		Type: history.Leader, Node: p.names[w.node], Sent: w.sent, At: t + w.off, Boot: w.boot,
		Time: max(from+p.hop(), w.arrived),
	}
	if v.token > 0 {
		e.IsLeader, e.Token = true, v.token
	}
	e.LeaderID = v.lead
	p.emit(e)
	w.t, w.arrived, w.v = t, e.Time, v
}

// silent records the observer's giving up on node at time at.
func (p *pusher) silent(node int, at int64, why string) {
	p.emit(history.Event{Type: history.Leader, Node: p.names[node], Sent: at - p.between(us, 20*us), Time: at, Error: "no answer: " + why})
}

// open has the observer ask w's node for a watch at s, and again an
// interval after every failure, until a stream opens; its first line is a
// sample taken when the node reads the request. A frozen node reads it
// when it wakes up, which may be too late for the observer. False if the
// run stopped first.
func (p *pusher) open(w *watch, s int64) bool {
	for s < p.stop {
		t := s + p.between(100*us, ms) // the request's hop
		if f, ok := p.frozen(w.node, t); ok {
			t = f.heal
		}
		if t+50*us > s+silence*p.iv { // even the fastest answer is too late
			p.silent(w.node, s+silence*p.iv, "net/http: timeout awaiting response headers")
			s += (silence + 1) * p.iv
			continue
		}
		if t >= p.stop {
			return false
		}
		w.sent, w.arrived = s, 0
		p.line(w, t, t, p.view(w.node, t))
		return true
	}
	return false
}

// follow plays w's open stream from its latest line until the run stops:
// a beat when one is due (at due, then an interval after each line), at
// every change the old belief's last sample, 1 ms before, if it is not
// the latest line already, and the new belief's first; nothing while the
// node is frozen.
func (p *pusher) follow(w *watch, due int64) {
	k := 0 // changes[k] is the first after the latest line
	for {
		for k < len(p.changes) && p.changes[k] <= w.t {
			k++
		}
		c, nv := int64(math.MaxInt64), w.v
		for _, at := range p.changes[k:] {
			if at > due {
				break
			}
			if v := p.view(w.node, at); v != w.v {
				c, nv = at, v
				break
			}
		}
		next := min(due, c)
		if next >= p.stop {
			return
		}
		if f, ok := p.frozen(w.node, next); ok {
			if !p.wake(w, f) {
				return
			}
		} else if c > due {
			p.line(w, due, due, w.v)
		} else {
			old := c - ms
			if f, ok := p.frozen(w.node, old); ok {
				old = f.heal // the first sample after it woke up
			}
			if old > w.t && old < c {
				p.line(w, old, old, w.v)
			}
			p.line(w, c, c, nv)
		}
		due = w.t + p.iv
	}
}

// wake plays w's node waking up from pause f: its stream resumes with a
// sample taken at once, after the last sample before the freeze if the
// belief changed meanwhile, unless the observer gave up on the silent
// stream first and must open another. False if the run stopped first.
func (p *pusher) wake(w *watch, f fault) bool {
	if f.heal >= p.stop {
		return false
	}
	if cut := w.arrived + p.silence(); cut < f.heal+50*us {
		p.silent(w.node, cut, "context canceled")
		return p.open(w, cut+p.iv)
	}
	nv := p.view(w.node, f.heal)
	if last := f.at - p.between(0, ms-1); nv != w.v && last > w.t {
		p.line(w, last, f.heal, w.v)
	}
	p.line(w, f.heal, f.heal, nv)
	return true
}
