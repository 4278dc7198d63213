package results

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"

	"github.com/splitbrain/splitbrain/nemesis"
)

// The report's plots are SVGs whose x axis is run time in milliseconds: the
// page zooms by changing their viewBox, so nothing is recomputed and no
// element is added on zoom. They are drawn with preserveAspectRatio="none"
// and every stroke is non-scaling (see report.css), so a one-event mark
// stays visible at any zoom. Text cannot be stretched, so labels live in an
// unscaled overlay, placed in percent of the visible range (data-t, data-t1
// in ms; report.js moves them).

// Rows of the timeline, in pixels from its top. The overlay draws fault
// labels and violation numbers above the leaders row.
const (
	leadersY  = 34 // the cluster row: who led, overlaps, nobody
	leadersH  = 12
	lanesY    = 52
	laneH     = 40
	barY      = 3 // a lane's belief bar
	barH      = 16
	writesY   = 23 // centre of a lane's first write row
	writeStep = 4
)

func timelineHeight(nodes int) int { return lanesY + nodes*laneH }

func laneY(i int) int { return lanesY + i*laneH }

// ms is a time in ns as the plots' x unit, to the microsecond.
func ms(ns int64) string {
	return strconv.FormatFloat(math.Round(float64(ns)/1e3)/1e3, 'f', -1, 64)
}

// pct places a time in percent of [0, end], for the overlay's first paint.
func pct(ns, end int64) string {
	if end <= 0 {
		return "0%"
	}
	return strconv.FormatFloat(math.Round(float64(ns)/float64(end)*1e5)/1e3, 'f', -1, 64) + "%"
}

// secs formats ns as seconds, as the checkers' messages do.
func secs(ns int64) string { return strconv.FormatFloat(float64(ns)/1e9, 'f', 3, 64) + " s" }

// tokenColour gives each token its own hue, consecutive tokens far apart
// (golden angle), squeezed out of the reds that mean trouble on the page;
// 0 (no token told) is grey.
func tokenColour(token int64) string {
	if token == 0 {
		return "#8c959f"
	}
	hue := 40 + math.Mod(float64(token)*137.508, 360)*280/360
	return fmt.Sprintf("hsl(%.0f,60%%,47%%)", hue)
}

// kindOf names the colour of the fault called name: its kind (kill,
// pause, partition, clock, packet), "other" for a name no fault has (a
// hand-written history's). The kind, not the --nemesis family: the plot
// shows what a fault did to the containers it hit, and a kill of a service
// is a kill there (silence, then a restart), where the service family
// would paint a kill, a pause and a partition alike.
func kindOf(name string) string {
	if f, ok := nemesis.Lookup(name); ok {
		return string(f.Kind)
	}
	return "other"
}

// svgb builds SVG markup; text is escaped by the caller through esc.
type svgb struct{ strings.Builder }

func (s *svgb) f(format string, args ...any) { fmt.Fprintf(&s.Builder, format, args...) }

func esc(s string) string { return html.EscapeString(s) }

// tip is a tooltip attribute. report.js shows it: a <title> element per
// mark made a browser take seconds to open a long run's report.
func tip(text string) string {
	if text == "" {
		return ""
	}
	return ` data-tip="` + esc(text) + `"`
}

// rect draws a time span [from, to] as a rectangle with a tooltip. A span
// of no length (one proof) gets a microsecond: a rect of width 0 is not
// drawn at all, not even its stroke, which keeps it visible.
func (s *svgb) rect(class, style string, from, to int64, y, h int, title string) {
	s.f(`<rect class="%s"`, class)
	if style != "" {
		s.f(` style="%s"`, style)
	}
	s.f(` x="%s" y="%d" width="%s" height="%d"%s/>`, ms(from), y, ms(max(to-from, 1000)), h, tip(title))
}

