package nemesis

import (
	"math/rand/v2"
	"slices"
	"time"
)

// Step is one entry of a run's fault schedule.
type Step struct {
	At    time.Duration `json:"at"`    // since the workload started
	Fault string        `json:"fault"` // a fault name from the caller's list, e.g. "partition-ring"
	Heal  bool          `json:"heal"`  // true: heal whatever is in effect (Fault is then the fault being healed)
}

// planStream picks the PCG stream for plans, so a plan never shares its
// draws with other generators seeded from the same --seed.
const planStream = 0x504c414e // "PLAN"

// Schedule is what the nemesis of a run will do, fixed by the seed and
// the settings before the run starts, and kept in its run.json.
type Schedule struct {
	// Faults are the faults to inject, in their order.
	Faults []string `json:"faults"`
	// Steps time them on a fixed rhythm (--nemesis-interval); none when the
	// cluster paces them.
	Steps []Step `json:"steps,omitempty"`
	// Pace, when set, strikes each fault once the cluster is ready for it
	// and heals it once the cluster has reacted (see Pacer).
	Pace *Pace `json:"pace,omitempty"`
	// Steady, when set, bounds the run by its faults instead of its time
	// limit: it ends once the last fault is healed and the cluster has
	// then been Steady this long. A slow restart on a loaded machine then
	// delays the faults, where a time limit would cut them short. Not
	// stored: run.json keeps the store's format 3, and a bounded run says
	// what bounded it in its notes, its time_limit the time its faults
	// took, so that a replay of it needs no bound.
	Steady time.Duration `json:"-"`
	// Explicit, when set, strikes each fault at its time, for its time,
	// aimed as it says (`run --schedule`). It is the schedule file's, not
	// run.json's: there the run has only its faults.
	Explicit *Explicit `json:"-"`
}

// OfExplicit is the schedule that carries out e.
func OfExplicit(e Explicit) Schedule { return Schedule{Faults: e.Names(), Explicit: &e} }

// Fixed is the schedule of a fixed rhythm: Plan's steps.
func Fixed(groups [][]string, interval, limit time.Duration, seed uint64) Schedule {
	return OfSteps(Plan(groups, interval, limit, seed))
}

// OfSteps is the schedule of a fixed rhythm: the steps, and the faults
// they inject.
func OfSteps(steps []Step) Schedule {
	s := Schedule{Steps: steps}
	for _, step := range steps {
		if !step.Heal {
			s.Faults = append(s.Faults, step.Fault)
		}
	}
	return s
}

// Paced is the schedule of a run whose cluster paces its faults: as many
// faults, in Order, as could fit in limit if each took no longer than the
// shortest wait for readiness.
func Paced(groups [][]string, pace Pace, limit time.Duration, seed uint64) Schedule {
	shortest := max(min(pace.Settle, pace.Wait), time.Millisecond)
	return Schedule{Faults: Order(groups, int(min(limit/shortest+1, 1<<20)), seed), Pace: &pace}
}

// Bounded is the schedule of n faults, in Order, paced by pace or, for a
// positive interval, on Fixed's rhythm, that ends once the cluster has
// been steady for pace.Wait after the last: whatever the last fault leads
// to (a restarted node claiming to lead, a session expiring) shows within
// the target's reaction time, and a settle more shows that it lasts.
func Bounded(groups [][]string, n int, pace Pace, interval time.Duration, seed uint64) Schedule {
	s := Schedule{Faults: Order(groups, n, seed), Pace: &pace}
	if interval > 0 {
		// Just past the n-th fault's heal: n injections, each healed.
		s = Fixed(groups, interval, time.Duration(n)*interval+interval/2+1, seed)
	}
	s.Steady = pace.Wait
	return s
}

