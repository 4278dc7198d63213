package suite

import (
	"cmp"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
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
		if rep.Valid == checkers.Invalid && len(r.May) > 0 && allIn(invalid, r.May) {
			return nil // a documented risk the row allows, and nothing else
		}
		if rep.Valid != checkers.Valid {
			return fmt.Errorf("want valid, got %s%s", rep.Valid, list(invalid))
		}
		return r.judgeFigures(rep)
	}
	if r.misses(rep) {
		return nil // a miss the row allows; Settle counts them
	}
	if rep.Valid != checkers.Invalid {
		return fmt.Errorf("want invalid by %s, got %s", r.byWords(), rep.Valid)
	}
	found := slices.ContainsFunc(r.By, func(c string) bool { return slices.Contains(invalid, c) })
	if !found || (!r.ByAny && !allIn(r.By, invalid)) {
		return fmt.Errorf("want invalid by %s, got invalid%s", r.byWords(), list(invalid))
	}
	for _, c := range invalid {
		if !slices.Contains(r.By, c) && !slices.Contains(r.May, c) {
			return fmt.Errorf("%s found a violation the row does not expect", c)
		}
	}
	return r.judgeFigures(rep)
}

// allIn says whether every one of names is in set.
func allIn(names, set []string) bool {
	for _, n := range names {
		if !slices.Contains(set, n) {
			return false
		}
	}
	return true
}

// judgeFigures checks the row's bounds on what the checkers measured.
func (r Row) judgeFigures(rep checkers.Report) error {
	bs, err := r.bounds()
	if err != nil {
		return err
	}
	for _, b := range bs {
		got, ok := rep.Checkers[b.checker].Figures[b.figure]
		if !ok {
			return fmt.Errorf("%s measured no %s", b.checker, b.figure)
		}
		if !b.holds(got) {
			return fmt.Errorf("%s.%s is %g, want %s %g", b.checker, b.figure, got, b.op, b.value)
		}
	}
	return nil
}

// A bound is one of a row's Figures: checker's figure compared with value.
type bound struct {
	checker, figure, op string
	value               float64
}

// compare are the comparisons a bound may make.
var compare = map[string]func(got, want float64) bool{
	">=": func(g, w float64) bool { return g >= w },
	"<=": func(g, w float64) bool { return g <= w },
	"==": func(g, w float64) bool { return g == w },
	">":  func(g, w float64) bool { return g > w },
	"<":  func(g, w float64) bool { return g < w },
}

func (b bound) holds(got float64) bool { return compare[b.op](got, b.value) }

// bounds parses the row's Figures, in the order of their names.
func (r Row) bounds() ([]bound, error) {
	names := checkerNames()
	var out []bound
	for _, key := range slices.Sorted(maps.Keys(r.Figures)) {
		checker, figure, ok := strings.Cut(key, ".")
		if !ok || figure == "" {
			return nil, fmt.Errorf("figures: %q: want checker.figure, such as availability.rejoin_disruptions", key)
		}
		if !slices.Contains(names, checker) {
			return nil, fmt.Errorf("figures: %q: unknown checker %q (the checkers: %s)", key, checker, strings.Join(names, ", "))
		}
		op, num, ok := strings.Cut(strings.TrimSpace(r.Figures[key]), " ")
		value, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if _, known := compare[op]; !ok || !known || err != nil {
			return nil, fmt.Errorf("figures: %s: %q: want a comparison (>=, <=, ==, >, <), a space and a number, such as \">= 3\"", key, r.Figures[key])
		}
		out = append(out, bound{checker: checker, figure: figure, op: op, value: value})
	}
	return out, nil
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
		Expect: c.Row.Expected(), Found: c.Row.Found, Command: c.Config.Command(), Seconds: took.Seconds(),
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
	case c.Row.misses(rep):
		rc.Outcome, rc.Message = results.Pass, missMessage(rep)
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

// misses says whether rep, on a row that needs only some of its runs to
// find the violation, did not find it: valid, or invalid by only the
// checkers the row's documented risk may make find one (may). A pass,
// unless Settle finds too many.
func (r Row) misses(rep checkers.Report) bool {
	if r.Expect != "invalid" || r.Found == 0 {
		return false
	}
	return rep.Valid == checkers.Valid || (rep.Valid == checkers.Invalid && len(r.May) > 0 && allIn(rep.Invalid(), r.May))
}

// missed ends the message of a run that misses (Row.misses), which
// Settle tells from the runs that found the violation by it.
const missed = "a miss the row allows, if enough of its runs found the violation"

// missMessage says why a run that misses passed.
func missMessage(rep checkers.Report) string {
	if rep.Valid == checkers.Valid {
		return "valid: " + missed
	}
	return "invalid by only " + strings.Join(rep.Invalid(), ", ") + ", which the row says may find one: " + missed
}

// Settle judges what no run can alone: a row that needs only some of its
// runs to find the violation (found) fails, each of its misses a failure,
// when fewer found it. Only a whole suite is settled: a shard holds some
// of a row's runs, and the merge of the shards settles them.
func Settle(s results.Suite) results.Suite {
	if s.Shard != "" {
		return s
	}
	type tally struct{ runs, hits, want int }
	rows := map[string]*tally{}
	for _, c := range s.Cases {
		if c.Found == 0 {
			continue
		}
		t := rows[c.Row]
		if t == nil {
			t = &tally{want: c.Found}
			rows[c.Row] = t
		}
		t.runs++
		if c.Outcome == results.Pass && !strings.HasSuffix(c.Message, missed) {
			t.hits++
		}
	}
	out := s
	out.Cases = slices.Clone(s.Cases)
	for i, c := range out.Cases {
		t := rows[c.Row]
		if t == nil || t.hits >= t.want || c.Outcome != results.Pass || !strings.HasSuffix(c.Message, missed) {
			continue
		}
		out.Cases[i].Outcome = results.Failure
		out.Cases[i].Message = fmt.Sprintf("%s: the row's runs found the violation in %d of %d, want at least %d", c.Verdict, t.hits, t.runs, t.want)
	}
	return out
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
