package suite

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/results"
	"github.com/splitbrain/splitbrain/targets"
)

const catalogue = "../../targets/catalogue.yaml"

func repositoryTargets(t *testing.T) []targets.Manifest {
	all, err := targets.List("../../targets")
	if err != nil {
		t.Fatal(err)
	}
	return all
}

func TestRepositoryCatalogue(t *testing.T) {
	all := repositoryTargets(t)
	c, err := Load(catalogue, all)
	if err != nil {
		t.Fatal(err)
	}
	// Every target, under every family.
	for _, m := range all {
		for _, f := range Families {
			if !m.Faces(f) {
				continue
			}
			if !containsRow(c, m.Name, f) {
				t.Errorf("no row for %s under %s", m.Name, f)
			}
		}
	}
	// The README shows the same table.
	readme, err := os.ReadFile("../../targets/README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), c.Markdown()) {
		t.Errorf("targets/README.md does not hold the catalogue's table; `splitbrain suite targets/catalogue.yaml --table` prints it:\n%s", c.Markdown())
	}
	s := c.Settings(Row{Target: "raft", Settings: Settings{TimeLimit: time.Minute}})
	if s.TimeLimit != time.Minute || s.Nodes != 5 || s.Resource != "strict" {
		t.Errorf("settings over defaults: %+v", s)
	}
}

func containsRow(c *Suite, target, family string) bool {
	for _, r := range c.Rows {
		if r.Target == target && r.Family == family && r.Promise == "" && r.Resource == "" {
			return true
		}
	}
	return false
}

// A bad suite is one line naming the file, the line and the reason.
func TestLoadErrors(t *testing.T) {
	known := []targets.Manifest{{Name: "raft"}}
	for _, tc := range []struct{ row, want string }{
		{"{target: paxos, family: none, expect: valid}", ":3: row 2: unknown target \"paxos\""},
		{"{target: raft, family: meteor, expect: valid}", ":3: row 2: family"},
		{"{target: raft, family: kill, nemesis: [pause-leader], expect: valid}", "not of the kill family"},
		{"{target: raft, family: kill, nemesis: [kill-service], expect: valid}", "not of the kill family"},
		{"{target: raft, nemesis: [meteor-strike], expect: valid}", ":3: row 2: unknown"},
		{"{target: raft, family: none, expect: maybe}", "want valid or invalid"},
		{"{target: raft, family: none, expect: invalid}", "(by)"},
		{"{target: raft, family: none, expect: invalid, by: [consensus]}", "unknown checker \"consensus\""},
		{"{target: raft, family: none, expect: valid, by: [stale-token]}", "names no checkers that must find"},
		{"{target: raft, family: none, expect: valid, may: [quorum]}", "unknown checker \"quorum\""},
		{"{target: raft, family: none, expect: valid, promise: always}", "unknown promise"},
		{"{target: raft, family: none, expect: valid, timelimit: 3s}", ":3: field timelimit not found"},
		{"{target: raft, family: service, expect: valid}", "no fault of the service family reaches target raft"},
		{"{target: raft, expect: valid}", "no faults"},
		{"{family: none, expect: valid}", "no target"},
		{"{target: raft, family: none, expect: valid, seeds: [1], runs: 2}", "not both"},
		{"{target: raft, family: none, expect: valid, target_dir: nowhere}", "target_dir"},
		{"{target: raft, schedule: nowhere.json, expect: valid}", "schedule: "},
		{"{target: raft, family: none, expect: valid, figures: {rejoin_disruptions: '>= 1'}}", "want checker.figure"},
		{"{target: raft, family: none, expect: valid, figures: {quorum.elections: '>= 1'}}", "unknown checker \"quorum\""},
		{"{target: raft, family: none, expect: valid, figures: {availability.elections: 'at least 1'}}", "want a comparison"},
		{"{target: raft, family: none, expect: valid, figures: {availability.elections: '>= many'}}", "want a comparison"},
		{"{target: raft, family: none, expect: valid, found: 1}", "found is for an invalid row"},
		{"{target: raft, family: none, expect: invalid, by: [stale-token], by_any: true}", "by_any is for an invalid row with two checkers"},
		{"{target: raft, family: none, expect: invalid, by: [stale-token], found: -1}", "found must not be negative"},
		{"{target: raft, family: none, expect: invalid, by: [stale-token], found: 1}", "give it runs or seeds"},
		{"[target: raft", ": did not find expected"},
	} {
		path := filepath.Join(t.TempDir(), "s.yaml")
		os.WriteFile(path, []byte("rows:\n  - {target: raft, family: none, expect: valid}\n  - "+tc.row+"\n"), 0o644)
		_, err := Load(path, known)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), path) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want one line starting with the file and holding %q", tc.row, err, tc.want)
		}
	}
}

