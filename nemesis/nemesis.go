// Package nemesis injects and heals faults on a seeded schedule, paced by the cluster or by a clock, aimed at the leader or at any nodes, and records each one.
package nemesis

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/history"
)

// Cluster is what faults act on. The harness implements it over Docker.
type Cluster interface {
	Nodes() []string
	// Services names the target's service containers, which Kill,
	// Restart, Pause and Resume take as well as nodes.
	Services() []string
	// SkewableServices are the service containers whose clocks SetClock
	// can skew.
	SkewableServices() []string
	// ServiceClusters are the target's services, each with its members.
	ServiceClusters() []ServiceCluster
	// ServiceLeader is the member that leads service now, asked the way
	// the target's manifest says; "" when it names no way or none answers.
	ServiceLeader(ctx context.Context, service string) string
	// Zones is how many zones the target's containers are spread over.
	Zones() int
	// Leader is the node currently believed to lead, "" if none is known.
	Leader() string
	// View is every node's recent belief, which paces the faults.
	View() View
	Kill(ctx context.Context, node string) error
	Restart(ctx context.Context, node string) error
	Pause(ctx context.Context, node string) error
	Resume(ctx context.Context, node string) error
	// Processes are the command names of the processes of container
	// name (a node or a service member) that its manifest lets a fault
	// stop.
	Processes(name string) []string
	// StopProcess sends SIGSTOP to every process named comm in container
	// name, and ContinueProcess SIGCONT; none named so is an error.
	StopProcess(ctx context.Context, name, comm string) error
	ContinueProcess(ctx context.Context, name, comm string) error
	// Stop stops a node as a deploy does, with its manifest's stop
	// signal (a service member with SIGTERM) and a kill after a grace,
	// and returns once it is gone; Restart starts it again.
	Stop(ctx context.Context, node string) error
	// Data are the data directories of container name (a node or a
	// service member) that disk faults reach; none for a member whose
	// service declares none.
	Data(name string) []string
	// SetDisk puts the data directories of node (or service member) in
	// disk state d; the zero Disk heals.
	SetDisk(ctx context.Context, node string, d Disk) error
	// PowerCut kills node as a power cut does: what it wrote and had not
	// synced is lost; Restart starts it again.
	PowerCut(ctx context.Context, node string) error
	// WaitHealthy waits until node answers GET /health with 200, or a
	// service member is ready as its manifest says.
	WaitHealthy(ctx context.Context, node string) error
	// Partition replaces the packet-filter rules of every container with
	// a filter (the nodes, and service members of their own in a run whose
	// faults cut them) by g; an empty grudge heals.
	Partition(ctx context.Context, g Grudge) error
	// SetClock sets node's clock skew; the zero Skew heals.
	SetClock(ctx context.Context, node string, s contract.Skew) error
	// Impair replaces the impairment of every link by how on the links
	// of g (a Grudge read as links: g[n].All are the containers whose
	// links with node n are impaired, both ways); an empty g heals.
	Impair(ctx context.Context, g Grudge, how Impairment) error
}

// Applied is a fault in effect.
type Applied struct {
	Nodes []string
	What  string                          // in words, for the history and the report
	Heal  func(ctx context.Context) error // undoes it
	// Toggles carries, for a fault that cuts and heals over and over while
	// in effect (a flap), each of its own heals and cuts after the first
	// cut, for the history; it is closed by the time Heal returns.
	Toggles <-chan Toggle
}

// A Toggle is one of a lasting fault's own cuts or heals: begun at Sent,
// done when sent on Applied.Toggles.
type Toggle struct {
	Cut  bool
	What string
	Sent time.Time
	Err  error
}

