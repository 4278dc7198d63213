package suite

import (
	"cmp"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/harness/record"
	"github.com/splitbrain/splitbrain/results"
)

// Judge compares a run's report with the row's expectation: nil when the
// verdict is the expected one.
func (r Row) Judge(rep checkers.Report) error {
	invalid := rep.Invalid()
	if r.Expect == "valid" {
		if rep.Valid != checkers.Valid {
			return fmt.Errorf("want valid, got %s%s", rep.Valid, list(invalid))
		}
		return nil
	}
	if rep.Valid != checkers.Invalid {
		return fmt.Errorf("want invalid by %s, got %s", strings.Join(r.By, ", "), rep.Valid)
	}
	for _, c := range r.By {
		if !slices.Contains(invalid, c) {
			return fmt.Errorf("want invalid by %s, got invalid%s", strings.Join(r.By, ", "), list(invalid))
		}
	}
	for _, c := range invalid {
		if !slices.Contains(r.By, c) && !slices.Contains(r.May, c) {
			return fmt.Errorf("%s found a violation the row does not expect", c)
		}
	}
	return nil
}

func list(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return " by " + strings.Join(names, ", ")
}

// Record is what case c's run came to, against what it had to find.
// err is the harness's failure, if the run failed.
func Record(c Case, out *record.Outcome, err error, took time.Duration) results.Case {
	rc := results.Case{
		Index: c.Index, Name: c.Name(), Row: c.RowName(), Target: c.Target,
		Expect: c.Row.Expected(), Command: c.Config.Command(), Seconds: took.Seconds(),
	}
	if out != nil {
		rc.Run = out.Info.ID
	}
	switch {
	case harness.IsEnvironment(err):
		rc.Outcome, rc.Message = results.Error, err.Error() // it says it is a harness failure
		return rc
	case err != nil:
		rc.Outcome, rc.Message = results.Error, "the harness failed: "+err.Error()
		return rc
	case out.Info.Interrupted:
		rc.Outcome, rc.Message = results.Error, "interrupted before its time limit"
		return rc
	}
	rep := out.Report
	rc.Verdict = rep.Valid.String()
	rc.StoppedEarly = out.Info.StoppedEarly != nil
	checker, first, found := rep.FirstViolation()
	if found {
		at := time.Duration(first.Time).Seconds()
		rc.FirstViolation = &at
	}
	judged := c.Row.Judge(rep)
	switch {
	case rep.Valid == checkers.Unknown:
		rc.Outcome, rc.Message = results.Error, "unknown: "+unknowns(rep)
	case judged == nil:
		rc.Outcome = results.Pass
	case found:
		rc.Outcome = results.Failure
		rc.Message = fmt.Sprintf("%v; first, %s at %.2f s: %s", judged, checker, time.Duration(first.Time).Seconds(), first.Message)
	default:
		rc.Outcome, rc.Message = results.Failure, judged.Error()+": no violation found"
	}
	return rc
}

// unknowns says which checkers could not decide, and why.
func unknowns(rep checkers.Report) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(rep.Checkers)) {
		if res := rep.Checkers[name]; res.Valid == checkers.Unknown {
			parts = append(parts, name+": "+res.Note)
		}
	}
	if len(parts) == 0 {
		return "no checker ran"
	}
	return strings.Join(parts, "; ")
}

// Single is the record of one `splitbrain run`, a suite of one run that
// must be valid, for its JUnit report.
func Single(cfg harness.Config, out *record.Outcome, err error, took time.Duration) results.Suite {
	target := cmp.Or(cfg.Target, filepath.Base(cfg.TargetDir))
	if out != nil {
		target = out.Info.Target
	}
	c := Case{Row: Row{Expect: "valid", Promise: cfg.Promise}, Target: target, Config: cfg}
	if cfg.Resource != contract.Strict {
		c.Row.Resource = string(cfg.Resource)
	}
	return results.Suite{Name: "run", Total: 1, Started: time.Now().Add(-took).UTC(), Cases: []results.Case{Record(c, out, err, took)}}
}
