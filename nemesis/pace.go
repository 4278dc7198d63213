package nemesis

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Pace says when a paced nemesis strikes and heals. A fault struck on a
// clock often lands on a cluster still electing, where it tests nothing,
// and is healed before the cluster has shown what it does; paced, every
// fault hits a cluster with a steady leader, and lasts until it has had
// its effect.
type Pace struct {
	// Settle: the cluster Steady this long (one leader, every node
	// answering) makes it ready for the next fault.
	Settle time.Duration `json:"settle"`
	// Wait: strike anyway this long after the last heal (or the start)
	// when the cluster never became ready, so that a cluster that cannot
	// settle still meets its faults.
	Wait time.Duration `json:"wait"`
	// React: heal a fault the cluster has not reacted to this long after
	// it struck. A target's manifest declares it (its election timeout, a
	// lease's life): the time within which it must notice a lost leader.
	React time.Duration `json:"react"`
	// Hold: keep a fault that leaves its nodes running (a partition, a
	// clock, a pause of a service) this long after the cluster reacted to
	// it, so that what the reaction leads to (two leaders, a write with an
	// older token) lasts long enough to judge: past an overlap the target
	// promises to bound, for one. A kill is healed as soon as the cluster
	// reacted, or as soon as no node answers: a killed node believes
	// nothing, and what a kill exposes comes with the restart, most often
	// while the new leader is new.
	Hold time.Duration `json:"hold"`
	// Thaw: keep a pause of nodes, once the cluster reacted, until a new
	// leader was seen writing, or this long if it never is. A frozen node
	// proves nothing until it wakes, so an overlap with it can only begin
	// at the heal: holding the pause past the promise's bound only delays
	// that. What the pause needs is a new leader that leads and writes, so
	// that the woken one's writes meet a newer token.
	Thaw time.Duration `json:"thaw"`
}

// Validate names the first setting that cannot pace anything.
func (p Pace) Validate() error {
	switch {
	case p.Settle <= 0:
		return fmt.Errorf("pace: settle must be positive, not %s", p.Settle)
	case p.Wait <= 0:
		return fmt.Errorf("pace: wait must be positive, not %s", p.Wait)
	case p.React <= 0:
		return fmt.Errorf("pace: react must be positive, not %s", p.React)
	case p.Hold < 0:
		return errors.New("pace: hold must not be negative")
	case p.Thaw < 0:
		return errors.New("pace: thaw must not be negative")
	}
	return nil
}

// Hold is how long a struck fault is kept once the cluster reacted to it.
type Hold struct {
	For time.Duration
	// UntilWrite ends the hold sooner, once a node that did not lead when
	// the fault struck was seen writing as leader.
	UntilWrite bool
	// UntilSilence heals the fault, reaction or not, once no node
	// answers: every node killed leaves nobody to react, and what such a
	// fault exposes comes with the restart.
	UntilSilence bool
	// Least keeps the fault at least this long from its strike, however
	// the cluster reacted: a fault that acts over time (a flap).
	Least time.Duration
	// Successor counts only another node leading as the reaction, not the
	// leader saying it no longer leads. A cut leader whose belief is
	// bounded steps down before what it holds (a session, a lease) runs
	// out; healed then, it renews what it held and leads on, unreplaced,
	// and the cut has tested nothing. Held for its successor, React at
	// most, it ends with the leader beside the one that replaced it.
	Successor bool
}

// holdOf is how long to keep f in effect once the cluster reacted to it.
// A fault that lasts (a flap, a JVM's collections) is held as long as
// it lasts whatever its kind.
func (p Pace) holdOf(f Fault) Hold {
	h := Hold{For: p.Hold}
	switch {
	case f.Kind.Restarts():
		h = Hold{UntilSilence: true}
	case (f.Kind == Pause || f.Kind == PauseProcess || f.Kind == DiskStall) && !f.OnServices:
		h = Hold{For: p.Thaw, UntilWrite: true}
	}
	h.Least = f.Lasts
	h.Successor = f.Kind == Partition
	return h
}

// Belief is what a node was last seen to believe, if that is recent.
type Belief int8

// Beliefs of a View.
const (
	Unseen  Belief = iota // nothing recent: down, frozen, unreachable, or not yet heard of
	Follows               // it answered, and does not lead
	Leads                 // it answered, and leads
	Writes                // it leads, and a write it made was accepted lately
)

// View is every node's recent belief, as the observer sees it.
type View map[string]Belief

