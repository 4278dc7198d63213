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

// Plan returns the steps for a run: starting at interval, alternately an
// injection and its heal, one interval apart, all strictly before limit.
// Each injection draws a group uniformly, then a fault of that group
// uniformly, with a generator seeded by seed: "--nemesis partition,kill"
// gives kills as often as partitions, however many shapes of partition
// there are. Plan depends only on its arguments, so the same --seed replays
// the same schedule; which node a fault hits is decided, and recorded, at
// run time.
//
// The final heal at limit is not part of the plan: the caller always heals at
// the end, so an injection whose heal would fall at or after limit is still
// planned. No faults, or an interval or limit <= 0, give no steps.
func Plan(groups [][]string, interval, limit time.Duration, seed uint64) []Step {
	groups = slices.DeleteFunc(slices.Clone(groups), func(g []string) bool { return len(g) == 0 })
	if len(groups) == 0 || interval <= 0 || limit <= 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(seed, planStream))
	// Count the steps rather than add up times, which could overflow
	// for a huge limit.
	n := int64((limit - 1) / interval)
	var steps []Step
	var fault string
	for i := int64(1); i <= n; i++ {
		heal := i%2 == 0
		if !heal {
			g := groups[rng.IntN(len(groups))]
			fault = g[rng.IntN(len(g))]
		}
		steps = append(steps, Step{At: time.Duration(i) * interval, Fault: fault, Heal: heal})
	}
	return steps
}