// Nemesis carries out a schedule: it injects each fault and heals it, and
// records both in the history.
type Nemesis struct {
	schedule Schedule
	faults   map[string]Fault
	rng      *rand.Rand // aims the faults: which node is "one", which half...
	cluster  Cluster
	rec      *history.Recorder

	// Failed, when set, hears of every fault that could not be applied or
	// healed: a run must not claim a fault that did not happen as planned.
	Failed func(error)
	// Taken, when set, hears the explicit schedule of what was done so
	// far each time a fault is struck or healed, so that a run killed
	// half-way still tells what it did.
	Taken func(Explicit)

	// spent closes once a schedule bounded by its faults is over: see
	// Spent.
	spent chan struct{}

	mu     sync.Mutex
	active []active
	taken  Explicit
	// telling keeps Taken's calls one at a time, each with the schedule
	// as it stood when it began: the run's end heals while the nemesis
	// may still be striking, and a file written last must be the newest.
	telling sync.Mutex
}

type active struct {
	fault   string
	applied Applied
	strike  int           // its index in taken
	toggled chan struct{} // closed once its Toggles are written down; nil without
}

// New returns a nemesis that follows s; faults holds every fault s names.
func New(s Schedule, faults []Fault, seed uint64, c Cluster, rec *history.Recorder) *Nemesis {
	byName := map[string]Fault{}
	for _, f := range faults {
		byName[f.Name] = f
	}
	return &Nemesis{schedule: s, faults: byName, rng: rand.New(rand.NewPCG(seed, 0x4e454d)), cluster: c, rec: rec, spent: make(chan struct{})}
}

// Spent is closed once a schedule bounded by its faults (Schedule.Steady)
// is over: every fault struck and healed, and the cluster steady after
// the last for Schedule.Steady. It never closes for another schedule.
func (n *Nemesis) Spent() <-chan struct{} { return n.spent }

// Healed counts the faults struck and healed so far.
func (n *Nemesis) Healed() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	healed := 0
	for _, f := range n.taken.Faults {
		if f.For > 0 {
			healed++
		}
	}
	return healed
}

// Run follows the schedule until it ends or ctx does, then heals whatever
// is still in effect. An error injecting a fault is recorded, and the
// schedule goes on.
func (n *Nemesis) Run(ctx context.Context) {
	defer n.HealAll()
	switch {
	case n.schedule.Explicit != nil:
		n.runExplicit(ctx)
	case n.schedule.Pace != nil:
		n.runPaced(ctx)
	default:
		n.runFixed(ctx)
	}
	if n.schedule.Steady > 0 && n.settle(ctx, n.schedule.Steady) {
		close(n.spent)
	}
	<-ctx.Done()
}

// settle waits until the cluster has been Steady for d, and says whether
// it was before ctx ended.
func (n *Nemesis) settle(ctx context.Context, d time.Duration) bool {
	var steady Steady
	return n.watch(ctx, func(now time.Time, v View) bool { return steady.Step(now, v) >= d })
}

// hold waits until the fault h follows may be healed, and says whether it
// was before ctx ended.
func (n *Nemesis) hold(ctx context.Context, h holding) bool { return n.watch(ctx, h.over) }

// watch looks at the cluster every paceTick until done says so, and says
// whether that was before ctx ended.
func (n *Nemesis) watch(ctx context.Context, done func(time.Time, View) bool) bool {
	t := time.NewTicker(paceTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
		if ctx.Err() == nil && done(time.Now(), n.view()) {
			return true
		}
	}
}

// view is the cluster's view with every node it does not name Unseen:
// a node down, frozen or not yet back leaves the cluster unsteady.
func (n *Nemesis) view() View {
	v := maps.Clone(n.cluster.View())
	if v == nil {
		v = View{}
	}
	for _, node := range n.cluster.Nodes() {
		if _, ok := v[node]; !ok {
			v[node] = Unseen
		}
	}
	return v
}

// healTimeout bounds an injection or the heal of a fault on one node,
// neither of which the run's end cuts short. A minute, as a container's
// start is given (harness.Docker.Start): a cold make test at a load of 20
// on fuse-overlayfs saw the Engine take over 30 s to start a killed node
// again, and the heal given up then failed three runs as the harness's.
const healTimeout = time.Minute

