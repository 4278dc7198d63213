package results

import (
	_ "embed"
	"fmt"
	"html/template"
	"path/filepath"
	"strings"
	"sync"

	"github.com/splitbrain/splitbrain/checkers"
)

//go:embed index.html.tmpl
var indexPage string

var indexTmpl = template.Must(template.New("index").Funcs(funcs).Parse(indexPage))

// indexRow is one run in results/index.html.
type indexRow struct {
	Info Info
	// Verdict is the run's outcome; HarnessFailed says the harness's
	// failure made it unknown (outcomeOf).
	Verdict       checkers.Validity
	HarnessFailed bool
	Nemesis       string
	Resource      string
	Violations    int
	Duration      string
}

// indexData is what index.html.tmpl renders.
type indexData struct {
	Trends []trendRow
	Runs   []indexRow
}

// indexing makes a process's rewrites of an index one at a time, each
// reading the store after the last: a suite's runs end at once, and the
// index a slower rewrite read before a run ended must not be the last one
// written.
var indexing sync.Mutex

// WriteIndex rewrites results/index.html: the trend of each way of
// running a target over the stored runs, then the runs, newest first.
func WriteIndex(s Store) error {
	indexing.Lock()
	defer indexing.Unlock()
	runs, err := s.Runs()
	if err != nil {
		return err
	}
	rows := make([]indexRow, 0, len(runs))
	trendRuns := make([]trendRun, 0, len(runs))
	for _, info := range runs {
		// No results yet, or of a newer format: unknown.
		report, err := ReadResults(filepath.Join(s.Root, info.ID))
		judged := err == nil
		c := info.Config
		r := indexRow{Info: info, Nemesis: strings.Join(c.Nemesis, ", "), Resource: string(c.Resource), Duration: "-"}
		r.Verdict, r.HarnessFailed = outcomeOf(info, report)
		for _, c := range checkerRows(report) {
			r.Violations += c.Count
		}
		if info.Timings.Total > 0 {
			r.Duration = fmt.Sprintf("%.0f s", info.Timings.Total)
		}
		rows = append(rows, r)
		trendRuns = append(trendRuns, trendRunOf(r, report, judged))
	}
	return writeTemplate(filepath.Join(s.Root, IndexFile), indexTmpl, indexData{Trends: trends(trendRuns), Runs: rows})
}