// A suite spreads its runs over several engines unless it says it
// spreads their containers; anything else is refused.
func TestSpread(t *testing.T) {
	known := []targets.Manifest{{Name: "raft"}}
	for top, want := range map[string]Spread{"": SpreadRuns, "spread: runs\n": SpreadRuns, "spread: containers\n": SpreadContainers, "spread: sideways\n": ""} {
		path := filepath.Join(t.TempDir(), "s.yaml")
		os.WriteFile(path, []byte(top+"rows:\n  - {target: raft, family: none, expect: valid}\n"), 0o644)
		s, err := Load(path, known)
		switch {
		case want == "" && (err == nil || !strings.Contains(err.Error(), `spread must be runs or containers, not "sideways"`)):
			t.Errorf("%q: got %v, want refused", top, err)
		case want != "" && (err != nil || s.Spread != want):
			t.Errorf("%q: got %v, want %s", top, err, want)
		}
	}
}

// A --nemesis item is of its fault's family, or of the family it names.
func TestFamilyOf(t *testing.T) {
	for item, want := range map[string]string{
		"kill-leader": "kill", "kill-service-all": "service", "partition-service": "service",
		"clock-service": "clock", "partition-resource": "partition", "pause": "pause", "none": "none",
	} {
		if got := familyOf(item); got != want {
			t.Errorf("%s is of the %s family, want %s", item, got, want)
		}
	}
}

func report(v checkers.Validity, invalid ...string) checkers.Report {
	rep := checkers.Report{Valid: v, Checkers: map[string]checkers.Result{"availability": {Valid: checkers.Valid}}}
	for i, c := range invalid {
		rep.Checkers[c] = checkers.Result{Valid: checkers.Invalid, Violations: []checkers.Violation{{Time: int64(i+2) * 1e9, Message: c + " saw it"}}}
	}
	return rep
}

// measured is a valid report whose availability checker counted n
// rejoin disruptions.
func measured(n float64) checkers.Report {
	rep := report(checkers.Valid)
	rep.Checkers["availability"] = checkers.Result{Valid: checkers.Valid, Figures: map[string]float64{"rejoin_disruptions": n}}
	return rep
}

func TestJudge(t *testing.T) {
	valid := Row{Expect: "valid"}
	disrupted := Row{Expect: "valid", Figures: map[string]string{"availability.rejoin_disruptions": ">= 3"}}
	caught := Row{Expect: "invalid", By: []string{"leader-overlap"}, May: []string{"election-safety"}}
	sometimes := caught
	sometimes.Found = 1
	either := Row{Expect: "invalid", By: []string{"linearizable", "election-safety"}, ByAny: true}
	risky := Row{Expect: "valid", May: []string{"linearizable", "election-safety"}}
	for _, tc := range []struct {
		row  Row
		rep  checkers.Report
		want string // "" for as expected
	}{
		{valid, report(checkers.Valid), ""},
		{valid, report(checkers.Unknown), "want valid, got unknown"},
		{valid, report(checkers.Invalid, "stale-token"), "want valid, got invalid by stale-token"},
		{caught, report(checkers.Invalid, "leader-overlap"), ""},
		{caught, report(checkers.Invalid, "leader-overlap", "election-safety"), ""},
		{caught, report(checkers.Valid), "got valid"},
		{caught, report(checkers.Invalid, "election-safety"), "got invalid by election-safety"},
		{caught, report(checkers.Invalid, "leader-overlap", "stale-token"), "stale-token found a violation the row does not expect"},
		{sometimes, report(checkers.Valid), ""},
		{sometimes, report(checkers.Invalid, "leader-overlap"), ""},
		{sometimes, report(checkers.Unknown), "got unknown"},
		{sometimes, report(checkers.Invalid, "stale-token"), "got invalid by stale-token"},
		// Its documented risk alone, on a row that needs only some runs
		// to find the violation: a miss; on one whose every run must, not.
		{sometimes, report(checkers.Invalid, "election-safety"), ""},
		{either, report(checkers.Invalid, "election-safety"), ""},
		{either, report(checkers.Invalid, "linearizable", "election-safety"), ""},
		{either, report(checkers.Invalid, "stale-token"), "want invalid by linearizable or election-safety, got invalid by stale-token"},
		{risky, report(checkers.Valid), ""},
		{risky, report(checkers.Invalid, "linearizable", "election-safety"), ""},
		{risky, report(checkers.Invalid, "linearizable", "stale-token"), "want valid, got invalid by linearizable, stale-token"},
		{risky, report(checkers.Unknown), "want valid, got unknown"},
		{disrupted, measured(5), ""},
		{disrupted, measured(2), "availability.rejoin_disruptions is 2, want >= 3"},
		{disrupted, report(checkers.Valid), "availability measured no rejoin_disruptions"},
		{disrupted, report(checkers.Invalid, "stale-token"), "want valid, got invalid"},
	} {
		err := tc.row.Judge(tc.rep)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v on %v: got %v, want %q", tc.row, tc.rep.Invalid(), err, tc.want)
		}
	}
}