// healEach is what the heal of a fault is given for each further node it
// struck: restarted nodes get their sidecars back one node at a time, and
// a loaded daemon takes seconds for each (a CI run's kill-all of five
// nodes was cut at 30 s, its last two packet filters still restarting).
const healEach = 15 * time.Second

// healBudget bounds the heal of a fault that struck nodes.
func healBudget(nodes []string) time.Duration {
	return healTimeout + time.Duration(max(len(nodes)-1, 0))*healEach
}

// paceTick is how often a paced nemesis looks at the cluster: well under
// the observer's interval, so that a view is acted on as it changes.
const paceTick = 10 * time.Millisecond

// runPaced strikes and heals as a Pacer says, until the last fault is
// healed.
func (n *Nemesis) runPaced(ctx context.Context) {
	pacer := NewPacer(*n.schedule.Pace, time.Now())
	t := time.NewTicker(paceTick)
	defer t.Stop()
	faults := n.schedule.Faults
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if ctx.Err() != nil {
			return // both were ready: the run's end wins
		}
		// The view first, then the time: every observation in the view
		// is then no later than the moment the pacer is told, so a
		// leader's settle is counted from no earlier than it was seen.
		view := n.view()
		switch pacer.Step(time.Now(), view) {
		case Strike:
			if len(faults) == 0 {
				return
			}
			f := n.faults[faults[0]]
			faults = faults[1:]
			hold := n.schedule.Pace.holdOf(f)
			n.inject(ctx, f, n.rng.Uint64(), untilOf(hold, n.schedule.Pace.React))
			pacer.Struck(time.Now(), hold)
		case Heal:
			n.HealAll()
			pacer.Healed(time.Now())
			if len(faults) == 0 {
				return
			}
		}
	}
}

// runFixed follows the schedule's timed steps.
func (n *Nemesis) runFixed(ctx context.Context) {
	for _, step := range n.schedule.Steps {
		if !n.sleepUntil(ctx, step.At) {
			return
		}
		if step.Heal {
			// Not with ctx: a heal under way when the run ends must not
			// be cut short, or its fault would stay in effect.
			n.HealAll()
		} else {
			n.inject(ctx, n.faults[step.Fault], n.rng.Uint64(), nil)
		}
	}
}

// runExplicit strikes and heals each fault of the explicit schedule at
// its times, aimed as written down; one with a hold Until is healed when
// the cluster's reaction says, and the next waits for that heal.
func (n *Nemesis) runExplicit(ctx context.Context) {
	for _, s := range n.schedule.Explicit.Faults {
		if !n.sleepUntil(ctx, dur(s.At)) {
			return
		}
		before := n.view().leaders()
		n.inject(ctx, n.faults[s.Fault], s.Aim, s.Until)
		switch {
		case s.Until != nil:
			if !n.hold(ctx, s.Until.holding(time.Now(), before)) {
				return
			}
		case s.For == 0:
			return // held until the run's end
		case !n.sleepUntil(ctx, dur(s.At+s.For)):
			return
		}
		n.HealAll()
	}
}

// sleepUntil waits until run time at, and says whether the run goes on.
func (n *Nemesis) sleepUntil(ctx context.Context, at time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(at - time.Duration(n.rec.Now())):
	}
	return ctx.Err() == nil
}

// aimStream is the PCG stream of a fault's own choices, seeded by its aim.
const aimStream = 0x41494d // "AIM"

