package results

import (
	"cmp"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
)

// timelineView is the leadership timeline as the page embeds it.
type timelineView struct {
	End        string // ms: the zoomable range is [0, End]
	Height     int
	Names      template.HTML // the row names column
	Plot       template.HTML // the zoomable SVG's content
	Overlay    template.HTML // its labels
	Resolution string
	Tokens     []tokenSwatch
	MoreTokens int
	Writes     [outcomes]int
	Events     int
}

type tokenSwatch struct {
	Token  int64
	Colour template.CSS
	Nodes  string
}

const (
	maxSwatches       = 24
	tokenLabelBuckets = 10
)

func timelineOf(tl *timeline, vs []numbered) timelineView {
	end := max(tl.End, int64(time.Millisecond))
	res := resolution(end, timelineBuckets)
	bars := mergeBars(tl.Bars, len(tl.Nodes), res)
	overlaps := mergeOverlaps(tl.Overlaps, res)
	idle := mergeSpans(tl.Leaderless, res)
	writes := writeRuns(tl.Ops, len(tl.Nodes), end, res)
	h := timelineHeight(len(tl.Nodes))
	lane := laneOf(tl.Nodes)

	var plot strings.Builder
	plot.WriteString(laneBackgrounds(len(tl.Nodes)))
	plot.WriteString(faultBands(tl.Faults, lane, h))
	plot.WriteString(leadersRow(leaderRuns(tl.Bars, end, res), overlaps, idle, tl.Nodes))
	plot.WriteString(`<g class="lanes">`)
	for i, n := range tl.Nodes {
		plot.WriteString(nodeLane(i, n, bars[i], writes[i]))
	}
	plot.WriteString(`</g>`)
	plot.WriteString(overlapMarks(overlaps, tl.Nodes))
	plot.WriteString(markLines(marksOf(vs, lane), h))

	var ls []label
	for _, f := range tl.Faults {
		ls = append(ls, label{span: f.span, Y: 12, Class: "flabel l-" + kindOf(f.Name),
			Text: f.Name + " " + strings.Join(f.Nodes, ","), Title: faultTitle(f)})
	}
	for _, v := range vs {
		ls = append(ls, label{span: span{v.Time, v.Time}, Y: 28, Class: "vnum",
			Text: fmt.Sprint(v.N), Href: "#" + v.ID, Title: v.Title + ": " + v.Message})
	}
	for i, bs := range bars {
		for _, b := range bs {
			// A bar narrower than a few buckets has room for its token only
			// far into a zoom; its tooltip says it meanwhile.
			if b.Token != 0 && b.To-b.From >= tokenLabelBuckets*res {
				ls = append(ls, label{span: b.span, Y: laneY(i) + barY + 12, Class: "tok", Text: fmt.Sprintf("t%d", b.Token)})
			}
		}
	}

	v := timelineView{
		End: ms(end), Height: h, Names: template.HTML(rowNames(tl.Nodes)),
		Plot: template.HTML(plot.String()), Overlay: template.HTML(labels(ls, end)),
		Resolution: time.Duration(res).String(), Events: tl.Events,
	}
	v.Tokens, v.MoreTokens = swatches(tl)
	for _, o := range tl.Ops {
		if o.Write {
			v.Writes[o.Kind]++
		}
	}
	return v
}

func laneOf(nodes []string) func(string) int {
	return func(n string) int { return slices.Index(nodes, n) }
}

func marksOf(vs []numbered, lane func(string) int) []mark {
	ms := make([]mark, 0, len(vs))
	for _, v := range vs {
		m := mark{N: v.N, At: v.Time, Title: fmt.Sprintf("%d. %s: %s", v.N, v.Title, v.Message)}
		for _, n := range v.Nodes {
			if l := lane(n); l >= 0 {
				m.Lanes = append(m.Lanes, l)
			}
		}
		ms = append(ms, m)
	}
	return ms
}