// A row that needs only some of its runs to find the violation fails,
// each of its misses a failure, when fewer did; its other runs and other
// rows keep their outcomes, and a shard is left to its merge.
func TestSettle(t *testing.T) {
	// A case as Record makes it: a pass that missed says so.
	run := func(row string, found int, outcome, verdict string) results.Case {
		c := results.Case{Row: row, Found: found, Outcome: outcome, Verdict: verdict}
		if outcome == results.Pass && verdict == "valid" && found > 0 {
			c.Message = missMessage(checkers.Report{Valid: checkers.Valid})
		}
		return c
	}
	// Invalid by a checker the row's risk may make find a violation, and
	// by nothing it must find: a miss too.
	risk := run("a", 1, results.Pass, "invalid")
	risk.Message = missMessage(checkers.Report{Valid: checkers.Invalid, Checkers: map[string]checkers.Result{checkers.LinearizableName: {Valid: checkers.Invalid}}})
	for _, tc := range []struct {
		name  string
		cases []results.Case
		shard string
		want  []string // the outcomes after
	}{
		{"one of three found it", []results.Case{
			run("a", 1, results.Pass, "valid"), run("a", 1, results.Pass, "invalid"), run("a", 1, results.Pass, "valid"),
		}, "", []string{results.Pass, results.Pass, results.Pass}},
		{"none of three", []results.Case{
			run("a", 1, results.Pass, "valid"), run("a", 1, results.Error, "unknown"), run("a", 1, results.Pass, "valid"),
			run("b", 0, results.Pass, "valid"),
		}, "", []string{results.Failure, results.Error, results.Failure, results.Pass}},
		{"one of two wanted", []results.Case{
			run("a", 2, results.Pass, "invalid"), run("a", 2, results.Pass, "valid"),
		}, "", []string{results.Pass, results.Failure}},
		{"a shard", []results.Case{run("a", 1, results.Pass, "valid")}, "1/2", []string{results.Pass}},
		{"a documented risk is no find", []results.Case{risk, run("a", 1, results.Pass, "valid")}, "", []string{results.Failure, results.Failure}},
		{"a documented risk beside a find", []results.Case{risk, run("a", 1, results.Pass, "invalid")}, "", []string{results.Pass, results.Pass}},
	} {
		before := slices.Clone(tc.cases)
		got := Settle(results.Suite{Shard: tc.shard, Cases: tc.cases})
		for i, c := range got.Cases {
			if c.Outcome != tc.want[i] {
				t.Errorf("%s: case %d is %s, want %s (%s)", tc.name, i, c.Outcome, tc.want[i], c.Message)
			}
			if c.Outcome == results.Failure && !strings.Contains(c.Message, "want at least") {
				t.Errorf("%s: case %d's message %q does not say how many were wanted", tc.name, i, c.Message)
			}
		}
		if !slices.Equal(tc.cases, before) {
			t.Errorf("%s: Settle changed the suite it was given", tc.name)
		}
	}
}

