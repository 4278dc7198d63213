package targets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
)

func TestRepositoryCatalogue(t *testing.T) {
	all, err := List(".")
	if err != nil {
		t.Fatal(err)
	}
	c, err := LoadCatalogue(CatalogueFile, all)
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
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), c.Markdown()) {
		t.Errorf("targets/README.md does not hold the catalogue's table; `splitbrain catalogue --table` prints it:\n%s", c.Markdown())
	}
	s := c.Settings(Row{Target: "raft", RunSettings: RunSettings{TimeLimit: time.Minute}})
	if s.TimeLimit != time.Minute || s.Nodes != 5 || s.Resource != "strict" {
		t.Errorf("settings over defaults: %+v", s)
	}
}

func containsRow(c *Catalogue, target, family string) bool {
	for _, r := range c.Rows {
		if r.Target == target && r.Family == family && r.Promise == "" && r.Resource == "" {
			return true
		}
	}
	return false
}

func TestCatalogueErrors(t *testing.T) {
	known := []Manifest{{Name: "raft"}}
	for _, tc := range []struct{ row, want string }{
		{"{target: paxos, family: none, expect: valid}", "unknown target"},
		{"{target: raft, family: meteor, expect: valid}", "family"},
		{"{target: raft, family: kill, nemesis: [pause-leader], expect: valid}", "not of the kill family"},
		{"{target: raft, family: none, expect: maybe}", "want valid or invalid"},
		{"{target: raft, family: none, expect: invalid}", "(by)"},
		{"{target: raft, family: none, expect: valid, by: [stale-token]}", "names no checkers"},
		{"{target: raft, family: none, expect: valid, promise: always}", "unknown promise"},
		{"{target: raft, family: none, expect: valid, timelimit: 3s}", "field timelimit not found"},
		{"{target: raft, family: service, expect: valid}", "no fault of the service family reaches target raft"},
	} {
		path := filepath.Join(t.TempDir(), "c.yaml")
		os.WriteFile(path, []byte("rows:\n  - "+tc.row+"\n"), 0o644)
		if _, err := LoadCatalogue(path, known); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.row, err, tc.want)
		}
	}
}

func report(v checkers.Validity, invalid ...string) checkers.Report {
	rep := checkers.Report{Valid: v, Checkers: map[string]checkers.Result{"availability": {Valid: checkers.Valid}}}
	for i, c := range invalid {
		rep.Checkers[c] = checkers.Result{Valid: checkers.Invalid, Violations: []checkers.Violation{{Time: int64(i+2) * 1e9}}}
	}
	return rep
}

func TestJudge(t *testing.T) {
	valid := Row{Expect: "valid"}
	caught := Row{Expect: "invalid", By: []string{"leader-overlap"}, May: []string{"election-safety"}}
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
	} {
		err := tc.row.Judge(tc.rep)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v on %v: got %v, want %q", tc.row, Invalid(tc.rep), err, tc.want)
		}
	}
	if at, ok := FirstViolation(report(checkers.Invalid, "leader-overlap", "election-safety")); !ok || at != 2*time.Second {
		t.Errorf("first violation %v %v", at, ok)
	}
	if _, ok := FirstViolation(report(checkers.Valid)); ok {
		t.Error("a violation in a valid report")
	}
}
