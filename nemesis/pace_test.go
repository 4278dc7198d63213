package nemesis

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

var testPace = Pace{Settle: time.Second, Wait: 5 * time.Second, React: 2 * time.Second, Hold: 3 * time.Second, Thaw: time.Second}

// pacerRun drives a Pacer on a fake clock: each step holds the view for a
// while, looked at every 10 ms, and the test reads when it struck and
// healed, in ms since the start.
type pacerRun struct {
	t     *testing.T
	p     *Pacer
	start time.Time
	now   time.Duration
	acts  []string
	takes time.Duration // how long each strike and heal takes to carry out
	held  Hold          // each fault's hold after the reaction
}

func newPacerRun(t *testing.T, pace Pace) *pacerRun {
	start := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	return &pacerRun{t: t, p: NewPacer(pace, start), start: start, held: Hold{For: pace.Hold}}
}

// hold shows v for d.
func (r *pacerRun) hold(d time.Duration, v View) *pacerRun {
	for end := r.now + d; r.now < end; r.now += 10 * time.Millisecond {
		switch r.p.Step(r.start.Add(r.now), v) {
		case Strike:
			r.acts = append(r.acts, "strike@"+r.now.String())
		case Heal:
			r.acts = append(r.acts, "heal@"+r.now.String())
		default:
			continue
		}
		r.now += r.takes
		if r.p.striking {
			r.p.Struck(r.start.Add(r.now), r.held)
		} else {
			r.p.Healed(r.start.Add(r.now))
		}
	}
	return r
}

func (r *pacerRun) want(acts ...string) {
	r.t.Helper()
	if got, want := strings.Join(r.acts, " "), strings.Join(acts, " "); got != want {
		r.t.Errorf("got  %s\nwant %s", got, want)
	}
}

var (
	electing = View{"n1": Follows, "n2": Follows, "n3": Follows}
	n1Leads  = View{"n1": Leads, "n2": Follows, "n3": Follows}
	n2Leads  = View{"n1": Follows, "n2": Leads, "n3": Follows}
	n1Gone   = View{"n2": Follows, "n3": Follows}            // n1 killed or frozen, nobody elected yet
	n2Took   = View{"n2": Leads, "n3": Follows}              // n2 elected while n1 is gone
	bothLead = View{"n1": Leads, "n2": Leads, "n3": Follows} // n1 cut off, still leading
)

// The first fault waits for a leader, then for it to stay alone for
// Settle; the fault is healed Hold after the cluster reacted.
func TestPacerStrikesWhenALeaderSettled(t *testing.T) {
	r := newPacerRun(t, testPace)
	r.hold(1500*time.Millisecond, electing). // no leader: nothing to strike at
							hold(700*time.Millisecond, n1Leads). // not yet settled
							hold(400*time.Millisecond, n1Leads). // settled 1 s after 1.5 s: strike at 2.5 s
							hold(800*time.Millisecond, n1Gone).  // the leader is down: no reaction yet
							hold(4*time.Second, n2Took)          // n2 leads at 3.4 s: healed at 6.4 s
	r.want("strike@2.5s", "heal@6.4s")
}

// A leader that answers it no longer leads has reacted, as much as a new
// leader has, to a fault whose hold waits for no successor (a pause of a
// service, a clock).
func TestPacerStepDownIsAReaction(t *testing.T) {
	r := newPacerRun(t, testPace)
	r.hold(time.Second, n1Leads). // strike at 1 s
					hold(500*time.Millisecond, n1Leads).
					hold(4*time.Second, electing) // n1 steps down at 1.5 s: healed at 4.5 s
	r.want("strike@1s", "heal@4.5s")
}

// A cut leader that steps down has not shown what the cut leads to: the
// cut is held until another node leads, and Hold after that, or healed
// React after the strike if nobody replaces it.
func TestPacerHoldsACutForTheSuccessor(t *testing.T) {
	r := newPacerRun(t, testPace)
	r.held = Hold{For: testPace.Hold, Successor: true}
	r.hold(time.Second, n1Leads). // strike at 1 s
					hold(500*time.Millisecond, n1Leads).
					hold(time.Second, electing). // n1 steps down at 1.5 s: not yet a reaction
					hold(4*time.Second, n2Leads) // n2 leads at 2.5 s: healed at 5.5 s
	r.want("strike@1s", "heal@5.5s")

	r = newPacerRun(t, testPace)
	r.held = Hold{For: testPace.Hold, Successor: true}
	r.hold(time.Second, n1Leads).
		hold(500*time.Millisecond, n1Leads).
		hold(3*time.Second, electing) // n1 steps down at 1.5 s, nobody leads: healed at 3 s
	r.want("strike@1s", "heal@3s")
}

