package results

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/internal/browsertest"
	"github.com/splitbrain/splitbrain/nemesis"
)

// TestReportInBrowser opens a report in a real browser from a loopback
// server and checks what a reader relies on: the verdict, one lane per
// node, violation links that move the timeline, and that the page asks
// nothing of any other host.
func TestReportInBrowser(t *testing.T) {
	ctx := browsertest.Open(t)
	fx := makeFixture(t, t.TempDir(), 30_000)
	if err := WriteReport(fx.dir, fx.info, fx.report, fx.history); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(fx.dir)))
	defer srv.Close()

	var (
		mu         sync.Mutex
		requests   []string
		exceptions []string
	)
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			requests = append(requests, ev.Request.URL)
		case *runtime.EventExceptionThrown:
			msg := ev.ExceptionDetails.Text
			if x := ev.ExceptionDetails.Exception; x != nil {
				msg += " " + x.Description
			}
			exceptions = append(exceptions, msg)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/"+ReportFile),
		chromedp.WaitVisible(chromedp.CSS("#timeline svg.zoom")),
	); err != nil {
		t.Fatal(err)
	}

	if got := browsertest.Eval[string](t, ctx, `document.querySelector(".banner .word").textContent`); got != "invalid" {
		t.Errorf("the banner says %q, want invalid", got)
	}
	if got := browsertest.Eval[bool](t, ctx, `getComputedStyle(document.querySelector(".banner")).backgroundColor !== getComputedStyle(document.body).backgroundColor`); !got {
		t.Error("the banner has no colour of its own")
	}
	if got := browsertest.Eval[string](t, ctx, `[...document.querySelectorAll("#timeline g.lane")].map(l => l.dataset.node).join(",")`); got != "n1,n2,n3,n4,n5" {
		t.Errorf("timeline lanes %q, want one per node, n1 to n5", got)
	}
	if got := browsertest.Eval[int](t, ctx, `document.querySelectorAll(".violation").length`); got != len(fx.report.Checkers[checkers.StaleTokenName].Violations) {
		t.Errorf("%d violations listed, results.json holds %d", got, len(fx.report.Checkers[checkers.StaleTokenName].Violations))
	}

	// The second violation's link frames its moment and lights up its mark.
	const viewBox = `document.querySelector("#timeline svg.zoom").getAttribute("viewBox")`
	before := browsertest.Eval[string](t, ctx, viewBox)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#v2 a.jump`)), chromedp.Sleep(200*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	after := browsertest.Eval[string](t, ctx, viewBox)
	if after == before {
		t.Fatalf("the timeline did not move: viewBox %q before and after the click", before)
	}
	v2 := fx.report.Checkers[checkers.StaleTokenName].Violations[1]
	inView := browsertest.Eval[bool](t, ctx, `(() => { const [x, , w] = document.querySelector("#timeline svg.zoom").getAttribute("viewBox").split(" ").map(Number);
		const t = `+ms(v2.Time)+`; return x <= t && t <= x + w; })()`)
	if !inView {
		t.Errorf("after the click the timeline shows %q, not violation 2 at %s", after, secs(v2.Time))
	}
	if !browsertest.Eval[bool](t, ctx, `document.getElementById("m2").classList.contains("hl")`) {
		t.Error("violation 2's mark is not lit after its link was clicked")
	}
	if !browsertest.Eval[bool](t, ctx, `(() => { const r = document.getElementById("timeline").getBoundingClientRect(); return r.top >= -1 && r.top < innerHeight; })()`) {
		t.Error("the link did not bring the timeline into view")
	}

	// Pointing at a belief bar says who led with which token, and when.
	tipText := browsertest.Eval[string](t, ctx, `(() => {
		const bar = document.querySelector("#timeline g.lane .bar"), r = bar.getBoundingClientRect();
		bar.dispatchEvent(new MouseEvent("mousemove", {bubbles: true, clientX: r.left + r.width / 2, clientY: r.top + r.height / 2}));
		const tip = document.getElementById("tip");
		return tip.style.display === "none" ? "" : tip.textContent;
	})()`)
	if !strings.Contains(tipText, "led with token") {
		t.Errorf("pointing at a bar shows %q, want who led with which token", tipText)
	}

	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	saveArtifact(t, "report-after-jump.png", shot)

	mu.Lock()
	defer mu.Unlock()
	if len(requests) == 0 {
		t.Fatal("no request seen: the network listener is broken")
	}
	for _, u := range requests {
		if !strings.HasPrefix(u, srv.URL+"/") && !strings.HasPrefix(u, "data:") {
			t.Errorf("the report asked another host for %s", u)
		}
	}
	for _, e := range exceptions {
		t.Errorf("the page threw: %s", e)
	}
}