// faultBands shades each fault over the whole plot, and darker over the
// lanes of the nodes it touched (lane gives a node's lane, -1 for none).
func faultBands(faults []fault, lane func(string) int, height int) string {
	var s svgb
	s.WriteString(`<g class="faults">`)
	for _, f := range faults {
		title := faultTitle(f)
		class := "band f-" + kindOf(f.Name)
		s.rect(class, "", f.From, f.To, 0, height, title)
		for _, n := range f.Nodes {
			if i := lane(n); i >= 0 {
				s.rect(class+" hit", "", f.From, f.To, laneY(i), laneH, title)
			}
		}
	}
	s.WriteString("</g>")
	return s.String()
}

func faultTitle(f fault) string {
	t := fmt.Sprintf("%s: %s, from %s", f.Name, f.What, secs(f.From))
	if f.Healed {
		t += " until healed at " + secs(f.To)
	} else {
		t += ", never healed"
	}
	if f.Err != "" {
		t += " (error: " + f.Err + ")"
	}
	return t
}

// beliefBar is one drawn bar: merged intervals of one node and token.
type beliefBar struct {
	span
	Token  int64
	Merged int // intervals drawn as this bar
}

func barTitle(node string, b beliefBar) string {
	t := fmt.Sprintf("%s led with token %d from %s to %s", node, b.Token, secs(b.From), secs(b.To))
	if b.Token == 0 {
		t = fmt.Sprintf("%s led (token not told) from %s to %s", node, secs(b.From), secs(b.To))
	}
	if b.Merged > 1 {
		t += fmt.Sprintf(" (%d intervals, gaps shorter than the resolution left out)", b.Merged)
	}
	return t
}

// nodeLane draws one node: its belief bars and its writes, one row per
// outcome. writes[o] holds runs of time buckets with at least one write of
// that outcome.
func nodeLane(i int, node string, bars []beliefBar, writes [outcomes][]span) string {
	var s svgb
	s.f(`<g class="lane" data-node="%s" transform="translate(0,%d)">`, esc(node), laneY(i))
	for _, b := range bars {
		s.rect("bar", "color:"+tokenColour(b.Token), b.From, b.To, barY, barH, barTitle(node, b))
	}
	for o, runs := range writes {
		if len(runs) == 0 {
			continue
		}
		s.f(`<path class="w w%d" d="`, o)
		y := writesY + o*writeStep
		for _, r := range runs {
			s.f("M%s %dH%s", ms(r.From), y, ms(r.To))
		}
		s.WriteString(`"/>`)
	}
	s.WriteString("</g>")
	return s.String()
}

// laneBackgrounds stripes every other lane, under everything else.
func laneBackgrounds(nodes int) string {
	var s svgb
	for i := 1; i < nodes; i += 2 {
		s.f(`<rect class="lane-bg" x="-1e9" y="%d" width="2e9" height="%d"/>`, laneY(i), laneH)
	}
	return s.String()
}

// rowNames labels the timeline's rows, in a column of its own.
func rowNames(nodes []string) string {
	var s svgb
	s.f(`<text x="0" y="12">faults</text><text x="0" y="28">violations</text><text x="0" y="%d">leaders</text>`, leadersY+10)
	for i, n := range nodes {
		s.f(`<text class="node" x="0" y="%d">%s</text>`, laneY(i)+barY+13, esc(n))
		s.f(`<text class="sub" x="0" y="%d">writes</text>`, laneY(i)+writesY+10)
	}
	return s.String()
}

// leadersRow sums the lanes up: who led (runs from leaderRuns) in the
// token's colour, overlaps in red on top, and grey where nobody was proven
// to lead.
func leadersRow(runs []beliefBar, overlaps []overlap, idle []span, nodes []string) string {
	var s svgb
	s.WriteString(`<g class="leaders">`)
	for _, sp := range idle {
		s.rect("idle", "", sp.From, sp.To, leadersY, leadersH, "no node proven to lead from "+secs(sp.From)+" to "+secs(sp.To))
	}
	for _, b := range runs {
		s.rect("bar", "color:"+tokenColour(b.Token), b.From, b.To, leadersY, leadersH, "")
	}
	for _, o := range overlaps {
		s.rect("overlap", "", o.From, o.To, leadersY, leadersH, overlapTitle(o, nodes))
	}
	s.WriteString("</g>")
	return s.String()
}

