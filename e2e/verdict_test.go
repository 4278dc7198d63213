package e2e

import (
	"testing"

	"github.com/splitbrain/splitbrain/checkers"
)

// A row's verdicts are judged without Docker: what a run must reach, and
// what a known bug may turn.
func TestVerdictErrors(t *testing.T) {
	report := func(invalid ...string) checkers.Report {
		r := checkers.Report{Valid: checkers.Valid, Checkers: map[string]checkers.Result{}}
		for _, name := range []string{checkers.AvailabilityName, checkers.LeaderOverlapName, checkers.StaleTokenName} {
			r.Checkers[name] = checkers.Result{Valid: checkers.Valid}
		}
		for _, name := range invalid {
			r.Checkers[name] = checkers.Result{Valid: checkers.Invalid}
			r.Valid = checkers.Invalid
		}
		return r
	}
	valid := row{valid: checkers.Valid}
	caught := row{valid: checkers.Invalid, checkers: map[string]checkers.Validity{checkers.LeaderOverlapName: checkers.Invalid}}
	excused := []string{checkers.LeaderOverlapName, checkers.AvailabilityName}
	for _, c := range []struct {
		name    string
		row     row
		report  checkers.Report
		excused []string
		errors  int
	}{
		{"valid as wanted", valid, report(), nil, 0},
		{"a violation where none may be", valid, report(checkers.LeaderOverlapName), nil, 1},
		{"a violation a known bug excuses", valid, report(checkers.LeaderOverlapName, checkers.AvailabilityName), excused, 0},
		{"one it excuses and one it does not", valid, report(checkers.LeaderOverlapName, checkers.StaleTokenName), excused, 1},
		{"caught by the checker it must be", caught, report(checkers.LeaderOverlapName), nil, 0},
		{"caught by another checker only", caught, report(checkers.StaleTokenName), nil, 1},
		{"not caught", caught, report(), nil, 2},
	} {
		if errs := c.row.verdictErrors(c.report, c.excused); len(errs) != c.errors {
			t.Errorf("%s: %d errors %q, want %d", c.name, len(errs), errs, c.errors)
		}
	}
}
