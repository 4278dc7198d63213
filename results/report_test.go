package results

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/history"
)

func TestWriteReportFixture(t *testing.T) {
	fx := makeFixture(t, t.TempDir(), 20_000)
	if err := WriteReport(fx.dir, fx.info, fx.report, fx.history); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(fx.dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		`<div class="word">invalid</div>`,
		fx.info.Command,
		`data-node="n1"`, `data-node="n5"`,
		`href="logs/resource.log"`, `href="history.jsonl"`, `href="results.json"`,
		`id="v1"`, `class="jump" href="#v1"`,
		"Stale token accepted",
		"pause-leader",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if strings.Contains(page, "linearizability.html") {
		t.Error("the report links linearizability.html, which the run does not have")
	}
	// The SVG namespace is a name, not an address; the browser test proves
	// that nothing is fetched.
	bare := strings.ReplaceAll(page, "http://www.w3.org/2000/svg", "")
	for _, bad := range []string{"http://", "https://", "src=", "@import", "url("} {
		if strings.Contains(bare, bad) {
			t.Errorf("the report refers to %q: it must be self-contained", bad)
		}
	}
}

func TestWriteReportFailedRun(t *testing.T) {
	judged := func(v checkers.Validity) checkers.Report {
		return checkers.Report{Valid: v, HarnessFailure: "n3 was removed", Checkers: map[string]checkers.Result{checkers.ElectionSafetyName: {Valid: v}}}
	}
	for _, c := range []struct {
		name   string
		err    string
		report checkers.Report
		want   []string
	}{
		{"before the workload", "n3 never became healthy", checkers.Report{},
			[]string{`<div class="word">harness failure</div>`, "nothing was judged: n3 never became healthy", "holds no events"}},
		{"during the workload, nothing found", "harness failure: n3 was removed", judged(checkers.Unknown),
			[]string{`<div class="word">harness failure</div>`, "did not test what it planned", "n3 was removed"}},
		{"during the workload, after a violation", "harness failure: n3 was removed", judged(checkers.Invalid),
			[]string{`<div class="word">invalid</div>`, "The harness failed as well, and the violations found before it stand: harness failure: n3 was removed"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			info := Info{ID: "failed", Target: "raft", Error: c.err}
			if err := WriteReport(dir, info, c.report, nil); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(filepath.Join(dir, ReportFile))
			for _, want := range c.want {
				if !strings.Contains(string(b), want) {
					t.Errorf("the report lacks %q", want)
				}
			}
		})
	}
}

func TestWriteIndexNewestFirst(t *testing.T) {
	root := t.TempDir()
	s := Store{Root: root}
	for i, id := range []string{"old", "new"} {
		dir, err := s.Create(id)
		if err != nil {
			t.Fatal(err)
		}
		info := Info{ID: id, Target: "raft", Promise: "overlap-bound: 2s", Seed: uint64(i), Started: time.Unix(int64(i)*100, 0),
			Config: Settings{Nemesis: []string{"pause", "kill"}, Resource: contract.Unfenced}, Timings: Timings{Total: 72}}
		if err := WriteJSON(filepath.Join(dir, RunFile), info); err != nil {
			t.Fatal(err)
		}
		rep := checkers.Report{Valid: checkers.Valid, Checkers: map[string]checkers.Result{checkers.StaleTokenName: {Valid: checkers.Valid}}}
		if id == "new" {
			rep = checkers.Report{Valid: checkers.Invalid, Checkers: map[string]checkers.Result{
				checkers.StaleTokenName: {Valid: checkers.Invalid, Figures: map[string]float64{"violations": 250}, Violations: make([]checkers.Violation, 100)},
			}}
		}
		if err := WriteJSON(filepath.Join(dir, ResultsFile), rep); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteIndex(s); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	// The trend above the list links the runs oldest first: the order is
	// the list's.
	list := page[strings.Index(page, "<h2>splitbrain runs, newest first"):]
	newRow, oldRow := strings.Index(list, `href="new/report.html"`), strings.Index(list, `href="old/report.html"`)
	if newRow < 0 || oldRow < 0 || newRow > oldRow {
		t.Fatalf("the index does not list new before old:\n%s", page)
	}
	for _, want := range []string{"<td>overlap-bound: 2s</td>", "<td>unfenced</td>", "pause, kill", `<span class="pill invalid">invalid</span>`, "<td>250</td>", "72 s"} {
		if !strings.Contains(page, want) {
			t.Errorf("the index lacks %q", want)
		}
	}
}

// A fault on a service container draws the service as a lane of its own,
// but the header counts only the nodes and names the services apart.
func TestWriteReportServiceLane(t *testing.T) {
	fx := makeFixture(t, t.TempDir(), 2_000)
	end := fx.history[len(fx.history)-1].Time
	fx.history = append(fx.history,
		history.Event{Index: int64(len(fx.history)), Time: end + 1, Sent: end, Type: history.Nemesis, Phase: history.Inject, F: "kill-service", Nodes: []string{"store"}, Value: "killed store"},
		history.Event{Index: int64(len(fx.history)) + 1, Time: end + 2, Sent: end + 1, Type: history.Nemesis, Phase: history.Heal, F: "kill-service", Nodes: []string{"store"}, Value: "killed store"},
	)
	if err := WriteReport(fx.dir, fx.info, fx.report, fx.history); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(fx.dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{`data-node="store"`, fmt.Sprintf("%d nodes,", fixtureNodes), "; services store</dd>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}

// The report shows the harness's own timing, each kind of action the run
// timed, with the late ones and the longest, and says what late means; a
// run that timed nothing (stored before it did) shows no such section.
func TestWriteReportHarnessTiming(t *testing.T) {
	fx := makeFixture(t, t.TempDir(), 2_000)
	fx.info.HarnessTiming = checkers.HarnessTiming{
		Starts: checkers.Timing{Count: 9, MedianMS: 310, MaxMS: 1240, Worst: []checkers.Took{{What: "etcd1", At: -3.2, MS: 1240}}},
		Heals: checkers.Timing{Count: 3, MedianMS: 400, MaxMS: 28_000, Late: 1, Worst: []checkers.Took{
			{What: "kill-service-majority", At: 6, MS: 28_000}, {What: "kill-service-majority", At: 2, MS: 400},
		}},
		Probes:     checkers.Timing{Count: 1200, MedianMS: 0.4, MaxMS: 35},
		AskedGapMS: 10,
	}
	if err := WriteReport(fx.dir, fx.info, fx.report, fx.history); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(fx.dir, ReportFile))
	page := string(b)
	for _, want := range []string{
		"<h2>The harness's own timing</h2>",
		"<td>container starts</td><td>9</td><td>310 ms</td><td>1240 ms</td><td></td><td class=\"small\">etcd1 at -3.200 s: 1240 ms</td>",
		"<td>fault heals</td><td>3</td><td>400 ms</td><td>28.0 s</td><td><span class=\"err\">1</span></td><td class=\"small\">kill-service-majority at 6.000 s: 28.0 s; kill-service-majority at 2.000 s: 400 ms</td>",
		"<td>the observer&#39;s answers: how late</td><td>1200</td><td>0.4 ms</td><td>35 ms</td>",
		"more than 3 times its usual time",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if strings.Contains(page, "fault injections") {
		t.Error("the report shows injections, which the run did not time")
	}
	fx.info.HarnessTiming = checkers.HarnessTiming{}
	if err := WriteReport(fx.dir, fx.info, fx.report, fx.history); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(fx.dir, ReportFile)); strings.Contains(string(b), `id="harness"`) {
		t.Error("a run that timed nothing has a section on the harness's timing")
	}
}

// Runs that end at once, as a suite's do, each point latest at
// themselves and rewrite the index without failing one another, and the
// index written last lists them all.
func TestRunsEndingAtOnceShareTheStore(t *testing.T) {
	s := Store{Root: t.TempDir()}
	const runs = 16
	var wg sync.WaitGroup
	errs := make([]error, runs)
	for i := range runs {
		wg.Go(func() {
			id := fmt.Sprintf("run%02d", i)
			writeRun(t, s, Info{ID: id, Target: "raft", Started: night0.Add(time.Duration(i) * time.Minute)}, nil)
			errs[i] = errors.Join(s.SetLatest(id), WriteIndex(s))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(s.Root, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	for i := range runs {
		if link := fmt.Sprintf(`href="run%02d/report.html"`, i); !strings.Contains(string(b), link) {
			t.Errorf("the index has no %s", link)
		}
	}
	if _, err := os.Readlink(filepath.Join(s.Root, LatestLink)); err != nil {
		t.Error(err)
	}
	left, _ := filepath.Glob(filepath.Join(s.Root, "*.tmp"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