func TestDetection(t *testing.T) {
	for _, tc := range []struct {
		firsts []float64
		runs   int
		want   string
	}{
		{nil, 2, "no violation in 2/2 runs"},
		{[]float64{9}, 1, "violation in 1/1 runs, first after 9.0 s"},
		{[]float64{12, 6, 30}, 5, "violation in 3/5 runs, first after 12.0 s (median of 6.0, 12.0, 30.0)"},
		{[]float64{8, 6}, 2, "violation in 2/2 runs, first after 7.0 s (median of 6.0, 8.0)"},
	} {
		if got := Detection(tc.firsts, tc.runs); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

// Four runs at once, as make catalogue runs them, are always of four
// targets; a real system has no more of them than its share of the
// catalogue's runs (three etcd clusters never start side by side); and
// no more than two strike with faults of one family (three runs pausing
// and thawing containers at once stalled the Engine).
func TestCatalogueStartsTargetsApart(t *testing.T) {
	c, err := Load(catalogue, repositoryTargets(t))
	if err != nil {
		t.Fatal(err)
	}
	cases, err := c.Cases(Filter{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	runsOf := map[string]int{}
	for _, c := range cases {
		runsOf[c.System]++
	}
	if runsOf["etcd v3.6.16"] == 0 || runsOf["debian redis-server"] == 0 {
		t.Fatalf("runs by system: %v", runsOf)
	}
	started := Interleave(cases)
	const atOnce, ofAFamily = 4, 2
	for i := range started[:len(started)-atOnce+1] {
		targets, systems, families := map[string]bool{}, map[string]int{}, map[string]int{}
		for _, c := range started[i : i+atOnce] {
			if targets[c.Target] {
				t.Errorf("starts %d-%d hold %s twice", i+1, i+atOnce, c.Target)
			}
			targets[c.Target] = true
			systems[c.System]++
			families[c.Row.Family]++
		}
		for sys, n := range systems {
			if share := (atOnce*runsOf[sys] + len(cases) - 1) / len(cases); sys != "" && n > share {
				t.Errorf("starts %d-%d hold %d runs on %s, more than its share of %d", i+1, i+atOnce, n, sys, share)
			}
		}
		for f, n := range families {
			if f != "none" && n > ofAFamily {
				t.Errorf("starts %d-%d hold %d runs of the %s family", i+1, i+atOnce, n, f)
			}
		}
	}
}

// The track record loads, and docs/bugs.md shows its table.
func TestRepositoryBugs(t *testing.T) {
	b, err := Load("../../targets/bugs.yaml", repositoryTargets(t))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/bugs.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), b.Table()) {
		t.Errorf("docs/bugs.md does not hold the track record's table; `splitbrain suite targets/bugs.yaml --table` prints it:\n%s", b.Table())
	}
	cases, err := b.Cases(Filter{Bug: "CURATOR-696"}, Options{})
	if err != nil || len(cases) == 0 {
		t.Fatalf("the rows of CURATOR-696: %d, %v", len(cases), err)
	}
	for _, c := range cases {
		if c.Row.Bug != "CURATOR-696" {
			t.Errorf("--bug CURATOR-696 picked a row of %s", c.Row.Bug)
		}
	}
}

// A track record's bugs are each documented and run or explained, and
// each of its rows runs one of them.
func TestBugErrors(t *testing.T) {
	const bug = "  - {id: X-1, system: s, reference: r, mechanism: m, trigger: t, affected: a}\n"
	const row = "  - {bug: X-1, target: raft, family: none, expect: invalid, by: [stale-token]}\n"
	for _, tc := range []struct{ file, want string }{
		{"bugs:\n" + bug + "rows:\n" + row + "  - {target: raft, family: none, expect: valid}\n", "row 2: a track record's row names its bug"},
		{"bugs:\n" + bug + "rows:\n" + row + "  - {bug: X-2, target: raft, family: none, expect: valid}\n", `bug "X-2" is not among the file's bugs`},
		{"bugs:\n" + bug + bug + "rows:\n" + row, "bug X-1 is listed twice"},
		{"bugs:\n  - {id: X 1, system: s, reference: r, mechanism: m, trigger: t, affected: a}\nrows:\n" + row, "want one word"},
		{"bugs:\n  - {id: X-1, system: s, mechanism: m, trigger: t, affected: a}\nrows:\n" + row, "give system, reference"},
		{"bugs:\n" + bug + "  - {id: X-2, system: s, reference: r, mechanism: m, trigger: t, affected: a}\nrows:\n" + row, "bug X-2 has no row: say what was tried"},
		{"bugs:\n" + bug + "rows:\n  - {bug: X-1, target: raft, family: none, expect: valid}\n", "bug X-1: no row must find it"},
	} {
		path := filepath.Join(t.TempDir(), "bugs.yaml")
		os.WriteFile(path, []byte(tc.file), 0o644)
		_, err := Load(path, []targets.Manifest{{Name: "raft"}})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), path) || strings.Contains(err.Error(), "\n") {
			t.Errorf("got %v, want one line naming the file and holding %q:\n%s", err, tc.want, tc.file)
		}
	}
}
