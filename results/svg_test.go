package results

import (
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splitbrain/splitbrain/nemesis"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// golden compares got with testdata/name.golden, one element per line so a
// difference reads as a diff; -update rewrites the file.
func golden(t *testing.T, name, got string) {
	t.Helper()
	got = strings.ReplaceAll(got, "><", ">\n<") + "\n"
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from %s (go test -update rewrites it once the change is wanted):\n--- got\n%s--- want\n%s", name, path, got, want)
	}
}

const s = int64(1e9) // a second in ns

func TestSVGBlocks(t *testing.T) {
	nodes := []string{"n1", "n2", "n3"}
	lane := laneOf(nodes)
	for _, c := range []struct {
		name string
		svg  string
	}{
		{"fault_bands", faultBands([]fault{
			{span: span{10 * s, 15 * s}, Name: "pause-leader", What: "froze n2 (leader n2)", Nodes: []string{"n2"}, Healed: true},
			{span: span{20 * s, 30 * s}, Name: "partition-halves", What: "n1 | n2,n3", Nodes: []string{"n1", "n2", "n3"}, Err: "heal: sidecar gone"},
			{span: span{31 * s, 32 * s}, Name: "custom", What: "<odd> & \"quoted\"", Nodes: []string{"n9"}, Healed: true},
		}, lane, timelineHeight(len(nodes)))},
		{"node_lane", nodeLane(1, "n2", []beliefBar{
			{span: span{1 * s, 9*s + 500_000}, Token: 3, Merged: 1},
			{span: span{12 * s, 12 * s}, Token: 4, Merged: 1}, // one proof: drawn by its stroke
			{span: span{13 * s, 20 * s}, Token: 0, Merged: 7},
		}, [outcomes][]span{
			accepted: {{1 * s, 2 * s}, {3 * s, 3*s + 10_000_000}},
			unsure:   {{12 * s, 12*s + 10_000_000}},
		})},
		{"leaders_row", leadersRow(
			[]beliefBar{{span: span{1 * s, 9 * s}, Token: 3, Merged: 1}, {span: span{8 * s, 12 * s}, Token: 4, Merged: 1}},
			[]overlap{{span: span{8 * s, 9 * s}, Nodes: []int{0, 2}}},
			[]span{{0, 1 * s}, {12 * s, 13 * s}}, nodes)},
		{"overlap_marks", overlapMarks([]overlap{{span: span{8 * s, 9 * s}, Nodes: []int{0, 2}}}, nodes)},
		{"mark_lines", markLines([]mark{
			{N: 1, At: 8500 * 1e6, Lanes: []int{0, 2}, Title: "1. Stale token accepted: n1's write"},
			{N: 2, At: 30 * s, Title: "2. Not linearizable: no order"},
		}, timelineHeight(len(nodes)))},
		{"labels", labels([]label{
			{span: span{10 * s, 15 * s}, Y: 12, Class: "flabel l-pause", Text: "pause-leader n2", Title: "froze n2"},
			{span: span{8500 * 1e6, 8500 * 1e6}, Y: 28, Class: "vnum", Text: "1", Href: "#v1", Title: "Stale <token>"},
		}, 40*s)},
		{"polyline", polyline("s-p50", []point{{0, 10}, {s, 20.04}, {2 * s, math.NaN()}, {3 * s, 30}, {4 * s, 31}})},
		{"grid_lines", gridLines([]float64{8, 63.5, 118})},
		{"lane_backgrounds", laneBackgrounds(4)},
		{"row_names", rowNames([]string{"n1", "n<2>"})},
	} {
		t.Run(c.name, func(t *testing.T) { golden(t, c.name, c.svg) })
	}
}

func TestTokenColoursDiffer(t *testing.T) {
	seen := map[string]int64{}
	for tok := int64(1); tok <= 12; tok++ {
		c := tokenColour(tok)
		if other, ok := seen[c]; ok {
			t.Errorf("tokens %d and %d share the colour %s", other, tok, c)
		}
		seen[c] = tok
	}
	if tokenColour(0) != "#8c959f" {
		t.Errorf("no token is %s, want grey", tokenColour(0))
	}
}

func TestMsAndPct(t *testing.T) {
	for _, c := range []struct {
		ns   int64
		want string
	}{{0, "0"}, {1_500_000, "1.5"}, {1_234_567, "1.235"}, {60 * s, "60000"}} {
		if got := ms(c.ns); got != c.want {
			t.Errorf("ms(%d) = %s, want %s", c.ns, got, c.want)
		}
	}
	if got := pct(10*s, 40*s); got != "25%" {
		t.Errorf("pct = %s, want 25%%", got)
	}
	if got := pct(1, 0); got != "0%" {
		t.Errorf("pct of an empty run = %s, want 0%%", got)
	}
}

// A fault is coloured by what it does, a service's kill as a kill, and a
// name no fault has as other.
func TestFaultColourIsKind(t *testing.T) {
	for name, want := range map[string]string{
		"kill-service":           "kill",
		"pause-service-all":      "pause",
		"partition-service":      "partition",
		"clock-service":          "clock",
		"packet-delay":           "packet",
		"pause-process-one":      "pause-process",
		"restart-rolling":        "stop",
		"disk-full-leader":       "disk-fail",
		"disk-lose-unsynced-all": "disk-lose-unsynced",
		"pause":                  "other",
		"kill-":                  "other",
	} {
		if got := kindOf(name); got != want {
			t.Errorf("%s coloured %s, want %s", name, got, want)
		}
	}
}

// Every kind of fault has its colour, on the plot and in its labels.
func TestEveryKindHasAColour(t *testing.T) {
	for _, name := range nemesis.Names() {
		kind := kindOf(name)
		for _, class := range []string{".f-" + kind + "{", ".l-" + kind + "{"} {
			if !strings.Contains(reportCSS, class) {
				t.Errorf("%s: report.css has no %s", name, class)
			}
		}
	}
}
