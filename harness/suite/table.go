package suite

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/splitbrain/splitbrain/results"
)

// Summary is the table a suite ends with: a line per row and nemesis
// list, with how many of its runs reached the expected verdict, and how
// soon the violations were found; then the totals.
func Summary(s results.Suite) string {
	type line struct {
		row, expect string
		runs, pass  int
		firsts      []float64
		outcomes    []string
	}
	var lines []*line
	byRow := map[string]*line{}
	failed, errored := 0, 0
	for _, c := range s.Cases {
		l := byRow[c.Row]
		if l == nil {
			l = &line{row: c.Row, expect: c.Expect}
			byRow[c.Row] = l
			lines = append(lines, l)
		}
		l.runs++
		switch c.Outcome {
		case results.Pass:
			l.pass++
		case results.Failure:
			failed++
		default:
			errored++
		}
		l.outcomes = append(l.outcomes, c.Outcome)
		if c.FirstViolation != nil {
			l.firsts = append(l.firsts, *c.FirstViolation)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-6s %-60s %-36s %s\n", "", "ROW", "EXPECTED", "FOUND")
	for _, l := range lines {
		mark := "ok"
		switch {
		case slices.Contains(l.outcomes, results.Failure):
			mark = "FAIL"
		case slices.Contains(l.outcomes, results.Error):
			mark = "ERROR"
		}
		fmt.Fprintf(&b, "%-6s %-60s %-36s %d/%d as expected; %s\n", mark, l.row, l.expect, l.pass, l.runs, Detection(l.firsts, l.runs))
	}
	name := s.Name
	if s.Shard != "" {
		name += " (shard " + s.Shard + ")"
	}
	fmt.Fprintf(&b, "suite %s: %d runs, %d as expected, %d failed, %d errors\n", name, len(s.Cases), len(s.Cases)-failed-errored, failed, errored)
	return b.String()
}

// Detection says in how many runs a violation was found and, when any,
// the median time from the start of the run to the first one.
func Detection(firsts []float64, runs int) string {
	if len(firsts) == 0 {
		return fmt.Sprintf("no violation in %d/%d runs", runs, runs)
	}
	slices.Sort(firsts)
	median := firsts[len(firsts)/2]
	if len(firsts)%2 == 0 {
		median = (firsts[len(firsts)/2-1] + median) / 2
	}
	s := fmt.Sprintf("violation in %d/%d runs, first after %.1f s", len(firsts), runs, median)
	if len(firsts) == 1 {
		return s
	}
	each := make([]string, len(firsts))
	for i, f := range firsts {
		each[i] = fmt.Sprintf("%.1f", f)
	}
	return s + " (median of " + strings.Join(each, ", ") + ")"
}

// cell is the row's entry in the catalogue's table.
func (r Row) cell() string {
	s := r.Expect
	if r.Expect == "invalid" {
		s = "**invalid**: " + r.byWords()
		if r.Found > 0 {
			s += fmt.Sprintf(" in %d+ of %d runs", r.Found, max(len(r.Seeds), r.Runs, 1))
		}
	}
	if len(r.May) > 0 {
		s += " (maybe " + strings.Join(r.May, ", ") + ")"
	}
	if len(r.Nemesis) > 0 {
		s += ", under " + strings.Join(r.Nemesis, ", ")
	}
	if r.Schedule != "" {
		s += ", under the schedule " + filepath.Base(r.Schedule)
	}
	bounds, _ := r.bounds() // checked by Load
	for _, b := range bounds {
		s += fmt.Sprintf(", %s %s %g", b.figure, b.op, b.value)
	}
	return s
}

// Table is the suite's table for people: a track record's (a file that
// lists bugs) by bug, as docs/bugs.md shows it; any other's by target
// and family (Markdown).
func (s *Suite) Table() string {
	if len(s.Bugs) > 0 {
		return s.bugsMarkdown()
	}
	return s.Markdown()
}

// Markdown renders a suite whose rows each name a family (the catalogue)
// as the table of targets/README.md: a line per target (and per way of
// running or judging it), a column per family.
func (s *Suite) Markdown() string {
	var (
		labels []string
		cells  = map[string]map[string]string{}
	)
	for _, r := range s.Rows {
		l := r.Label()
		if cells[l] == nil {
			labels = append(labels, l)
			cells[l] = map[string]string{}
		}
		// A family can have several rows (the family, and a fault of it
		// that must find something else): the cell shows each.
		if prev := cells[l][r.Family]; prev != "" {
			cells[l][r.Family] = prev + "; " + r.cell()
		} else {
			cells[l][r.Family] = r.cell()
		}
	}
	var b strings.Builder
	b.WriteString("| target | " + strings.Join(Families, " | ") + " |\n")
	b.WriteString("|---" + strings.Repeat("|---", len(Families)) + "|\n")
	for _, l := range labels {
		b.WriteString("| " + l)
		for _, f := range Families {
			b.WriteString(" | " + cmp.Or(cells[l][f], "–"))
		}
		b.WriteString(" |\n")
	}
	return b.String()
}
