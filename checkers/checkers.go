// Package checkers judges a run's history: pure functions from recorded events to verdicts.
//
// Checkers only read: they never modify the slices in their Input, so Run
// can give the same Input to all of them at once.
package checkers

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/history"
)

// Violation is one thing a checker proved wrong, with the evidence.
type Violation struct {
	Kind    string   `json:"kind"`             // e.g. "duplicate-token", "overlap", "stale-token-accepted"
	Message string   `json:"message"`          // one plain sentence a person can act on
	Time    int64    `json:"time"`             // ns since run start, where it happened (first proof)
	Events  []int64  `json:"events,omitempty"` // history event indices that prove it
	Seqs    []int64  `json:"seqs,omitempty"`   // resource decision seqs that prove it
	Nodes   []string `json:"nodes,omitempty"`
}

// Result is one checker's verdict.
type Result struct {
	Valid Validity `json:"valid"`
	// Figures are named counts and durations (durations in seconds).
	// Figures["violations"] counts every violation, also those not stored.
	Figures map[string]float64 `json:"figures"`
	// Violations holds the first maxStored violations, earliest first.
	Violations []Violation `json:"violations,omitempty"`
	// Windows holds findings worth showing that the promise allows, such as
	// leader overlap under a fenced promise: measured risk, not violations.
	Windows []Violation `json:"windows,omitempty"`
	// Note says how precise the result is, or why it is unknown.
	Note string `json:"note,omitempty"`
	// Files are documents the checker made for people to read, by file
	// name (such as linearizability.html). Checkers never write files: the
	// caller saves these next to the history.
	Files map[string][]byte `json:"-"`
}

// Input is everything a checker may look at.
type Input struct {
	History  []history.Event    // history.jsonl, in index order
	Resource []history.Decision // resource.jsonl: ground truth about writes
	Promise  contract.Promise   // what the target promises about overlap
	// ObserveInterval is how often the leader of every node was polled, or
	// pushed its unchanged belief: the precision of anything measured from
	// polled observations, and the beat of pushed ones.
	ObserveInterval time.Duration
}

// Checker is a named check, with what its callers need to know of it.
type Checker struct {
	Name string
	// Judges is whether the checker judges safety or liveness: a broken
	// run keeps the violations of the one, not of the other (Broken).
	Judges Property
	// Watchable says the checker's violations are facts about a prefix of
	// the history that no later event undoes, so that a run can judge its
	// history with it as it is written and stop at the first one.
	// Checkers that judge the run as a whole (linearizability, recovery
	// after the final heal) are not.
	Watchable bool
	Check     func(Input) Result
	// Applies, if set, says whether the history holds anything for the
	// checker to judge; Run leaves out a checker that does not apply, so
	// a report holds no verdict on what no run could show.
	Applies func(Input) bool
}

// Property is what a checker judges.
type Property uint8

const (
	// Safety is that nothing bad happened: a violation is proved by what
	// was recorded, whatever happened to the run later.
	Safety Property = iota
	// Liveness is that something good happened (a leader was found
	// again): a violation can be the harness's doing when the run's
	// environment broke.
	Liveness
)

// The names of the checkers of All: the keys of Report.Checkers.
const (
	ElectionSafetyName = "election-safety"
	LeaderOverlapName  = "leader-overlap"
	StaleTokenName     = "stale-token"
	LinearizableName   = "linearizable"
	AvailabilityName   = "availability"
	DurabilityName     = "durability"
)

// Options tune the checkers that need a budget or a bound.
type Options struct {
	// CheckTimeout bounds the linearizability search; past it the result
	// is Unknown. Zero means DefaultCheckTimeout.
	CheckTimeout time.Duration
	// RecoveryTimeout is how soon after the final heal exactly one leader
	// must be seen. Zero means DefaultRecoveryTimeout.
	RecoveryTimeout time.Duration
}

// Defaults of Options.
const (
	DefaultCheckTimeout    = 60 * time.Second
	DefaultRecoveryTimeout = 30 * time.Second
)

func (o Options) withDefaults() Options {
	if o.CheckTimeout <= 0 {
		o.CheckTimeout = DefaultCheckTimeout
	}
	if o.RecoveryTimeout <= 0 {
		o.RecoveryTimeout = DefaultRecoveryTimeout
	}
	return o
}

// All returns the checkers of this package, in the order reports show them.
func All(opts Options) []Checker {
	opts = opts.withDefaults()
	return []Checker{
		{Name: ElectionSafetyName, Judges: Safety, Watchable: true, Check: ElectionSafety},
		{Name: LeaderOverlapName, Judges: Safety, Watchable: true, Check: LeaderOverlap},
		{Name: StaleTokenName, Judges: Safety, Watchable: true, Check: StaleToken},
		{Name: LinearizableName, Judges: Safety, Check: Linearizable(opts.CheckTimeout)},
		{Name: AvailabilityName, Judges: Liveness, Check: Availability(opts.RecoveryTimeout)},
		{Name: DurabilityName, Judges: Safety, Check: Durability, Applies: keepsOwnData},
	}
}