// leaders names the nodes that lead, sorted.
func (v View) leaders() []string {
	var out []string
	for n, b := range v {
		if b == Leads || b == Writes {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// whole says whether every node the view names answers: a node still
// restarting, or frozen, is Unseen.
func (v View) whole() bool {
	for _, b := range v {
		if b == Unseen {
			return false
		}
	}
	return true
}

// silent says whether no node answers.
func (v View) silent() bool {
	for _, b := range v {
		if b != Unseen {
			return false
		}
	}
	return true
}

// Action is what a Pacer asks of its nemesis.
type Action int8

// Actions of a Pacer.
const (
	Idle   Action = iota // nothing to do yet
	Strike               // inject the next fault
	Heal                 // heal the fault in effect
)

// Pacer decides, from what the cluster shows, when to strike and when to
// heal. It is a state machine with no clock and no I/O: its caller feeds
// it the time and the view, and carries out what it answers.
//
// Waiting, it strikes once the cluster has been Steady for Settle since
// the last heal, or once Wait has passed. Striking, it heals once the
// fault's hold is over (see Struck).
type Pacer struct {
	pace     Pace
	striking bool
	since    time.Time // waiting: the last heal, or the start

	// Waiting: how long the cluster has been steady since the last heal.
	steady Steady

	// Striking: the leaders when the fault struck, and the fault held.
	before []string
	held   holding
}

// NewPacer paces a run that starts at start.
func NewPacer(p Pace, start time.Time) *Pacer { return &Pacer{pace: p, since: start} }

// Step takes the view at now and says what to do. The caller must carry
// it out, and call Struck or Healed, before its next Step.
func (p *Pacer) Step(now time.Time, v View) Action {
	if !p.striking {
		ready := p.steady.Step(now, v) >= p.pace.Settle
		if !ready && now.Sub(p.since) < p.pace.Wait {
			return Idle
		}
		p.striking, p.before = true, v.leaders() // Struck starts the hold
		return Strike
	}
	if !p.held.over(now, v) {
		return Idle
	}
	p.striking, p.since, p.steady = false, now, Steady{}
	p.steady.Step(now, v)
	return Heal
}

// holding follows a fault in effect and says when its hold is over: a state
// machine with no clock, fed the time and the view, as a Pacer is. It
// heals the fault's Hold after the cluster first reacted (a node led that
// did not lead when the fault struck, or, unless the hold waits for a
// Successor, a leader of that moment answered that it no longer leads),
// or React after the strike if the cluster never did. A leader that goes
// silent has not reacted: a killed or frozen node says nothing.
type holding struct {
	hold    Hold
	react   time.Duration
	since   time.Time // when the fault was in effect
	before  []string  // the leaders when it struck
	reacted time.Time // when the cluster first reacted; zero before
}

// newHolding follows a fault in effect since since, struck when before led,
// healed React after the strike if the cluster never reacted, or hold
// after it did.
func newHolding(hold Hold, react time.Duration, since time.Time, before []string) holding {
	return holding{hold: hold, react: react, since: since, before: before}
}

// Over takes the view at now and says whether the fault may be healed.
func (h *holding) over(now time.Time, v View) bool {
	if h.reacted.IsZero() && h.reacts(v) {
		h.reacted = now
	}
	switch {
	case now.Sub(h.since) < h.hold.Least:
		return false // it has yet to act for as long as it lasts
	case h.reacted.IsZero() && h.hold.UntilSilence && v.silent():
		return true // nobody is left to react
	case h.reacted.IsZero():
		return now.Sub(h.since) >= h.react // no reaction: heal once there was time for one
	}
	return now.Sub(h.reacted) >= h.hold.For || h.hold.UntilWrite && h.newWriter(v)
}

// newWriter says whether a node that did not lead when the fault struck
// writes as leader.
func (h *holding) newWriter(v View) bool {
	for n, b := range v {
		if b == Writes && !slices.Contains(h.before, n) {
			return true
		}
	}
	return false
}

// reacts says whether the view shows a reaction to the fault in effect.
func (h *holding) reacts(v View) bool {
	for _, n := range v.leaders() {
		if !slices.Contains(h.before, n) {
			return true
		}
	}
	if h.hold.Successor {
		return false
	}
	for _, n := range h.before {
		if v[n] == Follows {
			return true
		}
	}
	return false
}

// Steady follows how long a cluster has been steady: one node leading,
// the same one, and every node answering. A node that is back from a
// restart, or from a freeze, but not yet seen answering leaves the cluster
// unsteady: the fault that took it is not over until it is back, and what
// its return brings (a restarted node that claims to lead) is part of the
// fault. So on a loaded machine, where a restart takes long, the next
// fault waits for it instead of striking a cluster still healing.
type Steady struct {
	leader string    // "" when the cluster is not steady
	since  time.Time // when leader became the steady one
}

// Step takes the view at now and says how long the cluster has been
// steady; zero when it is not.
func (s *Steady) Step(now time.Time, v View) time.Duration {
	leaders := v.leaders()
	leader := ""
	if len(leaders) == 1 && v.whole() {
		leader = leaders[0]
	}
	if leader != s.leader {
		s.leader, s.since = leader, now
	}
	if leader == "" {
		return 0
	}
	return now.Sub(s.since)
}

// Struck says that the fault Step asked for was in effect by now, to be
// held as hold says once the cluster reacted. A kill or a restart can take
// seconds on a loaded machine: the reaction time counts from when the
// fault is in effect, and settling from when the heal is over, so that a
// node restarted late is not struck again before the cluster saw it back.
func (p *Pacer) Struck(now time.Time, hold Hold) {
	p.held = newHolding(hold, p.pace.React, now, p.before)
}

// Healed says that the heal Step asked for was over by now.
func (p *Pacer) Healed(now time.Time) { p.since, p.steady.since = now, now }