// Ceiling is the longest a schedule bounded by its faults may take on a
// cluster of nodes, each restart taking at most restart: a run that
// reaches it has not tested what it planned. Paced, each fault may wait
// its Wait to strike, its React to be healed unnoticed and its longest
// hold (or as long as it lasts, if longer), and a restart, or one per
// node for a fault that takes every node in turn; on a rhythm, the
// faults end with the plan. After the last heal: a restart, then a
// Steady for the cluster to settle and one to see it steady.
func (s Schedule) Ceiling(restart time.Duration, nodes int) time.Duration {
	after := restart + 2*s.Steady
	if s.Pace == nil {
		var end time.Duration
		for _, step := range s.Steps {
			end = max(end, step.At)
		}
		return end + after
	}
	p := s.Pace
	var total time.Duration
	for _, name := range s.Faults {
		f := catalogue[name]
		restarts := time.Duration(1)
		if f.EachNode {
			restarts = time.Duration(max(1, nodes))
		}
		total += p.Wait + max(p.React+max(p.Hold, p.Thaw), f.Lasts) + restarts*restart
	}
	return total + after
}

// Plan returns the steps for a run: an injection every interval, starting
// at interval, each healed half an interval later, all strictly before
// limit, the faults in Order.
//
// Plan depends only on its arguments, so the same --seed replays the same
// schedule; which node a fault hits is decided, and recorded, at run time.
// The final heal at limit is not part of the plan when it would fall there
// or later: the caller always heals at the end. No faults, or an interval
// or limit <= 0, give no steps.
func Plan(groups [][]string, interval, limit time.Duration, seed uint64) []Step {
	if interval <= 0 || limit <= 0 {
		return nil
	}
	var steps []Step
	// Count the injections rather than add up times, which could overflow
	// for a huge limit.
	for i, fault := range Order(groups, int((limit-1)/interval), seed) {
		at := time.Duration(i+1) * interval
		steps = append(steps, Step{At: at, Fault: fault})
		if heal := at + interval/2; heal < limit {
			steps = append(steps, Step{At: heal, Fault: fault, Heal: true})
		}
	}
	return steps
}

// Order returns the first n faults a run injects, drawn from groups.
//
// The groups take turns in rounds, each round a seeded shuffle of all of
// them: "--nemesis partition,pause,kill,clock" shows every family within any
// four injections, and kills as often as it partitions however many shapes
// of partition there are.
//
// Within its turn a group gives its next fault, coverage first: a group's
// own round visits each of its distinct faults once, in a seeded shuffled
// order, and only then the extra copies of the faults it lists more than
// once (its weights), shuffled too; then a new round of the group starts,
// distinct faults first again. So the first k turns of a group of k distinct
// faults try every one of them (five injections of the kill family hit the
// leader, one node, a minority, a majority and all), and over whole rounds
// each fault comes up as often as the group lists it.
//
// Order depends only on its arguments. No faults, or n <= 0, give none.
func Order(groups [][]string, n int, seed uint64) []string {
	groups = slices.DeleteFunc(slices.Clone(groups), func(g []string) bool { return len(g) == 0 })
	if len(groups) == 0 || n <= 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(seed, planStream))
	var (
		order []string
		round []int
		next  = make([][]string, len(groups)) // each group's faults still to come in its own round
	)
	for len(order) < n {
		if len(round) == 0 {
			round = rng.Perm(len(groups))
		}
		g := round[0]
		round = round[1:]
		if len(next[g]) == 0 {
			next[g] = groupRound(groups[g], rng)
		}
		order = append(order, next[g][0])
		next[g] = next[g][1:]
	}
	return order
}

// groupRound is one round of a group's faults: each distinct fault once,
// shuffled, then the copies beyond the first of those listed more than
// once, shuffled apart from them.
func groupRound(group []string, rng *rand.Rand) []string {
	var distinct, extra []string
	for _, f := range group {
		if slices.Contains(distinct, f) {
			extra = append(extra, f)
		} else {
			distinct = append(distinct, f)
		}
	}
	shuffle := func(s []string) { rng.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] }) }
	shuffle(distinct)
	shuffle(extra)
	return append(distinct, extra...)
}