// keepsOwnData says the history holds operations on a target's own
// register.
func keepsOwnData(in Input) bool {
	return slices.ContainsFunc(in.History, func(e history.Event) bool { return isOwn(e.F) })
}

// Report is the verdict over all checkers: results.json's top level.
type Report struct {
	Valid    Validity          `json:"valid"`
	Checkers map[string]Result `json:"checkers"`
	// CutShort names the last line of a run's file that was left out of
	// the judgment because its writer was killed in the middle of it (a
	// controller killed mid-write): the complete lines were judged.
	CutShort []history.CutShort `json:"cut_short,omitempty"`
	// HarnessFailure says why the run's environment broke during its
	// workload (a container removed, a fault that could not be applied):
	// the history was judged up to then, and a verdict other than invalid
	// is unknown, since the run did not test what it planned.
	HarnessFailure string `json:"harness_failure,omitempty"`
}

// Broken is the report of a run whose environment broke during its
// workload, for reason. A safety violation recorded until then stands. A
// liveness one does not: once the harness lost containers, no leader is
// what it took away, not what the target did; the checker's result
// becomes unknown, its violations kept for the reader. Anything short of
// invalid is unknown: the run did not test what it planned.
func (r Report) Broken(reason string) Report {
	r.HarnessFailure = reason
	r.Checkers = maps.Clone(r.Checkers)
	for _, c := range All(Options{}) {
		if res, ok := r.Checkers[c.Name]; ok && c.Judges == Liveness && res.Valid == Invalid {
			res.Valid = Unknown
			res.Note = strings.TrimSpace("not judged: the run's environment broke, and what it took away is what the target could not recover from. " + res.Note)
			r.Checkers[c.Name] = res
		}
	}
	r.Valid = Valid
	for _, res := range r.Checkers {
		r.Valid = Merge(r.Valid, res.Valid)
	}
	if r.Valid != Invalid {
		r.Valid = Unknown
	}
	return r
}

// Outcome is the run's verdict as it is told: the checkers' one, except
// that a run whose harness failed (HarnessFailure) is unknown unless its
// history proves a violation, since it did not test what it planned.
// harnessFailed says that failure is why the verdict is unknown: the
// summary says "harness failure" then, and the exit code is the
// harness's.
func (r Report) Outcome() (verdict Validity, harnessFailed bool) {
	if r.HarnessFailure != "" && r.Valid != Invalid {
		return Unknown, true
	}
	return r.Valid, false
}

// FirstViolation is the earliest violation that stands, with the checker
// that found it: one of a checker that judged the run invalid, so not
// one a broken run's environment explains away (Broken). Of violations
// at the same time, the checker, then the kind, first in alphabetical
// order wins, so that the answer does not depend on map order. ok is
// false if there is none.
func (r Report) FirstViolation() (checker string, v Violation, ok bool) {
	for name, res := range r.Checkers {
		if res.Valid != Invalid {
			continue
		}
		for _, w := range res.Violations {
			if !ok || w.Time < v.Time || (w.Time == v.Time && (name < checker || name == checker && w.Kind < v.Kind)) {
				checker, v, ok = name, w, true
			}
		}
	}
	return checker, v, ok
}

// Invalid names the checkers that found a violation, sorted.
func (r Report) Invalid() []string {
	var out []string
	for name, res := range r.Checkers {
		if res.Valid == Invalid {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Run runs the checkers concurrently (they only read in) and merges their
// verdicts. A checker that panics is reported as Unknown with the panic in
// its Note rather than taking the analysis down: the other verdicts still
// stand. A name used twice gets " (2)", " (3)"... so no result is lost.
func Run(in Input, cs []Checker) Report {
	cs = slices.DeleteFunc(slices.Clone(cs), func(c Checker) bool { return c.Applies != nil && !c.Applies(in) })
	results := make([]Result, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() { results[i] = runOne(c, in) })
	}
	wg.Wait()

	rep := Report{Valid: Valid, Checkers: make(map[string]Result, len(cs))}
	for i, c := range cs {
		name := c.Name
		for n := 2; ; n++ {
			if _, taken := rep.Checkers[name]; !taken {
				break
			}
			name = fmt.Sprintf("%s (%d)", c.Name, n)
		}
		rep.Checkers[name] = results[i]
		rep.Valid = Merge(rep.Valid, results[i].Valid)
	}
	return rep
}

func runOne(c Checker, in Input) (r Result) {
	defer func() {
		if p := recover(); p != nil {
			r = Result{Valid: Unknown, Figures: map[string]float64{}, Note: fmt.Sprintf("the checker failed: %v", p)}
		}
	}()
	if c.Check == nil {
		return Result{Valid: Unknown, Figures: map[string]float64{}, Note: "the checker has no check function"}
	}
	r = c.Check(in)
	if r.Figures == nil {
		r.Figures = map[string]float64{}
	}
	return r
}