// swatches are the legend of token colours: each token and who held it.
func swatches(tl *timeline) ([]tokenSwatch, int) {
	holders := map[int64][]string{}
	var tokens []int64
	for _, b := range tl.Bars {
		if _, ok := holders[b.Token]; !ok {
			tokens = append(tokens, b.Token)
		}
		if n := tl.Nodes[b.Node]; !slices.Contains(holders[b.Token], n) {
			holders[b.Token] = append(holders[b.Token], n)
		}
	}
	slices.Sort(tokens)
	more := max(len(tokens)-maxSwatches, 0)
	tokens = tokens[:len(tokens)-more]
	out := make([]tokenSwatch, len(tokens))
	for i, t := range tokens {
		out[i] = tokenSwatch{Token: t, Colour: template.CSS(tokenColour(t)), Nodes: strings.Join(holders[t], ", ")}
	}
	return out, more
}

// chartView is one chart under the timeline, sharing its zoom.
type chartView struct {
	Title  string
	End    string
	Height int
	Names  template.HTML // y axis labels
	Plot   template.HTML
	Legend []legendItem
	Empty  bool
}

type legendItem struct{ Class, Text string }

const (
	chartH   = 120
	chartTop = 8
)

func chartsOf(tl *timeline) []chartView {
	end := max(tl.End, int64(time.Millisecond))
	res := max(resolution(end, chartBuckets), int64(100*time.Millisecond))
	stats := chartStats(tl.Ops, end, res)
	bands := faultBands(tl.Faults, func(string) int { return -1 }, chartH)
	return []chartView{throughputChart(stats, end, res, bands), latencyChart(stats, end, res, bands)}
}

// centre is a bucket's middle (the last one is cut short by the end of
// the run).
func centre(i int, res, end int64) int64 {
	from := int64(i) * res
	return (from + min(from+res, end)) / 2
}

func throughputChart(stats []bucketStats, end, res int64, bands string) chartView {
	// Per second of a whole bucket: the last, partial bucket reads a little
	// low rather than spiking.
	perSec := float64(res) / 1e9
	var top float64
	for _, s := range stats {
		for _, c := range s.count {
			top = max(top, float64(c)/perSec)
		}
	}
	top = niceCeil(max(top, 1))
	y := func(v float64) float64 { return chartTop + (1-v/top)*(chartH-chartTop-2) }
	lines := [...]struct {
		kind  outcome
		class string
		text  string
	}{{accepted, "s-ok", "ok"}, {failed, "s-fail", "failed"}, {unsure, "s-info", "indeterminate"}}
	var plot strings.Builder
	plot.WriteString(bands)
	plot.WriteString(gridLines([]float64{y(0), y(top / 2), y(top)}))
	c := chartView{Title: fmt.Sprintf("Throughput: completed operations per second, in %v buckets", time.Duration(res)),
		End: ms(end), Height: chartH}
	total := 0
	for _, l := range lines {
		pts := make([]point, len(stats))
		for i, s := range stats {
			pts[i] = point{centre(i, res, end), y(float64(s.count[l.kind]) / perSec)}
			total += s.count[l.kind]
		}
		plot.WriteString(polyline(l.class, pts))
		c.Legend = append(c.Legend, legendItem{l.class, l.text})
	}
	c.Plot, c.Empty = template.HTML(plot.String()), total == 0
	c.Names = yLabels([]float64{y(top), y(top / 2), y(0)}, []string{rate(top), rate(top / 2), "0"})
	return c
}

func rate(v float64) string { return fmt.Sprintf("%g/s", v) }