func overlapTitle(o overlap, nodes []string) string {
	names := make([]string, len(o.Nodes))
	for i, n := range o.Nodes {
		names[i] = nodes[n]
	}
	return fmt.Sprintf("%s believed they led at once from %s to %s (%s)",
		strings.Join(names, ", "), secs(o.From), secs(o.To), secs(o.To-o.From))
}

// overlapMarks outlines each overlap on the lanes of its nodes.
func overlapMarks(overlaps []overlap, nodes []string) string {
	var s svgb
	s.WriteString(`<g class="overlaps">`)
	for _, o := range overlaps {
		title := overlapTitle(o, nodes)
		for _, n := range o.Nodes {
			s.rect("overlap", "", o.From, o.To, laneY(n)+barY-2, barH+4, title)
		}
	}
	s.WriteString("</g>")
	return s.String()
}

// mark is a violation drawn on the timeline: a numbered line across it and
// a tick on the lane of each node involved.
type mark struct {
	N     int
	At    int64
	Lanes []int
	Title string
}

func markLines(marks []mark, height int) string {
	var s svgb
	s.WriteString(`<g class="marks">`)
	for _, m := range marks {
		s.f(`<g id="m%d" class="mark"%s>`, m.N, tip(m.Title))
		s.f(`<path class="vline" d="M%s %dV%d"/>`, ms(m.At), leadersY, height)
		for _, l := range m.Lanes {
			s.f(`<path class="vnode" d="M%s %dV%d"/>`, ms(m.At), laneY(l)+barY-3, laneY(l)+barY+barH+3)
		}
		s.WriteString("</g>")
	}
	s.WriteString("</g>")
	return s.String()
}

// label is text in the unscaled overlay, anchored at a time (or, with To,
// kept inside a span while any of it is visible).
type label struct {
	span
	Y     int
	Class string
	Text  string
	Href  string
	Title string
}

func labels(ls []label, end int64) string {
	var s svgb
	for _, l := range ls {
		if l.Href != "" {
			s.f(`<a href="%s">`, esc(l.Href))
		}
		s.f(`<text class="%s" data-t="%s"`, l.Class, ms(l.From))
		if l.To > l.From {
			s.f(` data-t1="%s"`, ms(l.To))
		}
		s.f(` x="%s" y="%d"%s>%s</text>`, pct(l.From, end), l.Y, tip(l.Title), esc(l.Text))
		if l.Href != "" {
			s.WriteString("</a>")
		}
	}
	return s.String()
}

// point is one sample of a chart: x in ns, y in pixels from the top.
type point struct {
	X int64
	Y float64
}

// polyline draws a series; a NaN y breaks the line (no data there).
func polyline(class string, pts []point) string {
	var s svgb
	open := false
	for _, p := range pts {
		if math.IsNaN(p.Y) {
			if open {
				s.WriteString(`"/>`)
				open = false
			}
			continue
		}
		if !open {
			s.f(`<polyline class="%s" points="`, class)
			open = true
		} else {
			s.WriteByte(' ')
		}
		s.f("%s,%s", ms(p.X), strconv.FormatFloat(math.Round(p.Y*10)/10, 'f', -1, 64))
	}
	if open {
		s.WriteString(`"/>`)
	}
	return s.String()
}

// gridLines draws horizontal rules at the given heights.
func gridLines(ys []float64) string {
	var s svgb
	for _, y := range ys {
		s.f(`<path class="grid" d="M-1e9 %sH2e9"/>`, strconv.FormatFloat(y, 'f', -1, 64))
	}
	return s.String()
}
