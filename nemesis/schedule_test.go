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
		steps           int
	}{
		{"default", 10 * time.Second, 60 * time.Second, 5}, // 10..50s; the heal at 60s is the caller's
		{"odd count", 10 * time.Second, 61 * time.Second, 6},
		{"ends on an injection", 10 * time.Second, 40 * time.Second, 3},
		{"limit below interval", 10 * time.Second, 5 * time.Second, 0},
		{"limit equals interval", 10 * time.Second, 10 * time.Second, 0},
		{"long run", time.Second, 10 * time.Minute, 599},
		{"zero interval", 0, time.Minute, 0},
		{"zero limit", time.Second, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps := Plan(alone(faults), tc.interval, tc.limit, 42)
			if len(steps) != tc.steps {
				t.Fatalf("%d steps, want %d: %v", len(steps), tc.steps, steps)
			}
			for i, s := range steps {
				if want := time.Duration(i+1) * tc.interval; s.At != want || s.At >= tc.limit {
					t.Errorf("step %d at %v, want %v (limit %v)", i, s.At, want, tc.limit)
				}
				if s.Heal != (i%2 == 1) {
					t.Errorf("step %d: heal %v, want injections and heals alternating", i, s.Heal)
				}
				if !slices.Contains(faults, s.Fault) {
					t.Errorf("step %d: unknown fault %q", i, s.Fault)
				}
				if s.Heal && s.Fault != steps[i-1].Fault {
					t.Errorf("step %d heals %q, but %q was injected", i, s.Fault, steps[i-1].Fault)
				}
			}
			if again := Plan(alone(faults), tc.interval, tc.limit, 42); !reflect.DeepEqual(steps, again) {
				t.Errorf("same seed, different plans:\n%v\n%v", steps, again)
			}
		})
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