func latencyChart(stats []bucketStats, end, res int64, bands string) chartView {
	const lo = 0.1 // ms
	hi := 10.0
	for _, s := range stats {
		for !math.IsNaN(s.max) && s.max > hi {
			hi *= 10
		}
	}
	span := math.Log10(hi) - math.Log10(lo)
	y := func(v float64) float64 {
		if math.IsNaN(v) {
			return v
		}
		return chartTop + (1-(math.Log10(max(v, lo))-math.Log10(lo))/span)*(chartH-chartTop-2)
	}
	var ys []float64
	var names []string
	for d := hi; d >= lo*0.999; d /= 10 {
		ys = append(ys, y(d))
		names = append(names, latencyName(d))
	}
	var plot strings.Builder
	plot.WriteString(bands)
	plot.WriteString(gridLines(ys))
	c := chartView{Title: fmt.Sprintf("Latency, log scale, in %v buckets", time.Duration(res)), End: ms(end), Height: chartH, Empty: true}
	for _, l := range [...]struct {
		class, text string
		of          func(bucketStats) float64
	}{
		{"s-max", "slowest of all", func(s bucketStats) float64 { return s.max }},
		{"s-p99", "p99 of ok", func(s bucketStats) float64 { return s.p99 }},
		{"s-p50", "median of ok", func(s bucketStats) float64 { return s.p50 }},
	} {
		pts := make([]point, len(stats))
		for i, s := range stats {
			pts[i] = point{centre(i, res, end), y(l.of(s))}
			c.Empty = c.Empty && math.IsNaN(pts[i].Y)
		}
		plot.WriteString(polyline(l.class, pts))
		c.Legend = append(c.Legend, legendItem{l.class, l.text})
	}
	c.Plot, c.Names = template.HTML(plot.String()), yLabels(ys, names)
	return c
}

func latencyName(d float64) string {
	if d >= 1000 {
		return fmt.Sprintf("%g s", d/1000)
	}
	return fmt.Sprintf("%g ms", d)
}

func yLabels(ys []float64, names []string) template.HTML {
	var s svgb
	for i, y := range ys {
		// Centred on its rule, but never below the chart's bottom edge.
		s.f(`<text class="y" x="80" y="%.1f">%s</text>`, min(y+4, chartH-1), esc(names[i]))
	}
	return template.HTML(s.String())
}

// niceCeil is the smallest 1, 2 or 5 times a power of ten at least v.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// availView is the availability panel.
type availView struct {
	Checker *checkerRow // the availability checker's own verdict, if it ran
	Tiles   []tile
	Idle    idleSummary
	Faults  []faultRow
}

// tile is one of the panel's headline figures.
type tile struct{ Name, Value, Sub string }

type idleSummary struct {
	Threshold string
	Shown     []idleRow
	More      int
}

type idleRow struct {
	From, Length string
	Jump         jump
}

type faultRow struct {
	checkers.FaultEffect
	AtS, Healed, Failover string
	Jump                  jump
}

const maxIdleRows = 10

func availOf(info Info, cfg Settings, report checkers.Report, tl *timeline) availView {
	var a availView
	for _, row := range checkerRows(report) {
		if row.Name == checkers.AvailabilityName {
			a.Checker = &row
			a.Tiles = tiles(report.Checkers[row.Name].Figures)
		}
	}

	// Gaps shorter than two polls are the poll's own jitter, not an outage.
	threshold := 2 * cmp.Or(cfg.ObserveInterval, 50*time.Millisecond)
	a.Idle.Threshold = threshold.String()
	var idle []span
	for _, s := range tl.Leaderless {
		if s.To-s.From >= int64(threshold) {
			idle = append(idle, s)
		}
	}
	slices.SortStableFunc(idle, func(p, q span) int { return cmp.Compare(q.To-q.From, p.To-p.From) })
	a.Idle.More = max(len(idle)-maxIdleRows, 0)
	idle = idle[:len(idle)-a.Idle.More]
	slices.SortFunc(idle, func(p, q span) int { return cmp.Compare(p.From, q.From) })
	for _, s := range idle {
		a.Idle.Shown = append(a.Idle.Shown, idleRow{From: secs(s.From), Length: secs(s.To - s.From), Jump: frame(s, tl.End)})
	}

	for i, f := range info.Faults {
		r := faultRow{FaultEffect: f, AtS: secs(f.At), Healed: "never", Failover: "no new leader"}
		if f.HealMS >= 0 {
			r.Healed = fmt.Sprintf("%.0f ms", f.HealMS)
		}
		if f.After != "" {
			r.Failover = fmt.Sprintf("%s → %s in %.2f s", cmp.Or(f.Before, "none"), f.After, f.FailoverS)
		}
		to := tl.End
		if i < len(tl.Faults) {
			to = tl.Faults[i].To
		}
		r.Jump = frame(span{f.At, max(to, f.At)}, tl.End)
		a.Faults = append(a.Faults, r)
	}
	return a
}