// A fault nobody reacts to (a follower paused, a clock the target does not
// read) is healed React after it struck.
func TestPacerHealsAnUnnoticedFault(t *testing.T) {
	r := newPacerRun(t, testPace)
	r.hold(4*time.Second, n1Leads)
	r.want("strike@1s", "heal@3s")
}

// A leader that goes silent has not reacted: only another node's claim, or
// its own step-down, counts.
func TestPacerSilenceIsNoReaction(t *testing.T) {
	r := newPacerRun(t, testPace)
	r.hold(1010*time.Millisecond, n1Leads).hold(3*time.Second, n1Gone)
	r.want("strike@1s", "heal@3s")
}

// A second leader beside the first (a side of a partition electing) is a
// reaction, and the fault is held past it.
func TestPacerSecondLeaderIsAReaction(t *testing.T) {
	r := newPacerRun(t, testPace)
	r.hold(time.Second, n1Leads).hold(200*time.Millisecond, n1Leads).hold(5*time.Second, bothLead)
	r.want("strike@1s", "heal@4.2s")
}

// After a heal the cluster must settle again, measured from the heal, even
// when its leader never changed.
func TestPacerSettlesAfterEveryHeal(t *testing.T) {
	r := newPacerRun(t, testPace)
	r.hold(6500*time.Millisecond, n1Leads)
	r.want("strike@1s", "heal@3s", "strike@4s", "heal@6s")
}

// Settling needs one leader throughout: a change of leader, or two at
// once, start it again.
func TestPacerSettlingNeedsOneSteadyLeader(t *testing.T) {
	r := newPacerRun(t, testPace)
	r.hold(800*time.Millisecond, n1Leads).
		hold(800*time.Millisecond, n2Leads).  // another leader at 0.8 s
		hold(500*time.Millisecond, bothLead). // two at 1.6 s
		hold(1200*time.Millisecond, n2Leads)  // n2 alone again at 2.1 s: strike at 3.1 s
	r.want("strike@3.1s")
}

// A node not yet back from a restart (or a freeze) leaves the cluster
// unsteady however long its leader leads alone: on a loaded machine a slow
// restart delays the next fault, up to Wait, instead of meeting it.
func TestPacerWaitsForEveryNode(t *testing.T) {
	n1Back := View{"n1": Unseen, "n2": Leads, "n3": Follows} // n1 restarted, not answering yet
	r := newPacerRun(t, testPace)
	r.hold(800*time.Millisecond, n1Back). // n2 alone, n1 still away
						hold(2*time.Second, n2Leads) // n1 answers at 0.8 s: strike at 1.8 s
	r.want("strike@1.8s")

	r = newPacerRun(t, testPace)
	r.hold(6*time.Second, n1Back) // n1 never back: struck anyway after Wait
	r.want("strike@5s")
}

// Steady counts from when one leader, the same, led with every node
// answering: a second leader, a change of leader or a node gone starts
// it again.
func TestSteady(t *testing.T) {
	start := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	var s Steady
	for _, step := range []struct {
		at   time.Duration
		v    View
		want time.Duration
	}{
		{0, electing, 0},
		{time.Second, n1Leads, 0},
		{2 * time.Second, n1Leads, time.Second},
		{3 * time.Second, View{"n1": Leads, "n2": Unseen, "n3": Follows}, 0},
		{4 * time.Second, n1Leads, 0},
		{5 * time.Second, n1Leads, time.Second},
		{6 * time.Second, n2Leads, 0},
		{6500 * time.Millisecond, bothLead, 0},
		{7 * time.Second, n2Leads, 0},
		{9 * time.Second, n2Leads, 2 * time.Second},
	} {
		if got := s.Step(start.Add(step.at), step.v); got != step.want {
			t.Errorf("at %s: steady for %s, want %s", step.at, got, step.want)
		}
	}
}

// A strike or a heal that takes long (a kill, a restart on a loaded
// machine) is counted from when it is over: the reaction time from the
// fault in effect, settling from the end of the heal.
func TestPacerCountsFromWhenItIsDone(t *testing.T) {
	r := newPacerRun(t, testPace)
	r.takes = 2 * time.Second
	r.hold(9*time.Second, n1Leads)
	// Struck at 1 s, in effect at 3 s, no reaction: healed at 5 s, over at
	// 7 s; settled at 8 s.
	r.want("strike@1s", "heal@5s", "strike@8s")
}

// A fault held for nothing (a kill) is healed as soon as the cluster
// reacted.
func TestPacerHealsAKillAtTheReaction(t *testing.T) {
	r := newPacerRun(t, testPace)
	r.held = Hold{}
	r.hold(1010*time.Millisecond, n1Leads).hold(600*time.Millisecond, n1Gone).hold(time.Second, n2Took)
	r.want("strike@1s", "heal@1.61s")
}