// saveArtifact keeps a file of the test's: in its artifact directory (go
// test -artifacts keeps it), and in $SPLITBRAIN_ARTIFACTS if CI gives one.
func saveArtifact(t *testing.T, name string, b []byte) {
	t.Helper()
	dirs := []string{t.ArtifactDir()}
	if d := os.Getenv("SPLITBRAIN_ARTIFACTS"); d != "" {
		dirs = append(dirs, filepath.Join(d, t.Name()))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(d, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
	}
}

// A shrunk run's report shows its minimal schedule beside the original,
// how often it reproduced, the command that replays it, and the
// likelihood plot, one point per cut.
func TestShrunkReportInBrowser(t *testing.T) {
	ctx := browsertest.Open(t)
	fx := makeFixture(t, t.TempDir(), 2_000)
	faults := []nemesis.Timed{
		{At: 1, Fault: "partition-ring", For: 4, Aim: 1, Nodes: []string{"n1", "n2"}},
		{At: 7, Fault: "kill-one", For: 1, Aim: 2},
		{At: 12, Fault: "pause-leader", For: 3, Aim: 3},
	}
	s := Shrunk{
		From: "/results/run", Violation: "leader-overlap/overlap",
		Original:   ShrunkSchedule{Faults: faults, Nodes: 5, TimeLimit: 60, Runs: 5, Reproduced: 5},
		Minimal:    ShrunkSchedule{Faults: faults[:1], Nodes: 3, TimeLimit: 6, Runs: 5, Reproduced: 4},
		Command:    "splitbrain run --target=raft --schedule=/results/shrunk/minimal.json",
		Likelihood: []Cut{{After: 0, Runs: 5, Failed: 0}, {After: 1, At: 5, Runs: 5, Failed: 4}},
		Candidates: 9, Replays: 30, Seconds: 600,
	}
	if err := WriteJSON(filepath.Join(fx.dir, ShrinkFile), s); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(filepath.Join(fx.dir, ScheduleFile), nemesis.Explicit{Faults: faults[:1]}); err != nil {
		t.Fatal(err)
	}
	if err := WriteReport(fx.dir, fx.info, fx.report, fx.history); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(fx.dir)))
	defer srv.Close()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/"+ReportFile),
		chromedp.WaitVisible(chromedp.CSS("#shrink svg.likelihood")),
	); err != nil {
		t.Fatal(err)
	}
	tables := browsertest.Eval[string](t, ctx, `[...document.querySelectorAll("#shrink table.schedule")].map(t => t.caption.textContent.split(":")[0] + "=" + (t.rows.length - 1)).join(",")`)
	if tables != "minimal=1,original=3" {
		t.Errorf("schedule tables %q, want the minimal's 1 fault beside the original's 3", tables)
	}
	if got := browsertest.Eval[int](t, ctx, `document.querySelectorAll("#shrink svg.likelihood circle.cut").length`); got != 2 {
		t.Errorf("%d points in the likelihood plot, want one per cut", got)
	}
	text := browsertest.Eval[string](t, ctx, `document.getElementById("shrink").textContent`)
	for _, want := range []string{"4 of 5", s.Command, "leader-overlap/overlap"} {
		if !strings.Contains(text, want) {
			t.Errorf("the shrink section does not say %q", want)
		}
	}
	if got := browsertest.Eval[bool](t, ctx, `document.querySelector("#shrink svg.likelihood").getBoundingClientRect().height > 50`); !got {
		t.Error("the likelihood plot is not drawn")
	}
	if got := browsertest.Eval[string](t, ctx, `document.querySelector("#summary").textContent`); !strings.Contains(got, "--schedule=") {
		t.Error("the summary says no replay command")
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	saveArtifact(t, "shrunk-report.png", shot)
}
