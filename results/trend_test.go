package results

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/contract"
)

var night0 = time.Date(2026, 11, 20, 21, 4, 0, 0, time.UTC)

// nightly is run id of target raft, judged as exclusive, on the night-th
// night, with outcome.
func nightly(id string, night int, outcome string) trendRun {
	return trendRun{ID: id, Started: night0.AddDate(0, 0, night), Seed: uint64(night), Target: "raft", Promise: "exclusive",
		Resource: "fenced", Nemesis: "partition", Outcome: outcome, First: -1}
}

func ids(cells []trendCell) []string {
	var out []string
	for _, c := range cells {
		out = append(out, c.ID)
	}
	return out
}

func TestTrendGrouping(t *testing.T) {
	a := nightly("a", 0, "valid")
	b := nightly("b", 1, "valid")
	b.Nemesis = "partition, kill"
	c := nightly("c", 2, "valid")
	c.Target = "bully"
	d := nightly("d", 3, "valid")
	d.Resource = "unfenced"
	e := nightly("e", 4, "valid")
	e.Seed = 99 // the seed makes no row of its own
	rows := trends([]trendRun{e, d, c, b, a})
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%s: %s: %v", r.Target, r.Label, ids(r.Cells)))
	}
	want := []string{
		"bully: judged as exclusive; resource fenced; nemesis partition: [c]",
		"raft: judged as exclusive; resource fenced; nemesis partition: [a e]",
		"raft: judged as exclusive; resource fenced; nemesis partition, kill: [b]",
		"raft: judged as exclusive; resource unfenced; nemesis partition: [d]",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestTrendStripOldestFirst(t *testing.T) {
	var runs []trendRun
	for i := stripRuns + 9; i >= 0; i-- { // as Store.Runs lists them: newest first
		runs = append(runs, nightly(fmt.Sprintf("r%02d", i), i, "valid"))
	}
	rows := trends(runs)
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1", len(rows))
	}
	row := rows[0]
	if row.Runs != stripRuns+10 || len(row.Cells) != stripRuns {
		t.Fatalf("%d runs in %d cells, want %d in %d", row.Runs, len(row.Cells), stripRuns+10, stripRuns)
	}
	if first, last := row.Cells[0].ID, row.Cells[stripRuns-1].ID; first != "r10" || last != fmt.Sprintf("r%02d", stripRuns+9) {
		t.Errorf("the strip runs from %s to %s: want the newest %d, oldest first", first, last, stripRuns)
	}
	if want := "2026-11-30 21:04, seed 10: valid"; row.Cells[0].Title != want {
		t.Errorf("title %q, want %q", row.Cells[0].Title, want)
	}
}

// Runs the harness did not judge show in the strip but count neither for
// the rate nor for the change.
func TestTrendRateLeavesOutUnjudged(t *testing.T) {
	rows := trends([]trendRun{
		nightly("a", 0, "valid"),
		nightly("b", 1, outcomeFailed),
		nightly("c", 2, "invalid"),
		nightly("d", 3, outcomeInterrupted),
		nightly("e", 4, outcomeUnjudged),
		nightly("f", 5, "unknown"),
		nightly("g", 6, "invalid"),
	})
	row := rows[0]
	if row.Rate != "2/4 invalid" {
		t.Errorf("rate %q, want 2/4 invalid", row.Rate)
	}
	if got := ids(row.Cells); !slices.Equal(got, []string{"a", "b", "c", "d", "e", "f", "g"}) {
		t.Errorf("strip %v, want every run", got)
	}
	if row.Cells[1].Class != outcomeFailed || !strings.HasSuffix(row.Cells[1].Title, ": harness failed") {
		t.Errorf("a harness failure's cell is %+v", row.Cells[1])
	}
	if row.Change.Kind != "flaky" {
		t.Errorf("valid, invalid, unknown, invalid is %q, want flaky", row.Change.Kind)
	}
	if rows := trends([]trendRun{nightly("a", 0, outcomeFailed)}); rows[0].Rate != "0/0 invalid" || rows[0].Change.Kind != "" {
		t.Errorf("a row of a harness failure reads %q, %+v", rows[0].Rate, rows[0].Change)
	}
}

func TestTrendMedianFirstViolation(t *testing.T) {
	row := func(firsts ...int64) trendRow {
		runs := []trendRun{nightly("valid", 0, "valid")}
		runs[0].First = 1 // a valid run's windows are no violation: left out
		for i, f := range firsts {
			r := nightly(fmt.Sprint(i), i+1, "invalid")
			r.First = f
			runs = append(runs, r)
		}
		return trends(runs)[0]
	}
	for _, c := range []struct {
		firsts []int64
		want   string
	}{
		{nil, "–"},
		{[]int64{-1}, "–"}, // invalid, but no violation was stored
		{[]int64{9e9, 1e9, 3e9}, "3.000 s"},
		{[]int64{4e9, 1e9, -1, 2e9, 9e9}, "3.000 s"}, // the mean of the middle two
		{[]int64{2e9, 1e9}, "1.500 s"},
	} {
		if got := row(c.firsts...).Median; got != c.want {
			t.Errorf("median of %v is %q, want %q", c.firsts, got, c.want)
		}
	}
}