// A kill that leaves no node answering is healed at once, since nobody is
// left to react; one that leaves survivors waits for their reaction.
func TestPacerHealsAKillOfAllAtTheSilence(t *testing.T) {
	r := newPacerRun(t, testPace)
	r.held = Hold{UntilSilence: true}
	r.hold(1010*time.Millisecond, n1Leads).hold(300*time.Millisecond, n1Gone).hold(3*time.Second, View{})
	r.want("strike@1s", "heal@1.31s")

	r = newPacerRun(t, testPace)
	r.held = Hold{UntilSilence: true}
	r.hold(1010*time.Millisecond, n1Leads).hold(3*time.Second, View{"n2": Follows})
	r.want("strike@1s", "heal@3s")
}

// A pause of the leader is held, once another node leads, until a new
// leader is seen writing, or for the thaw if none is.
func TestPacerThawsWhenANewLeaderWrites(t *testing.T) {
	n2Writes := View{"n2": Writes, "n3": Follows}
	n1Writes := View{"n1": Writes, "n2": Follows, "n3": Follows}
	r := newPacerRun(t, testPace)
	r.held = Hold{For: testPace.Thaw, UntilWrite: true}
	// n1 writing when it is frozen does not count: it led already.
	r.hold(1010*time.Millisecond, n1Writes).hold(500*time.Millisecond, n1Gone).
		hold(300*time.Millisecond, n2Took).hold(time.Second, n2Writes)
	r.want("strike@1s", "heal@1.81s")

	r = newPacerRun(t, testPace)
	r.held = Hold{For: testPace.Thaw, UntilWrite: true}
	r.hold(1010*time.Millisecond, n1Leads).hold(500*time.Millisecond, n1Gone).hold(2*time.Second, n2Took)
	r.want("strike@1s", "heal@2.51s")
}

// A cluster that never settles still meets its faults, Wait after the
// start or the last heal.
func TestPacerStrikesAnywayAfterWait(t *testing.T) {
	r := newPacerRun(t, testPace)
	r.hold(13*time.Second, bothLead)
	// Two leaders when it struck, and still the same two: no reaction.
	r.want("strike@5s", "heal@7s", "strike@12s")
}