// harnessView is the section on the harness's own timing: a row per kind
// of action the run timed.
type harnessView struct {
	Rows  []harnessRow
	Rules string
}

type harnessRow struct {
	What                 string
	Count, Late          int
	Median, Max, Longest string
}

func harnessOf(info Info) harnessView {
	t := info.HarnessTiming
	v := harnessView{Rules: checkers.LatenessRules(info.Config.ObserveInterval)}
	for _, k := range []struct {
		what string
		t    checkers.Timing
	}{
		{"container starts", t.Starts},
		{"fault injections", t.Injections},
		{"fault heals", t.Heals},
		{"the observer's answers: how late", t.Probes},
		{"the observer's silences", t.Silences},
		{fmt.Sprintf("gaps between operations issued (one asked every %s)", millis(t.AskedGapMS)), t.IssueGaps},
	} {
		if k.t.Count == 0 {
			continue
		}
		var longest []string
		for _, w := range k.t.Worst {
			longest = append(longest, strings.TrimPrefix(fmt.Sprintf("%s at %.3f s: %s", w.What, w.At, millis(w.MS)), " "))
		}
		v.Rows = append(v.Rows, harnessRow{What: k.what, Count: k.t.Count, Late: k.t.Late,
			Median: millis(k.t.MedianMS), Max: millis(k.t.MaxMS), Longest: strings.Join(longest, "; ")})
	}
	return v
}

// millis says a duration in ms as precisely as it matters.
func millis(ms float64) string {
	switch {
	case ms >= 10_000:
		return strconv.FormatFloat(ms/1000, 'f', 1, 64) + " s"
	case ms >= 10:
		return strconv.FormatFloat(ms, 'f', 0, 64) + " ms"
	}
	return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
}

// tiles picks the availability checker's headline figures, those it gave.
func tiles(f map[string]float64) []tile {
	s := func(k string) string { return strconv.FormatFloat(f[k], 'f', 3, 64) + " s" }
	has := func(keys ...string) bool {
		for _, k := range keys {
			if _, ok := f[k]; !ok {
				return false
			}
		}
		return true
	}
	var ts []tile
	if has("leaderless_s", "leaderless_periods", "leaderless_longest_s") {
		ts = append(ts, tile{"without a leader", s("leaderless_s"),
			fmt.Sprintf("in %.0f periods, the longest %s", f["leaderless_periods"], s("leaderless_longest_s"))})
	}
	if has("failovers", "failover_mean_s", "failover_max_s") && f["failovers"] > 0 {
		ts = append(ts, tile{"failover", s("failover_mean_s"),
			fmt.Sprintf("mean of %.0f, the slowest %s", f["failovers"], s("failover_max_s"))})
	}
	if has("elections_per_min", "elections", "storms") {
		ts = append(ts, tile{"elections per minute", strconv.FormatFloat(f["elections_per_min"], 'f', 1, 64),
			fmt.Sprintf("%.0f elections, %.0f storms", f["elections"], f["storms"])})
	}
	if has("rejoins", "rejoin_disruptions") && f["rejoins"] > 0 {
		ts = append(ts, tile{"rejoin disruptions", strconv.FormatFloat(f["rejoin_disruptions"], 'f', 0, 64),
			fmt.Sprintf("of %.0f rejoins: leaderships with a majority ended by nodes coming back", f["rejoins"])})
	}
	if has("write_availability", "writes_ok") {
		ts = append(ts, tile{"write availability", strconv.FormatFloat(100*f["write_availability"], 'f', 1, 64) + " %",
			fmt.Sprintf("%.0f writes ok of %.0f completed; %.0f sent to a node that did not lead", f["writes_ok"], f["writes_ok"]+f["writes_failed"]+f["writes_indeterminate"], f["writes_not_leader"])})
	}
	if has("recovery_s") {
		ts = append(ts, tile{"recovery", s("recovery_s"), "from the final heal to a single leader"})
	}
	return ts
}

// frame is a jump to a span with a little time on both sides.
func frame(s span, end int64) jump {
	pad := max(int64(time.Second), (s.To-s.From)/4)
	return jump{T0: ms(max(s.From-pad, 0)), T1: ms(min(s.To+pad, max(end, s.To)))}
}
