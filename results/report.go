package results

import (
	"bufio"
	"cmp"
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/history"
)

var (
	//go:embed report.html.tmpl
	reportPage string
	//go:embed report.css
	reportCSS string
	//go:embed report.js
	reportJS string
)

var funcs = template.FuncMap{
	// A verdict reads in words, not only in colour.
	"verdict": checkers.Validity.String,
	"secs":    secs,
	"s":       func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + " s" },
	"css":     func() template.CSS { return template.CSS(reportCSS) },
	"js":      func() template.JS { return template.JS(reportJS) },
}

var reportTmpl = template.Must(template.New("report").Funcs(funcs).Parse(reportPage))

// page is what report.html.tmpl renders.
type page struct {
	Info     Info
	Config   Settings
	Nodes    []string
	Services []string          // the target's service containers, when faults hit them
	Verdict  checkers.Validity // the outcome (outcomeOf)
	// HarnessFailed says the harness's failure made the verdict unknown.
	HarnessFailed bool
	Word          string // the banner's: the verdict, or "harness failure"
	Headline      string
	Duration      string
	Checkers      []checkerRow
	Violations    []numbered
	Firsts        []numbered // each failing checker's earliest violation
	Windows       []numbered
	Timeline      timelineView
	Charts        []chartView
	Avail         availView
	Harness       harnessView
	Files         []fileLink
	CutShort      []history.CutShort // lines left out of the judgment
	// Replay carries out the run's schedule again: its schedule.json
	// with its settings ("" for a run of an older splitbrain, which has
	// none).
	Replay string
	// Shrunk is how `splitbrain shrink` found this run's schedule, in the
	// folder it ends with; Likelihood its plot.
	Shrunk     *Shrunk
	Likelihood template.HTML
}

type checkerRow struct {
	Name    string
	Valid   checkers.Validity
	Figures []figure
	Note    string
	Count   int // violations counted...
	Listed  int // ...and kept in results.json
}

type figure struct{ Name, Value string }

// numbered is a violation (or an allowed window) as the page lists it.
type numbered struct {
	checkers.Violation
	N       int
	ID      string // anchor: v3, w2
	Checker string
	Title   string // the kind in words
	Explain string // what it means
	Jump    jump
}

// jump is where a link moves the timeline: a range in ms and the mark to
// light up.
type jump struct {
	T0, T1 string
	Mark   string
}

// outcomeOf is the run's verdict as it is told (checkers.Report.Outcome),
// where the harness failure is also one that came before or during the
// judgment: run.json's error, which results.json cannot hold.
func outcomeOf(info Info, report checkers.Report) (verdict checkers.Validity, harnessFailed bool) {
	report.HarnessFailure = cmp.Or(report.HarnessFailure, info.Error)
	return report.Outcome()
}

// WriteReport renders report.html into a run's folder from info, the
// verdicts and h, the history they judged (nil: none was recorded or it
// could not be read). Beliefs and overlaps are drawn as the checkers found
// them (checkers.BeliefsOf); a million-event history is folded into what a
// screen can show.
func WriteReport(dir string, info Info, report checkers.Report, h []history.Event) error {
	cfg := info.Config
	var nodes []string
	for i := 1; i <= cfg.Nodes; i++ {
		nodes = append(nodes, fmt.Sprintf("n%d", i))
	}
	tl := buildTimeline(h, nodes, cfg.ObserveInterval)
	p := &page{Info: info, Config: cfg, CutShort: report.CutShort}
	p.Verdict, p.HarnessFailed = outcomeOf(info, report)
	// Lanes past the run's nodes are its other containers that faults hit
	// (a target's services).
	for _, n := range tl.Nodes {
		if len(nodes) > 0 && !slices.Contains(nodes, n) {
			p.Services = append(p.Services, n)
		} else {
			p.Nodes = append(p.Nodes, n)
		}
	}
	p.Word = p.Verdict.String()
	if p.HarnessFailed {
		p.Word = "harness failure"
	}
	p.Duration = duration(info, tl)
	p.Checkers = checkerRows(report)
	p.Violations, p.Windows = listViolations(report, tl)
	p.Firsts = firsts(p.Violations)
	p.Headline = headline(p)
	p.Timeline = timelineOf(tl, p.Violations)
	p.Charts = chartsOf(tl)
	p.Avail = availOf(info, cfg, report, tl)
	p.Harness = harnessOf(info)
	p.Files = files(dir)
	if _, err := os.Stat(filepath.Join(dir, ScheduleFile)); err == nil {
		abs, err := filepath.Abs(filepath.Join(dir, ScheduleFile))
		if err != nil {
			return err
		}
		p.Replay = ReplayCommand(cfg, abs)
	}
	shrunk, err := ReadShrunk(dir)
	if err != nil {
		return err
	}
	if shrunk != nil {
		p.Shrunk, p.Likelihood = shrunk, likelihoodPlot(shrunk.Likelihood)
	}
	return writeTemplate(filepath.Join(dir, ReportFile), reportTmpl, p)
}