func TestPaceValidate(t *testing.T) {
	if err := testPace.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Pace{
		{Wait: time.Second, React: time.Second},
		{Settle: time.Second, React: time.Second},
		{Settle: time.Second, Wait: time.Second},
		{Settle: time.Second, Wait: time.Second, React: time.Second, Hold: -1},
		{Settle: time.Second, Wait: time.Second, React: time.Second, Thaw: -1},
	} {
		if bad.Validate() == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

// A kill is healed as soon as the cluster reacted, a pause of nodes once a
// new leader writes or after Thaw (a frozen node shows an overlap only
// once it wakes), and every other fault, a pause of a service among them,
// after Hold; a cut counts only a successor as the reaction.
func TestPaceHoldOf(t *testing.T) {
	thaw, hold, kill := Hold{For: testPace.Thaw, UntilWrite: true}, Hold{For: testPace.Hold}, Hold{UntilSilence: true}
	cut := Hold{For: testPace.Hold, Successor: true}
	for name, want := range map[string]Hold{
		"kill-leader":             kill,
		"kill-service":            kill,
		"pause-leader":            thaw,
		"pause-all":               thaw,
		"pause-service":           hold,
		"partition-leader":        cut,
		"clock-bump":              hold,
		"partition-service":       cut,
		"packet-loss":             hold,
		"flap":                    {For: testPace.Hold, Least: flapLasts, Successor: true},
		"pause-process-one":       thaw,
		"pause-process-gc":        {For: testPace.Thaw, UntilWrite: true, Least: gcLasts},
		"restart-rolling":         kill,
		"restart-rolling-service": kill,
		"stop-service":            kill,
	} {
		f, ok := catalogue[name]
		if !ok {
			t.Fatalf("no fault %s", name)
		}
		if got := testPace.holdOf(f); got != want {
			t.Errorf("%s: held %+v after the reaction, want %+v", name, got, want)
		}
	}
}

// A fault that lasts (a flap) is held that long from its strike however
// soon the cluster reacted, and as long after the reaction as any other.
func TestPacerHoldsAFaultThatLasts(t *testing.T) {
	r := newPacerRun(t, testPace)
	r.held = Hold{For: testPace.Hold, Least: 10 * time.Second}
	r.hold(time.Second, n1Leads). // strike at 1 s
					hold(500*time.Millisecond, n1Leads).
					hold(10500*time.Millisecond, n2Leads) // reacted at 1.5 s: held to 11 s, not 4.5 s
	r.want("strike@1s", "heal@11s")
}

// A paced schedule lists enough faults for the time limit, in Order.
func TestPacedScheduleLength(t *testing.T) {
	groups := [][]string{families["kill"]}
	s := Paced(groups, testPace, 30*time.Second, 7)
	if len(s.Faults) != 31 || s.Steps != nil || s.Pace == nil || *s.Pace != testPace {
		t.Fatalf("%d faults, steps %v, pace %v: want 31 faults (30 s / a 1 s settle, +1), no steps, the pace", len(s.Faults), s.Steps, s.Pace)
	}
	if want := Order(groups, 31, 7); strings.Join(s.Faults, ",") != strings.Join(want, ",") {
		t.Errorf("faults %v, want Order's %v", s.Faults, want)
	}
	fixed := Fixed(groups, 10*time.Second, 60*time.Second, 7)
	if strings.Join(fixed.Faults, ",") != strings.Join(Order(groups, 5, 7), ",") || len(fixed.Steps) != 10 || fixed.Pace != nil {
		t.Errorf("fixed: %+v", fixed)
	}
}

// A paced run of a family tries every one of its faults before it repeats
// one, whatever the seed: eight faults of the partition family are its
// eight shapes.
func TestPacedCoversAFamilyFirst(t *testing.T) {
	group := families["partition"]
	distinct := map[string]bool{}
	for _, f := range group {
		distinct[f] = true
	}
	for seed := uint64(0); seed < 100; seed++ {
		first := Paced([][]string{group}, testPace, 45*time.Second, seed).Faults[:len(distinct)]
		seen := map[string]bool{}
		for _, f := range first {
			seen[f] = true
		}
		if len(seen) != len(distinct) {
			t.Fatalf("seed %d: the first %d faults %v repeat one", seed, len(distinct), first)
		}
	}
}

// A schedule bounded by its faults has exactly that many, paced or on a
// rhythm whose last heal it keeps, and ends once the cluster is steady for
// the pace's Wait after the last.
func TestBounded(t *testing.T) {
	groups := [][]string{families["kill"]}
	paced := Bounded(groups, 4, testPace, 0, 7)
	if want := Order(groups, 4, 7); strings.Join(paced.Faults, ",") != strings.Join(want, ",") || paced.Pace == nil || paced.Steps != nil {
		t.Errorf("paced: %+v, want the faults %v, paced", paced, want)
	}
	if paced.Steady != testPace.Wait {
		t.Errorf("paced: steady %s, want the pace's wait %s", paced.Steady, testPace.Wait)
	}
	fixed := Bounded(groups, 2, testPace, 8*time.Second, 7)
	var steps []string
	for _, s := range fixed.Steps {
		steps = append(steps, fmt.Sprintf("%s@%s", map[bool]string{false: "strike", true: "heal"}[s.Heal], s.At))
	}
	if got := strings.Join(steps, " "); got != "strike@8s heal@12s strike@16s heal@20s" || fixed.Pace != nil || fixed.Steady != testPace.Wait {
		t.Errorf("on a rhythm: %s, pace %v, steady %s", got, fixed.Pace, fixed.Steady)
	}
}

// The ceiling gives each paced fault its Wait, React, longest hold and a
// restart, a rhythm its plan, and both a restart and two Steady after.
func TestCeiling(t *testing.T) {
	groups := [][]string{families["kill"]}
	restart := 30 * time.Second
	// Each fault 5 + 2 + 3 + 30 s; after the last, 30 + 2 x 5 s.
	if got, want := Bounded(groups, 4, testPace, 0, 7).Ceiling(restart, 3), 4*40*time.Second+40*time.Second; got != want {
		t.Errorf("paced: ceiling %s, want %s", got, want)
	}
	// The last heal at 20 s, then 30 + 2 x 5 s.
	if got, want := Bounded(groups, 2, testPace, 8*time.Second, 7).Ceiling(restart, 3), 60*time.Second; got != want {
		t.Errorf("on a rhythm: ceiling %s, want %s", got, want)
	}
	// A flap lasts 20 s, past React and hold: each 5 + 20 + 30 s.
	if got, want := Bounded([][]string{{"flap"}}, 2, testPace, 0, 7).Ceiling(restart, 3), 2*55*time.Second+40*time.Second; got != want {
		t.Errorf("flaps: ceiling %s, want %s", got, want)
	}
	// A rolling restart of 3 nodes may restart each: 5 + 2 + 3 + 3 x 30 s.
	if got, want := Bounded([][]string{{"restart-rolling"}}, 1, testPace, 0, 7).Ceiling(restart, 3), 100*time.Second+40*time.Second; got != want {
		t.Errorf("a roll: ceiling %s, want %s", got, want)
	}
}
