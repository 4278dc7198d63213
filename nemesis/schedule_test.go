package nemesis

import (
	"reflect"
	"slices"
	"strings"
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

// injected lists the faults a plan injects, in order.
func injected(steps []Step) []string {
	var out []string
	for _, s := range steps {
		if !s.Heal {
			out = append(out, s.Fault)
		}
	}
	return out
}

// distinctAndExtra splits a group into its distinct faults and the copies
// beyond the first of each, both sorted.
func distinctAndExtra(group []string) (distinct, extra []string) {
	for _, f := range group {
		if slices.Contains(distinct, f) {
			extra = append(extra, f)
		} else {
			distinct = append(distinct, f)
		}
	}
	slices.Sort(distinct)
	slices.Sort(extra)
	return distinct, extra
}

// A group's rounds are coverage first: its k distinct faults once each in
// its first k turns, then the extra copies of its weighted faults, then
// the same again, whatever the seed.
func TestPlanCoversAGroupFirst(t *testing.T) {
	for _, tc := range []struct {
		name  string
		group []string
	}{
		{"distinct", []string{"a", "b", "c", "d"}},
		{"weighted", []string{"a", "a", "a", "b", "c", "c", "d", "e"}},
		{"copies apart", []string{"a", "b", "a", "c", "a"}},
		{"one fault twice", []string{"a", "a"}},
		{"one fault", []string{"a"}},
		{"kill family", families["kill"]},
		{"pause family", families["pause"]},
		{"partition family", families["partition"]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			distinct, extra := distinctAndExtra(tc.group)
			n, k := len(tc.group), len(distinct)
			const rounds = 3
			limit := time.Duration(rounds*n+1) * time.Second // rounds*n injections
			for seed := range uint64(50) {
				got := injected(Plan([][]string{tc.group}, time.Second, limit, seed))
				if len(got) != rounds*n {
					t.Fatalf("seed %d: %d injections, want %d", seed, len(got), rounds*n)
				}
				for r := range rounds {
					round := got[r*n : (r+1)*n]
					if first := slices.Sorted(slices.Values(round[:k])); !slices.Equal(first, distinct) {
						t.Errorf("seed %d, round %d: first %d draws %v, want each of %v once", seed, r, k, round[:k], distinct)
					}
					if rest := slices.Sorted(slices.Values(round[k:])); !slices.Equal(rest, extra) {
						t.Errorf("seed %d, round %d: then %v, want the extra copies %v", seed, r, round[k:], extra)
					}
				}
			}
		})
	}
}

// "--nemesis kill" for 60 s at 10 s, five injections, tries every kill
// target once: the leader, one node, a minority, a majority and all.
func TestPlanKillFamilyTriesEveryTarget(t *testing.T) {
	groups, err := Expand([]string{"kill"})
	if err != nil {
		t.Fatal(err)
	}
	names := make([][]string, len(groups))
	for i, g := range groups {
		for _, f := range g {
			names[i] = append(names[i], f.Name)
		}
	}
	want := []string{"kill-all", "kill-leader", "kill-majority", "kill-minority", "kill-one"}
	for seed := range uint64(20) {
		got := injected(Plan(names, 10*time.Second, 60*time.Second, seed))
		if s := slices.Sorted(slices.Values(got)); !slices.Equal(s, want) {
			t.Errorf("seed %d: injected %v, want each of %v once", seed, got, want)
		}
	}
}

// Over many rounds a group's faults come up as often as the group lists
// them, also while other groups take their turns in between.
func TestPlanWeights(t *testing.T) {
	weighted := []string{"a", "a", "a", "b", "c", "c", "d", "e"}
	copies := map[string]int{"a": 3, "b": 1, "c": 2, "d": 1, "e": 1}
	for _, tc := range []struct {
		name   string
		groups [][]string
	}{
		{"alone", [][]string{weighted}},
		{"with others", [][]string{{"x"}, weighted, {"y", "z"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counts := map[string]int{}
			turns := 0
			for _, f := range injected(Plan(tc.groups, time.Second, 5000*time.Second, 9)) {
				if _, ok := copies[f]; ok {
					counts[f]++
					turns++
				}
			}
			// After the whole rounds the counts are exact; the round under
			// way adds at most its own copies.
			whole := turns / len(weighted)
			if whole < 100 {
				t.Fatalf("only %d whole rounds of the group in %d turns", whole, turns)
			}
			for f, c := range copies {
				if got := counts[f]; got < whole*c || got > (whole+1)*c {
					t.Errorf("%s drawn %d times in %d turns, want %d-%d (%d of %d copies)", f, got, turns, whole*c, (whole+1)*c, c, len(weighted))
				}
			}
		})
	}
}

// The same seed gives the same plan, weighted groups included; another
// seed gives another order of a group's distinct faults, the same faults.
func TestPlanSeedOrdersAGroup(t *testing.T) {
	groups := [][]string{families["kill"], families["partition"]}
	if a, b := Plan(groups, time.Second, time.Minute, 4), Plan(groups, time.Second, time.Minute, 4); !reflect.DeepEqual(a, b) {
		t.Errorf("same seed, different plans:\n%v\n%v", a, b)
	}
	group := []string{"a", "b", "c", "d", "e"}
	orders := map[string]bool{}
	for seed := range uint64(20) {
		first := injected(Plan([][]string{group}, time.Second, 6*time.Second, seed))
		if s := slices.Sorted(slices.Values(first)); !slices.Equal(s, group) {
			t.Errorf("seed %d: first five %v, want each of %v", seed, first, group)
		}
		orders[strings.Join(first, ",")] = true
	}
	if len(orders) < 10 {
		t.Errorf("20 seeds gave only %d orders of five faults: %v", len(orders), orders)
	}
}
