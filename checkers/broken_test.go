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
			"leader-overlap": {Valid: safety},
			"availability":   {Valid: availability, Note: "from 20.5 s no node led"},
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
				if a := got.Checkers["availability"]; a.Valid != Unknown || !strings.HasPrefix(a.Note, "not judged") || !strings.Contains(a.Note, "20.5 s") {
					t.Errorf("availability %s, note %q", a.Valid, a.Note)
				}
			}
			if in.Checkers["availability"].Valid != c.availability {
				t.Error("the report it was given changed")
			}
		})
	}
}