// inject strikes f, its choices seeded by aim, and writes it down with
// the hold that will heal it (nil: a fixed time).
func (n *Nemesis) inject(ctx context.Context, f Fault, aim uint64, until *Until) {
	// Not cut short by the run's end: a kill the client gave up on may
	// still be carried out by the daemon after the heal that was to undo
	// it, and leave the node down for good. A fault begun is finished,
	// then healed.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), healTimeout)
	defer cancel()
	sent := n.rec.Now()
	a, err := f.inject(ctx, n.cluster, rand.New(rand.NewPCG(aim, aimStream)))
	e := history.Event{Type: history.Nemesis, F: f.Name, Phase: history.Inject, Nodes: a.Nodes, Value: a.What, Sent: sent}
	if err != nil {
		e.Error = err.Error()
		n.failed("applied", f.Name, err)
	}
	n.rec.Record(e)
	var toggled chan struct{}
	if a.Toggles != nil {
		toggled = make(chan struct{})
		go n.recordToggles(f.Name, a, toggled)
	}
	// A fault that failed half-way may still be half in effect: keep its
	// heal so that the end of the run undoes it.
	n.mu.Lock()
	n.taken.Faults = append(n.taken.Faults, Timed{At: seconds(time.Duration(sent)), Fault: f.Name, Aim: aim, Nodes: a.Nodes, Until: until})
	if a.Heal != nil {
		n.active = append(n.active, active{fault: f.Name, applied: a, strike: len(n.taken.Faults) - 1, toggled: toggled})
	}
	n.mu.Unlock()
	n.tell()
}

// recordToggles writes each of a lasting fault's own cuts and heals down as
// an injection and a heal of its name, so that the checkers and the
// report see every cut, then closes done.
func (n *Nemesis) recordToggles(fault string, a Applied, done chan<- struct{}) {
	defer close(done)
	for st := range a.Toggles {
		phase := history.Heal
		if st.Cut {
			phase = history.Inject
		}
		e := history.Event{Type: history.Nemesis, F: fault, Phase: phase, Nodes: a.Nodes, Value: st.What, Sent: n.rec.Now() - int64(time.Since(st.Sent))}
		if st.Err != nil {
			e.Error = st.Err.Error()
		}
		n.rec.Record(e)
	}
}

// tell hands Taken what was done so far.
func (n *Nemesis) tell() {
	if n.Taken == nil {
		return
	}
	n.telling.Lock()
	defer n.telling.Unlock()
	n.mu.Lock()
	e := Explicit{Faults: slices.Clone(n.taken.Faults)}
	n.mu.Unlock()
	n.Taken(e)
}

// Active names the faults in effect, for the progress line; "" for none.
func (n *Nemesis) Active() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var names []string
	for _, a := range n.active {
		names = append(names, a.fault)
	}
	return strings.Join(names, ", ")
}

// HealAll undoes every fault in effect, newest first, each within its
// healBudget. It does not take the run's context: it must also work after
// Ctrl-C cancelled that.
func (n *Nemesis) HealAll() {
	n.mu.Lock()
	todo := n.active
	n.active = nil
	n.mu.Unlock()
	for i := len(todo) - 1; i >= 0; i-- {
		a := todo[i]
		sent := n.rec.Now()
		ctx, cancel := context.WithTimeout(context.Background(), healBudget(a.applied.Nodes))
		err := a.applied.Heal(ctx)
		cancel()
		if a.toggled != nil {
			<-a.toggled // its last toggle is written before its heal
		}
		e := history.Event{Type: history.Nemesis, F: a.fault, Phase: history.Heal, Nodes: a.applied.Nodes, Value: a.applied.What, Sent: sent}
		if err != nil {
			e.Error = err.Error()
			n.failed("healed", a.fault, err)
		}
		n.rec.Record(e)
		n.mu.Lock()
		s := &n.taken.Faults[a.strike]
		s.For = max(math.Round((seconds(time.Duration(sent))-s.At)*1000)/1000, 0.001)
		n.mu.Unlock()
	}
	if len(todo) > 0 {
		n.tell()
	}
}

func (n *Nemesis) failed(done, fault string, err error) {
	if n.Failed != nil {
		n.Failed(fmt.Errorf("%s could not be %s: %v", fault, done, err))
	}
}
