package nemesis

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestPlan(t *testing.T) {
	faults := []string{"partition-ring", "partition-bridge", "kill", "pause"}
	for _, tc := range []struct {
		name            string
		interval, limit time.Duration
		injections      int
		lastHealed      bool
	}{
		{"default", 10 * time.Second, 60 * time.Second, 5, true}, // 10..50 s, heals at 15..55 s
		{"last heal at the limit is the caller's", 10 * time.Second, 55 * time.Second, 5, false},
		{"limit below interval", 10 * time.Second, 5 * time.Second, 0, false},
		{"limit equals interval", 10 * time.Second, 10 * time.Second, 0, false},
		{"long run", time.Second, 10 * time.Minute, 599, true},
		{"zero interval", 0, time.Minute, 0, false},
		{"zero limit", time.Second, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps := Plan(alone(faults), tc.interval, tc.limit, 42)
			injections := 0
			for i, s := range steps {
				if s.At >= tc.limit {
					t.Errorf("step %d at %v, past the limit %v", i, s.At, tc.limit)
				}
				if !slices.Contains(faults, s.Fault) {
					t.Errorf("step %d: unknown fault %q", i, s.Fault)
				}
				if s.Heal {
					prev := steps[i-1]
					if prev.Heal || prev.Fault != s.Fault || s.At != prev.At+tc.interval/2 {
						t.Errorf("step %d heals %v after %v: want the fault just injected, half an interval later", i, s, prev)
					}
					continue
				}
				injections++
				if want := time.Duration(injections) * tc.interval; s.At != want {
					t.Errorf("injection %d at %v, want %v", injections, s.At, want)
				}
			}
			if injections != tc.injections {
				t.Fatalf("%d injections, want %d: %v", injections, tc.injections, steps)
			}
			if n := len(steps); n > 0 && steps[n-1].Heal != tc.lastHealed {
				t.Errorf("last step %v: healed in the plan %v, want %v", steps[n-1], steps[n-1].Heal, tc.lastHealed)
			}
			if again := Plan(alone(faults), tc.interval, tc.limit, 42); !reflect.DeepEqual(steps, again) {
				t.Errorf("same seed, different plans:\n%v\n%v", steps, again)
			}
		})
	}
}

// Groups take turns: any len(groups) injections in a row starting at a
// round show every group, whatever the seed.
func TestPlanGivesEveryGroupItsTurn(t *testing.T) {
	groups := [][]string{{"partition-ring", "partition-halves"}, {"pause-leader"}, {"kill-leader"}, {"clock-bump"}}
	for seed := uint64(0); seed < 50; seed++ {
		var injected []string
		for _, s := range Plan(groups, 10*time.Second, 60*time.Second, seed) {
			if !s.Heal {
				injected = append(injected, s.Fault)
			}
		}
		for _, g := range groups {
			if !slices.ContainsFunc(injected[:4], func(f string) bool { return slices.Contains(g, f) }) {
				t.Errorf("seed %d: the first four injections %v miss the group %v", seed, injected[:4], g)
			}
		}
	}
}

func TestPlanNoFaults(t *testing.T) {
	for _, faults := range [][]string{nil, {}} {
		if steps := Plan(alone(faults), time.Second, time.Minute, 1); steps != nil {
			t.Errorf("Plan(alone(%v) = %v), want nil", faults, steps)
		}
	}
}

func TestPlanSeed(t *testing.T) {
	faults := []string{"a", "b", "c"}
	base := Plan(alone(faults), time.Second, time.Minute, 0)
	differ := false
	for seed := uint64(1); seed <= 10; seed++ {
		if !reflect.DeepEqual(base, Plan(alone(faults), time.Second, time.Minute, seed)) {
			differ = true
		}
	}
	if !differ {
		t.Error("seeds 0..10 all give the same plan")
	}
	// Over many draws every fault comes up: the draw is from the whole list.
	seen := map[string]bool{}
	for _, s := range Plan(alone(faults), time.Second, time.Hour, 7) {
		seen[s.Fault] = true
	}
	if len(seen) != len(faults) {
		t.Errorf("only %v drawn from %v", seen, faults)
	}
	// One fault: every step is that fault.
	for _, s := range Plan(alone([]string{"kill"}), time.Second, 10*time.Second, 3) {
		if s.Fault != "kill" {
			t.Errorf("step %v with only kill to choose", s)
		}
	}
}

// alone makes each fault a group of its own: a uniform draw over faults.
func alone(faults []string) [][]string {
	out := make([][]string, len(faults))
	for i, f := range faults {
		out[i] = []string{f}
	}
	return out
}

// A group is drawn as often as any other, whatever its size.
func TestPlanDrawsGroupsUniformly(t *testing.T) {
	groups := [][]string{{"kill-leader"}, {"p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9"}}
	kills, injections := 0, 0
	for _, s := range Plan(groups, time.Second, 2000*time.Second, 5) {
		if !s.Heal {
			injections++
			if s.Fault == "kill-leader" {
				kills++
			}
		}
	}
	if share := float64(kills) / float64(injections); share < 0.4 || share > 0.6 {
		t.Errorf("the one-fault group got %.2f of %d injections, want about a half", share, injections)
	}
}