// HasDetails says whether the page has notes or timings to show.
func (p *page) HasDetails() bool {
	return p.Info.Timings.Total > 0 || slices.ContainsFunc(p.Checkers, func(c checkerRow) bool { return c.Note != "" })
}

func duration(info Info, tl *timeline) string {
	switch {
	case info.Timings.Workload > 0:
		return fmt.Sprintf("%.1f s of workload, %.1f s in all", info.Timings.Workload, info.Timings.Total)
	case tl.End > 0:
		return fmt.Sprintf("%.1f s recorded", float64(tl.End)/1e9)
	}
	return "nothing recorded"
}

// checkerOrder lists checkers as the package orders them, others after.
func checkerOrder(report checkers.Report) []string {
	var names []string
	for _, c := range checkers.All(checkers.Options{}) {
		if _, ok := report.Checkers[c.Name]; ok {
			names = append(names, c.Name)
		}
	}
	var rest []string
	for name := range report.Checkers {
		if !slices.Contains(names, name) {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	return append(names, rest...)
}

func checkerRows(report checkers.Report) []checkerRow {
	var rows []checkerRow
	for _, name := range checkerOrder(report) {
		r := report.Checkers[name]
		row := checkerRow{Name: name, Valid: r.Valid, Note: r.Note, Listed: len(r.Violations), Count: len(r.Violations)}
		if n, ok := r.Figures["violations"]; ok {
			row.Count = max(row.Count, int(n))
		}
		keys := make([]string, 0, len(r.Figures))
		for k := range r.Figures {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			row.Figures = append(row.Figures, figureOf(k, r.Figures[k]))
		}
		rows = append(rows, row)
	}
	return rows
}

// figureOf names a figure in words, with its unit: total_s becomes
// "total" and seconds.
func figureOf(key string, v float64) figure {
	unit := ""
	switch {
	case strings.HasSuffix(key, "_s"):
		key, unit = strings.TrimSuffix(key, "_s"), " s"
	case strings.HasSuffix(key, "_ms"):
		key, unit = strings.TrimSuffix(key, "_ms"), " ms"
	}
	val := strconv.FormatFloat(v, 'f', 3, 64)
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		val = strconv.FormatInt(int64(v), 10)
	}
	return figure{Name: strings.ReplaceAll(key, "_", " "), Value: val + unit}
}

// kinds says in words what each kind of violation is and what it costs.
var kinds = map[string][2]string{
	"duplicate-token": {"Two nodes with one token",
		"Two different nodes claimed the same fencing token. The fence cannot tell their writes apart, so both could write as leader."},
	"token-regressed": {"A token went backwards",
		"A node claimed a lower token after a higher one. Tokens must only grow, or a fence lets an old leadership write again."},
	"overlap": {"Two leaders at once",
		"Two or more nodes believed they led at the same time, longer than the target promises."},
	"stale-token-accepted": {"Stale token accepted",
		"The resource accepted a write carrying a lower token than one it had already accepted for that key: a deposed leader overwrote what a newer leader wrote. A strict fence refuses this."},
	"token-of-another-node": {"Write under another node's token",
		"A write was accepted with a token that, as far as the history shows, only another node ever held."},
	"ok-not-accepted": {"Acknowledged but never done",
		"A node told the client its write succeeded, but the resource never accepted it: the client believes in data that does not exist."},
	"fail-but-accepted": {"Reported failed but done",
		"A node told the client its write failed, but the resource accepted it: a client that retries writes twice."},
	"not-linearizable": {"Not linearizable",
		"No order of the reads and writes on this key explains what they returned: some read saw a value it could not have seen if the register behaved like one fenced register. linearizability.html shows the operations."},
}

func kindTitle(kind string) (string, string) {
	if k, ok := kinds[kind]; ok {
		return k[0], k[1]
	}
	return strings.ReplaceAll(kind, "-", " "), ""
}

// listViolations numbers every stored violation, earliest first, and the
// windows the promise allows after them.
func listViolations(report checkers.Report, tl *timeline) (vs, ws []numbered) {
	for _, name := range checkerOrder(report) {
		r := report.Checkers[name]
		for _, v := range r.Violations {
			vs = append(vs, numbered{Violation: v, Checker: name})
		}
		for _, w := range r.Windows {
			ws = append(ws, numbered{Violation: w, Checker: name})
		}
	}
	for _, l := range []struct {
		list   []numbered
		prefix string
	}{{vs, "v"}, {ws, "w"}} {
		slices.SortStableFunc(l.list, func(a, b numbered) int { return cmp.Compare(a.Time, b.Time) })
		for i := range l.list {
			v := &l.list[i]
			v.N = i + 1
			v.ID = l.prefix + strconv.Itoa(v.N)
			v.Title, v.Explain = kindTitle(v.Kind)
			v.Jump = jumpTo(v.Time, tl)
			if l.prefix == "v" {
				v.Jump.Mark = "m" + strconv.Itoa(v.N)
			}
		}
	}
	return vs, ws
}

// jumpTo frames a moment: the overlap it lies in, if any, with a margin of
// time before and after so the reader sees what led up to it.
func jumpTo(at int64, tl *timeline) jump {
	for _, o := range tl.Overlaps {
		if o.From <= at && at <= o.To {
			return frame(o.span, tl.End)
		}
	}
	return frame(span{at, at}, tl.End)
}

// firsts picks each checker's earliest violation, for the banner: the
// reader sees every kind of trouble before scrolling.
func firsts(vs []numbered) []numbered {
	var out []numbered
	for _, v := range vs { // earliest first
		if !slices.ContainsFunc(out, func(o numbered) bool { return o.Checker == v.Checker }) {
			out = append(out, v)
		}
	}
	return out
}

// headline says the verdict in a sentence. A harness failure during the
// workload comes first: the history until then was judged, but a verdict
// other than invalid means nothing.
func headline(p *page) string {
	failed := ""
	switch {
	case p.Info.Error != "" && len(p.Checkers) == 0:
		return "The harness failed, so nothing was judged: " + p.Info.Error
	case p.HarnessFailed:
		return "The harness failed, so the run did not test what it planned; the history until then holds no violation, which proves nothing: " + p.Info.Error
	case p.Info.Error != "":
		failed = " The harness failed as well, and the violations found before it stand: " + p.Info.Error
	}
	return verdictLine(p) + failed
}

func verdictLine(p *page) string {
	var bad, unsure []string
	total := 0
	for _, c := range p.Checkers {
		switch c.Valid {
		case checkers.Invalid:
			total += c.Count
			bad = append(bad, fmt.Sprintf("%s %d", c.Name, c.Count))
		case checkers.Valid:
		default:
			unsure = append(unsure, c.Name)
		}
	}
	switch {
	case len(p.Checkers) == 0:
		return "No checker ran."
	case len(bad) > 0:
		return fmt.Sprintf("%d %s: %s.", total, plural(total, "violation", "violations"), strings.Join(bad, ", "))
	case len(unsure) > 0:
		return "No violation found, but " + strings.Join(unsure, ", ") + " could not decide."
	}
	return "No checker found a violation."
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// fileLink is a file of the run folder, linked from the report.
type fileLink struct {
	Path string
	Size string
	What string
}

func files(dir string) []fileLink {
	var out []fileLink
	for _, f := range []struct{ name, what string }{
		{HistoryFile, "every operation, leader observation and fault"},
		{ResourceFile, "the resource's decisions: ground truth about writes"},
		{ResultsFile, "every checker's verdict, machine-readable"},
		{RunFile, "config, seed, versions, timings"},
		{checkers.LinearizabilityFile, "porcupine's view of the operations that no order explains"},
	} {
		if st, err := os.Stat(filepath.Join(dir, f.name)); err == nil {
			out = append(out, fileLink{f.name, size(st.Size()), f.what})
		}
	}
	entries, _ := os.ReadDir(filepath.Join(dir, LogsDir))
	for _, e := range entries {
		if st, err := e.Info(); err == nil && !e.IsDir() {
			out = append(out, fileLink{LogsDir + "/" + e.Name(), size(st.Size()), "container log"})
		}
	}
	return out
}

func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f kB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func writeTemplate(path string, t *template.Template, data any) error {
	tmp := tempBeside(path)
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 256*1024)
	if err := t.Execute(w, data); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("%s: %v", filepath.Base(path), err)
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}
