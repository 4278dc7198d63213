package suite

import (
	"fmt"
	"slices"
	"strings"
)

// Bug is a documented bug of a real system, as a track record's suite
// file (targets/bugs.yaml) lists it: its rows (those that name it) run it
// at a version that has it, where each run must find it, and at the
// version that fixed it, where each must not.
type Bug struct {
	// ID is the tracker's name for it: CURATOR-696, patroni#2779.
	ID     string `yaml:"id"`
	System string `yaml:"system"`
	// Reference is where it is documented: the issue, the fix, the
	// analysis.
	Reference string `yaml:"reference"`
	// Mechanism says in a sentence how the system goes wrong; Trigger,
	// what makes it.
	Mechanism string `yaml:"mechanism"`
	Trigger   string `yaml:"trigger"`
	// Affected are the versions that have it; Fixed the first without it,
	// "" when no fix was released (or it is the system's design).
	Affected string `yaml:"affected"`
	Fixed    string `yaml:"fixed"`
	// Tried, for a bug no row reproduces, says what was tried and why it
	// did not show: a fault splitbrain lacks, a timing it cannot reach, a
	// report that is not a bug.
	Tried string `yaml:"tried"`
}

// validateBugs checks the suite's bugs and that each row's bug is one of
// them: a reproduced bug has a row that must find it, and a bug no row
// runs says what was tried.
func (s *Suite) validateBugs() error {
	seen := map[string]bool{}
	for i, b := range s.Bugs {
		switch {
		case b.ID == "" || strings.ContainsAny(b.ID, " \t"):
			return fmt.Errorf("%s: bug %d: id %q: want one word, as `make bugs BUG=<id>` takes it", s.path, i+1, b.ID)
		case seen[b.ID]:
			return fmt.Errorf("%s: bug %s is listed twice", s.path, b.ID)
		case b.System == "" || b.Reference == "" || b.Mechanism == "" || b.Trigger == "" || b.Affected == "":
			return fmt.Errorf("%s: bug %s: give system, reference, mechanism, trigger and affected", s.path, b.ID)
		}
		seen[b.ID] = true
		rows := s.bugRows(b.ID)
		caught := slices.ContainsFunc(rows, func(r Row) bool { return r.Expect == "invalid" })
		switch {
		case len(rows) == 0 && b.Tried == "":
			return fmt.Errorf("%s: bug %s has no row: say what was tried (tried)", s.path, b.ID)
		case len(rows) > 0 && !caught:
			return fmt.Errorf("%s: bug %s: no row must find it (expect: invalid)", s.path, b.ID)
		}
	}
	for i, r := range s.Rows {
		if r.Bug != "" && !seen[r.Bug] {
			return fmt.Errorf("%s:%d: row %d: bug %q is not among the file's bugs", s.path, r.line, i+1, r.Bug)
		}
		if len(s.Bugs) > 0 && r.Bug == "" {
			return fmt.Errorf("%s:%d: row %d: a track record's row names its bug", s.path, r.line, i+1)
		}
	}
	return nil
}

// bugRows are the rows that run bug id, in the file's order.
func (s *Suite) bugRows(id string) []Row {
	var out []Row
	for _, r := range s.Rows {
		if r.Bug == id {
			out = append(out, r)
		}
	}
	return out
}

// bugsMarkdown renders a track record's suite as docs/bugs.md's table: a
// line per bug with what its rows must find before and after its fix,
// what they found when last measured, and how to run them.
func (s *Suite) bugsMarkdown() string {
	var b strings.Builder
	b.WriteString("| bug | system | mechanism | trigger | affected | fixed | before the fix | after it | measured | run |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, bug := range s.Bugs {
		var before, after, measured []string
		for _, r := range s.bugRows(bug.ID) {
			cell := r.Label() + ": " + r.cell()
			if r.Expect == "invalid" {
				before = append(before, cell)
			} else {
				after = append(after, cell)
			}
			if r.Measured != "" {
				measured = append(measured, r.Label()+": "+r.Measured)
			}
		}
		run := fmt.Sprintf("`make bugs BUG=%s`", bug.ID)
		if len(before) == 0 {
			before, run = []string{"not reproduced: " + bug.Tried}, "–"
		}
		if len(after) == 0 {
			after = []string{"–"}
		}
		if len(measured) == 0 {
			measured = []string{"–"}
		}
		fixed := bug.Fixed
		if fixed == "" {
			fixed = "none"
		}
		fmt.Fprintf(&b, "| [%s](%s) | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			bug.ID, bug.Reference, bug.System, bug.Mechanism, bug.Trigger, bug.Affected, fixed,
			strings.Join(before, "; "), strings.Join(after, "; "), strings.Join(measured, "; "), run)
	}
	return b.String()
}
