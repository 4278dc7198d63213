package suite

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/results"
)

func load(t *testing.T, text string) *Suite {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nightly.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(path, repositoryTargets(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const nightly = `
defaults: {time_limit: 20s, seed: 10, runs: 2, nodes: 3}
rows:
  - {targets: [raft, bully], nemeses: ["partition", "pause,kill"], expect: valid}
  - {target: bully, family: partition, promise: exclusive, expect: invalid, by: [leader-overlap], seeds: [7], time_limit: 30s}
  - {target: raft, family: clock, expect: valid, runs: 1}
`

// A row is its targets x its nemesis lists x its seeds, in that order.
func TestCasesExpandRows(t *testing.T) {
	s := load(t, nightly)
	cases, err := s.Cases(Filter{}, Options{RepoRoot: "/repo", ResultsDir: "out"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i, c := range cases {
		if c.Index != i {
			t.Errorf("case %d has index %d", i, c.Index)
		}
		names = append(names, c.Name())
	}
	want := []string{
		"raft; partition; seed 10", "raft; partition; seed 11", "raft; pause,kill; seed 10", "raft; pause,kill; seed 11",
		"bully; partition; seed 10", "bully; partition; seed 11", "bully; pause,kill; seed 10", "bully; pause,kill; seed 11",
		"bully, judged as exclusive; partition; seed 7",
		"raft; clock; seed 10",
	}
	if !slices.Equal(names, want) {
		t.Fatalf("cases:\n got %q\nwant %q", names, want)
	}
	c := cases[8].Config
	if c.TimeLimit != 30*time.Second || c.Nodes != 3 || c.Promise != "exclusive" || c.TargetsRoot != "/repo/targets" || c.ResultsDir != "out" || c.StopOnViolation {
		t.Errorf("config of the invalid row: %+v", c)
	}
	if got, want := c.Command(), `splitbrain run --target=bully --promise="exclusive" --nodes=3 --nemesis=partition --time-limit=30s --quiet-period=10s --recovery-timeout=30s --resource=strict --seed=7`; got != want {
		t.Errorf("command:\n got %s\nwant %s", got, want)
	}

	// Overrides and filters.
	cases, err = s.Cases(Filter{Target: "bully", Expect: "invalid"}, Options{Seed: 100, Runs: 3, TimeLimit: time.Minute, StopOnViolation: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 1 || cases[0].Config.Seed != 7 || cases[0].Config.TimeLimit != time.Minute {
		t.Errorf("a row's own seeds stand: %+v", cases)
	}
	if c := cases[0].Config; !c.StopOnViolation || !slices.Equal(c.StopOn, []string{"leader-overlap"}) || !strings.HasSuffix(c.Command(), "--stop-on-violation --stop-on=leader-overlap") {
		t.Errorf("an invalid row stops at its checkers' violations: %v %v %s", c.StopOnViolation, c.StopOn, c.Command())
	}
	cases, _ = s.Cases(Filter{Family: "clock"}, Options{Seed: 100, Runs: 3, StopOnViolation: true})
	if len(cases) != 3 || cases[2].Config.Seed != 102 || !cases[0].Config.StopOnViolation || len(cases[0].Config.StopOn) != 0 {
		t.Errorf("--runs and --seed: %+v", cases)
	}
	if _, err := s.Cases(Filter{Target: "ring"}, Options{}); err == nil || !strings.Contains(err.Error(), `no row for target "ring"`) {
		t.Errorf("a filter keeping nothing: %v", err)
	}
}

// A row that needs only some of its runs to find the violation says so
// in each case, and cannot need more runs than it has.
func TestCasesFound(t *testing.T) {
	s := load(t, `
rows:
  - {target: bully, family: partition, promise: exclusive, expect: invalid, by: [leader-overlap], runs: 3, found: 2}
`)
	cases, err := s.Cases(Filter{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 3 || cases[0].Row.Found != 2 || cases[0].Row.Expected() != "invalid by leader-overlap in 2+ runs" {
		t.Errorf("%d cases, found %d, expected %q", len(cases), cases[0].Row.Found, cases[0].Row.Expected())
	}
	if _, err := s.Cases(Filter{}, Options{Runs: 1}); err == nil || !strings.Contains(err.Error(), "found 2: more than its 1 runs") {
		t.Errorf("--runs 1 under found 2: %v", err)
	}
}

// A row's faults bound its runs, over the defaults', but not a run with
// no faults to count; a time limit asked for replaces them.
func TestCasesFaults(t *testing.T) {
	s := load(t, `
defaults: {time_limit: 20s, faults: 4}
rows:
  - {target: raft, nemeses: ["kill", "none"], expect: valid}
  - {target: bully, family: kill, nemesis: [kill-leader], faults: 8, expect: valid}
`)
	cases, err := s.Cases(Filter{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, c := range cases {
		got = append(got, c.Config.Faults)
	}
	if !slices.Equal(got, []int{4, 0, 8}) {
		t.Errorf("faults %v, want 4 (the defaults'), 0 (none), 8 (the row's)", got)
	}
	if !strings.HasSuffix(cases[2].Config.Command(), "--faults=8") {
		t.Errorf("command %s", cases[2].Config.Command())
	}
	cases, _ = s.Cases(Filter{}, Options{TimeLimit: time.Minute})
	for _, c := range cases {
		if c.Config.Faults != 0 || c.Config.TimeLimit != time.Minute {
			t.Errorf("%s: %d faults, %s, want a minute's run", c.Name(), c.Config.Faults, c.Config.TimeLimit)
		}
	}
}

// A row with a schedule replays it on each of its seeds, within its time
// limit and not bounded by a count of faults; its name says the faults
// the schedule strikes.
func TestCasesReplayASchedule(t *testing.T) {
	dir := t.TempDir()
	schedule := `{"faults": [{"at_s": 3, "fault": "partition-one", "for_s": 2, "aim": 39}, {"at_s": 9, "fault": "partition-one", "for_s": 2, "aim": 39}]}`
	if err := os.WriteFile(filepath.Join(dir, "flap-one.json"), []byte(schedule), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "nightly.yaml")
	text := `
defaults: {time_limit: 20s, faults: 4}
rows:
  - {target: raft, family: partition, schedule: flap-one.json, time_limit: 30s, seeds: [1, 2], expect: valid, figures: {availability.rejoin_disruptions: "== 0"}}
  - {target: raft, family: kill, schedule: flap-one.json, expect: valid}
`
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, repositoryTargets(t)); err == nil || !strings.Contains(err.Error(), `nemesis "partition-one" is not of the kill family`) {
		t.Fatalf("a schedule of another family's faults: %v", err)
	}
	if err := os.WriteFile(path, []byte(strings.Split(text, "  - {target: raft, family: kill")[0]), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(path, repositoryTargets(t))
	if err != nil {
		t.Fatal(err)
	}
	cases, err := s.Cases(Filter{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 2 || cases[1].Name() != "raft; partition-one; seed 2" {
		t.Fatalf("cases %+v", cases)
	}
	c := cases[0].Config
	if c.Schedule != filepath.Join(dir, "flap-one.json") || c.Faults != 0 || c.TimeLimit != 30*time.Second {
		t.Errorf("config: schedule %q, %d faults, %s", c.Schedule, c.Faults, c.TimeLimit)
	}
	if !strings.Contains(c.Command(), "--schedule=") {
		t.Errorf("command %s", c.Command())
	}
}

// Shards split the cases between them: each case in exactly one.
func TestShardsPartitionTheSuite(t *testing.T) {
	cases, err := load(t, nightly).Cases(Filter{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= len(cases)+1; n++ {
		seen := map[int]int{}
		for i := 1; i <= n; i++ {
			shard := Shard(cases, i, n)
			if len(shard) < len(cases)/n || len(shard) > len(cases)/n+1 {
				t.Errorf("shard %d/%d holds %d of %d cases", i, n, len(shard), len(cases))
			}
			for _, c := range shard {
				seen[c.Index]++
			}
		}
		for _, c := range cases {
			if seen[c.Index] != 1 {
				t.Errorf("%d shards: case %d in %d of them", n, c.Index, seen[c.Index])
			}
		}
	}
	for _, bad := range []string{"3/2", "0/4", "1/0", "a/b", "1/2/3", "-1/2", "1 /2", ""} {
		if _, _, err := ParseShard(bad); err == nil {
			t.Errorf("shard %q accepted", bad)
		}
	}
	if i, n, err := ParseShard("2/4"); err != nil || i != 2 || n != 4 {
		t.Errorf("2/4: %d %d %v", i, n, err)
	}
}

func TestSummary(t *testing.T) {
	at := func(s float64) *float64 { return &s }
	s := results.Suite{Name: "nightly", Cases: []results.Case{
		{Row: "raft; partition", Expect: "valid", Outcome: results.Pass},
		{Row: "raft; partition", Expect: "valid", Outcome: results.Error},
		{Row: "bully; pause", Expect: "invalid by leader-overlap", Outcome: results.Pass, FirstViolation: at(3)},
		{Row: "bully; pause", Expect: "invalid by leader-overlap", Outcome: results.Failure},
	}}
	got := Summary(s)
	for _, want := range []string{
		"ERROR  raft; partition", "1/2 as expected; no violation in 2/2 runs",
		"FAIL   bully; pause", "invalid by leader-overlap", "1/2 as expected; violation in 1/2 runs, first after 3.0 s",
		"suite nightly: 4 runs, 2 as expected, 1 failed, 1 errors",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
}

// Runs of two targets take turns, the second target's list turned by
// one place so that their rows in the same place do not start together.
func TestInterleaveTakesTargetsInTurn(t *testing.T) {
	cases, err := load(t, nightly).Cases(Filter{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, c := range Interleave(cases) {
		got = append(got, c.Index)
	}
	// raft is cases 0-3 and 9, bully 4-8.
	if want := []int{0, 5, 1, 6, 2, 7, 3, 8, 9, 4}; !slices.Equal(got, want) {
		t.Errorf("started in the order %v, want %v", got, want)
	}
	if got := Interleave(nil); len(got) != 0 {
		t.Errorf("no cases: %v", got)
	}
}
