package checkers

import (
	"strings"
	"testing"
)

// A run whose environment broke keeps its safety violations, but not the
// leaderless time the breakage made, and is never valid.
func TestBrokenReport(t *testing.T) {
	report := func(safety, availability Validity) Report {
		return Report{Valid: Merge(safety, availability), Checkers: map[string]Result{
			LeaderOverlapName: {Valid: safety},
			AvailabilityName:  {Valid: availability, Note: "from 20.5 s no node led"},
		}}
	}
	for _, c := range []struct {
		name                 string
		safety, availability Validity
		want                 Validity
	}{
		{"an overlap before the breakage stands", Invalid, Valid, Invalid},
		{"an overlap stands beside lost leaders", Invalid, Invalid, Invalid},
		{"leaders lost to the breakage prove nothing", Valid, Invalid, Unknown},
		{"nothing found proves nothing", Valid, Valid, Unknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := report(c.safety, c.availability)
			got := in.Broken("n2 was removed from outside splitbrain")
			if got.Valid != c.want || got.HarnessFailure == "" {
				t.Errorf("valid %s, failure %q; want %s", got.Valid, got.HarnessFailure, c.want)
			}
			if c.availability == Invalid {
				if a := got.Checkers[AvailabilityName]; a.Valid != Unknown || !strings.HasPrefix(a.Note, "not judged") || !strings.Contains(a.Note, "20.5 s") {
					t.Errorf("availability %s, note %q", a.Valid, a.Note)
				}
			}
			if in.Checkers[AvailabilityName].Valid != c.availability {
				t.Error("the report it was given changed")
			}
		})
	}
}

// A harness failure makes any verdict but invalid unknown, and says so.
func TestOutcome(t *testing.T) {
	for _, c := range []struct {
		valid         Validity
		failure       string
		want          Validity
		harnessFailed bool
	}{
		{Valid, "", Valid, false},
		{Invalid, "", Invalid, false},
		{Unknown, "", Unknown, false},
		{Valid, "n2 was removed", Unknown, true},
		{Unknown, "n2 was removed", Unknown, true},
		{Invalid, "n2 was removed", Invalid, false},
	} {
		got, failed := Report{Valid: c.valid, HarnessFailure: c.failure}.Outcome()
		if got != c.want || failed != c.harnessFailed {
			t.Errorf("%s, failure %q: outcome %s, harness failed %v; want %s, %v", c.valid, c.failure, got, failed, c.want, c.harnessFailed)
		}
	}
}

// The first violation is the earliest of those that stand; ties go by
// name, whatever the map's order.
func TestFirstViolation(t *testing.T) {
	at := func(valid Validity, vs ...Violation) Result { return Result{Valid: valid, Violations: vs} }
	rep := Report{Checkers: map[string]Result{
		AvailabilityName:  at(Unknown, Violation{Kind: "no-leader", Time: 1e9}), // a broken run's: does not stand
		StaleTokenName:    at(Invalid, Violation{Kind: "stale-token-accepted", Time: 3e9}),
		LeaderOverlapName: at(Invalid, Violation{Kind: "overlap", Time: 5e9}, Violation{Kind: "overlap", Time: 2e9}),
		LinearizableName:  at(Invalid, Violation{Kind: "stale-read", Time: 2e9}),
	}}
	for range 10 {
		c, v, ok := rep.FirstViolation()
		if !ok || c != LeaderOverlapName || v.Time != 2e9 {
			t.Fatalf("first violation %s %+v %v, want leader-overlap's at 2 s", c, v, ok)
		}
	}
	if c, v, ok := (Report{Checkers: map[string]Result{StaleTokenName: at(Valid)}}).FirstViolation(); ok {
		t.Errorf("a valid report's first violation: %s %+v", c, v)
	}
}
