package results

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
)

// The trend over nights: the index groups the runs by how a target was run
// and judged, so that a verdict that flips from one night's seed to the
// next stands out, where the list of runs only shows it one run at a time.

// stripRuns is how many of a row's runs its strip shows, the newest: about
// two months of nightly runs, in a table cell's width.
const stripRuns = 60

// Outcomes of a run that has no verdict to count; a judged run's outcome
// is its verdict: "valid", "invalid" or "unknown".
const (
	outcomeFailed      = "failed"      // the harness failed, and no violation stands
	outcomeInterrupted = "interrupted" // stopped before it was judged
	outcomeUnjudged    = "unjudged"    // no results.json: still running, or its controller was killed
)

// trendDate is how the trend dates a run: to the minute, as a night's
// runs are told apart.
const trendDate = "2006-01-02 15:04"

// trendRun is what one run contributes to the trend.
type trendRun struct {
	ID      string
	Started time.Time
	Seed    uint64
	// The way of running the target, which makes the row; the seed and
	// the time limit are left out: the trend is over them.
	Target, Promise, Resource, Nemesis string
	// Outcome is the verdict of a judged run, or outcomeFailed,
	// outcomeInterrupted or outcomeUnjudged: the strip cell's class.
	Outcome string
	// First is the time of the earliest violation that stands
	// (checkers.Report.FirstViolation), ns since the run started; -1
	// when none was stored.
	First int64
}

// trendRow is one way of running a target, over the stored runs.
type trendRow struct {
	Target string
	Label  string // the promise, resource and nemeses that make the row
	Runs   int
	Cells  []trendCell // the newest stripRuns runs, oldest first
	Rate   string      // invalid runs of the judged ones: "3/5 invalid"
	// Median is the median time to the first violation of the invalid
	// runs; "–" when none has one.
	Median string
	Change trendChange
}

// trendCell is one run in a row's strip.
type trendCell struct {
	ID    string
	Class string // the outcome
	Title string // date, seed, verdict
}

// trendChange says whether a row's verdict changed between judged runs.
type trendChange struct {
	Kind string // "": steady (or nothing judged); "changed": once; "flaky": more often
	Text string
	// Since is the run from which a verdict that changed once holds.
	Since string
}

// trendRunOf is the run of an index row as the trend sees it, with report,
// its results.json; judged says whether that could be read.
func trendRunOf(row indexRow, report checkers.Report, judged bool) trendRun {
	r := trendRun{
		ID: row.Info.ID, Started: row.Info.Started, Seed: row.Info.Seed,
		Target: row.Info.Target, Promise: row.Info.Promise, Resource: row.Resource, Nemesis: row.Nemesis,
		Outcome: row.Verdict.String(), First: -1,
	}
	switch {
	case row.HarnessFailed:
		r.Outcome = outcomeFailed
	case row.Info.Interrupted:
		r.Outcome = outcomeInterrupted
	case !judged:
		r.Outcome = outcomeUnjudged
	}
	if _, v, ok := report.FirstViolation(); ok {
		r.First = v.Time
	}
	return r
}

// judged says whether a run counts for the rate and the change: its
// outcome is a verdict. Runs the harness did not judge say nothing about
// the target.
func (r trendRun) judged() bool {
	switch r.Outcome {
	case outcomeFailed, outcomeInterrupted, outcomeUnjudged:
		return false
	}
	return true
}

// trends groups runs into rows, sorted by target then label, each row's
// runs oldest first.
func trends(runs []trendRun) []trendRow {
	type way struct{ target, promise, resource, nemesis string }
	groups := map[way][]trendRun{}
	for _, r := range runs {
		w := way{r.Target, r.Promise, r.Resource, r.Nemesis}
		groups[w] = append(groups[w], r)
	}
	rows := make([]trendRow, 0, len(groups))
	for w, rs := range groups {
		slices.SortFunc(rs, func(a, b trendRun) int {
			return cmp.Or(a.Started.Compare(b.Started), cmp.Compare(a.ID, b.ID))
		})
		rows = append(rows, trendOf(w.target, trendLabel(w.promise, w.resource, w.nemesis), rs))
	}
	slices.SortFunc(rows, func(a, b trendRow) int {
		return cmp.Or(cmp.Compare(a.Target, b.Target), cmp.Compare(a.Label, b.Label))
	})
	return rows
}

// trendLabel names a way of running a target, in the words of a suite's
// rows.
func trendLabel(promise, resource, nemesis string) string {
	var parts []string
	if promise != "" {
		parts = append(parts, "judged as "+promise)
	}
	if resource != "" {
		parts = append(parts, "resource "+resource)
	}
	if nemesis != "" {
		parts = append(parts, "nemesis "+nemesis)
	}
	return strings.Join(parts, "; ")
}

// trendOf is the row of runs, sorted oldest first.
func trendOf(target, label string, runs []trendRun) trendRow {
	row := trendRow{Target: target, Label: label, Runs: len(runs), Median: "–"}
	for _, r := range runs[max(len(runs)-stripRuns, 0):] {
		row.Cells = append(row.Cells, trendCell{
			ID: r.ID, Class: r.Outcome,
			Title: fmt.Sprintf("%s, seed %d: %s", r.Started.Format(trendDate), r.Seed, outcomeWords(r.Outcome)),
		})
	}
	var judged, invalid []trendRun
	var firsts []int64
	for _, r := range runs {
		if !r.judged() {
			continue
		}
		judged = append(judged, r)
		if r.Outcome == checkers.Invalid.String() {
			invalid = append(invalid, r)
			if r.First >= 0 {
				firsts = append(firsts, r.First)
			}
		}
	}
	row.Rate = fmt.Sprintf("%d/%d invalid", len(invalid), len(judged))
	if len(firsts) > 0 {
		row.Median = secs(median(firsts))
	}
	row.Change = changeOf(judged)
	return row
}

func outcomeWords(outcome string) string {
	switch outcome {
	case outcomeFailed:
		return "harness failed"
	case outcomeUnjudged:
		return "not judged"
	}
	return outcome
}

// median of ns, which it sorts: the mean of the two middle values of an
// even count. (quantile's nearest rank would take the lower one, and a
// row of two nights would show its first night's time as the median.)
func median(ns []int64) int64 {
	slices.Sort(ns)
	m := len(ns) / 2
	if len(ns)%2 == 1 {
		return ns[m]
	}
	return ns[m-1] + (ns[m]-ns[m-1])/2
}

// changeOf says how the verdict of judged runs, oldest first, changed: a
// verdict that changed once is a regression or a fix, one that changed
// more often depends on the seed or on the night.
func changeOf(judged []trendRun) trendChange {
	var changes []int // where the verdict differs from the run before
	for i := 1; i < len(judged); i++ {
		if judged[i].Outcome != judged[i-1].Outcome {
			changes = append(changes, i)
		}
	}
	switch len(changes) {
	case 0:
		return trendChange{}
	case 1:
		from, to := judged[changes[0]-1], judged[changes[0]]
		return trendChange{Kind: "changed", Since: to.ID,
			Text: fmt.Sprintf("%s → %s since %s", from.Outcome, to.Outcome, to.Started.Format(trendDate))}
	}
	return trendChange{Kind: "flaky",
		Text: fmt.Sprintf("the verdict changed %d times over %d judged runs", len(changes), len(judged))}
}