func TestTrendChange(t *testing.T) {
	for _, c := range []struct {
		name     string
		outcomes []string
		want     trendChange
	}{
		{"steady", []string{"valid", "valid", outcomeFailed, "valid"}, trendChange{}},
		{"a harness failure between is no change", []string{"invalid", outcomeFailed, "invalid", outcomeInterrupted}, trendChange{}},
		{"regression", []string{"valid", "valid", outcomeFailed, "invalid", "invalid"},
			trendChange{Kind: "changed", Text: "valid → invalid since 2026-11-23 21:04", Since: "r3"}},
		{"fix", []string{"invalid", "valid"},
			trendChange{Kind: "changed", Text: "invalid → valid since 2026-11-21 21:04", Since: "r1"}},
		{"flaky", []string{"valid", "invalid", "valid", "valid"},
			trendChange{Kind: "flaky", Text: "the verdict changed 2 times over 4 judged runs"}},
	} {
		var runs []trendRun
		for i, o := range c.outcomes {
			runs = append(runs, nightly(fmt.Sprintf("r%d", i), i, o))
		}
		if got := trends(runs)[0].Change; got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestTrendRunOf(t *testing.T) {
	info := Info{ID: "x", Target: "raft", Promise: "exclusive", Seed: 7, Started: night0}
	report := checkers.Report{Valid: checkers.Invalid, Checkers: map[string]checkers.Result{
		checkers.LeaderOverlapName: {Valid: checkers.Invalid, Violations: []checkers.Violation{{Time: 5e9}, {Time: 8e9}},
			Windows: []checkers.Violation{{Time: 1e9}}},
		checkers.StaleTokenName: {Valid: checkers.Invalid, Violations: []checkers.Violation{{Time: 3e9}}},
	}}
	row := indexRow{Info: info, Verdict: checkers.Invalid, Nemesis: "pause, kill", Resource: "unfenced"}
	want := trendRun{ID: "x", Started: night0, Seed: 7, Target: "raft", Promise: "exclusive", Resource: "unfenced",
		Nemesis: "pause, kill", Outcome: "invalid", First: 3e9}
	if got := trendRunOf(row, report, true); got != want {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	for _, c := range []struct {
		name   string
		change func(*indexRow)
		judged bool
		want   string
	}{
		{"harness failed", func(r *indexRow) { r.Verdict, r.HarnessFailed = checkers.Unknown, true }, true, outcomeFailed},
		{"harness failed after a violation", func(r *indexRow) { r.Info.Error = "harness failure: n3 was removed" }, true, "invalid"},
		{"interrupted", func(r *indexRow) { r.Info.Interrupted = true }, true, outcomeInterrupted},
		{"no results.json", func(*indexRow) {}, false, outcomeUnjudged},
	} {
		r := row
		c.change(&r)
		if got := trendRunOf(r, report, c.judged).Outcome; got != c.want {
			t.Errorf("%s: outcome %q, want %q", c.name, got, c.want)
		}
	}
}

// writeRun stores a run made without Docker: its run.json, and its
// results.json unless report is nil.
func writeRun(t *testing.T, s Store, info Info, report *checkers.Report) {
	t.Helper()
	dir, err := s.Create(info.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(filepath.Join(dir, RunFile), info); err != nil {
		t.Fatal(err)
	}
	if report != nil {
		if err := WriteJSON(filepath.Join(dir, ResultsFile), report); err != nil {
			t.Fatal(err)
		}
	}
}

// writtenIndex writes the index of s and returns its two parts: the trend
// and the list of runs below it.
func writtenIndex(t *testing.T, s Store) (trend, list string) {
	t.Helper()
	if err := WriteIndex(s); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(s.Root, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	top, runs := strings.Index(page, "<h2>trend over nights"), strings.Index(page, "<h2>splitbrain runs, newest first")
	if top < 0 || runs < top {
		t.Fatalf("the index has no trend above its runs:\n%s", page)
	}
	return page[top:runs], page[runs:]
}

func TestWriteIndexTrend(t *testing.T) {
	s := Store{Root: t.TempDir()}
	valid := &checkers.Report{Valid: checkers.Valid, Checkers: map[string]checkers.Result{checkers.StaleTokenName: {Valid: checkers.Valid}}}
	invalid := &checkers.Report{Valid: checkers.Invalid, Checkers: map[string]checkers.Result{
		checkers.StaleTokenName: {Valid: checkers.Invalid, Violations: []checkers.Violation{{Kind: "stale-token-accepted", Time: 4e9}}},
	}}
	config := Settings{Nemesis: []string{"pause", "kill"}, Resource: contract.Unfenced, TimeLimit: time.Minute}
	for i, r := range []struct {
		id     string
		report *checkers.Report
		err    string
	}{
		{"n0", valid, ""},
		{"n1", nil, "n3 never became healthy"},
		{"n2", invalid, ""},
		{"n3", invalid, ""},
	} {
		writeRun(t, s, Info{ID: r.id, Target: "raft", Promise: "exclusive", Seed: uint64(100 + i), Started: night0.AddDate(0, 0, i),
			Config: config, Error: r.err}, r.report)
	}
	trend, _ := writtenIndex(t, s)
	for _, want := range []string{
		"<td>raft</td><td>judged as exclusive; resource unfenced; nemesis pause, kill</td>",
		"<td>2/3 invalid</td>", "<td>4.000 s</td>",
		`<a href="n2/report.html">valid → invalid since 2026-11-22 21:04</a>`,
		`<a class="valid" href="n0/report.html" title="2026-11-20 21:04, seed 100: valid"`,
		`<a class="failed" href="n1/report.html" title="2026-11-21 21:04, seed 101: harness failed"`,
		`<a class="invalid" href="n2/report.html"`,
		`<a class="invalid" href="n3/report.html"`,
	} {
		if !strings.Contains(trend, want) {
			t.Errorf("the trend lacks %q", want)
		}
	}
}
