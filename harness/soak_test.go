package harness_test

import (
	"bytes"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/harness/harnesstest"
	"github.com/splitbrain/splitbrain/harness/record"
	"github.com/splitbrain/splitbrain/internal/browsertest"
	"github.com/splitbrain/splitbrain/results"
)

// The nightly soak in small: raft under every fault family, a fault every
// second, for two minutes. The controller's memory stays flat, the
// history grows at a steady rate, the verdict holds, nothing is left
// behind and the report opens. The hour-long figures are in
// docs/figures.md.
//
// The run is splitbrain's own binary in a process of its own, as a
// nightly job runs it: the resident memory of this test's process would
// count the other tests running beside it, and the race detector's shadow
// memory, which grows with every address any of them touches.
func TestShortSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("starts containers")
	}
	t.Parallel()
	// Compiled as `make build` compiles it (the Makefile's STATIC and
	// STATICFLAGS, which TestMakeCompilesAsImagesDo keeps to the images'
	// flags), so that this is a link of what the build cache holds, not a
	// compile.
	bin := filepath.Join(t.TempDir(), "splitbrain")
	build := exec.Command("go", "build", "-trimpath", harness.GoGCFlags, "-o", bin, "../cmd/splitbrain")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	resultsDir := t.TempDir()
	cmd := exec.Command(bin, "run", "--target", "raft", "--nodes", "5", "--nemesis", "partition,pause,kill,clock",
		"--nemesis-interval", "1s", "--time-limit", "2m", "--quiet-period", "2s", "--seed", "1", "--results", resultsDir)
	cmd.Dir = ".."
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("splitbrain run: %v\n%s", err, tailLines(b, 20))
	}
	out := storedRun(t, resultsDir)
	harnesstest.NothingLeft(t, out.Info.ID)
	if out.Report.Valid != checkers.Valid {
		t.Errorf("raft came back %s after the soak", out.Report.Valid)
	}
	// A fault a second is planned; restarts of killed nodes take
	// seconds, which delays the faults after them, as many as the
	// machine's Engine makes them: 60 and more on overlay2, 39 in a cold
	// CI on fuse-overlayfs, 14 to 16 at a load of 20-27, where one fault's
	// strike, hold and heal (five nodes killed and restarted) took over
	// 30 s. What this guards is a nemesis that keeps striking for the two
	// minutes, which a count would only tell on a quiet machine: some fault
	// was decided in each of the two minutes.
	for from := time.Duration(0); from < 2*time.Minute; from += time.Minute {
		if !slices.ContainsFunc(out.Info.Faults, func(f checkers.FaultEffect) bool {
			at := time.Duration(f.At)
			return from <= at && at < from+time.Minute
		}) {
			t.Errorf("no fault decided between %s and %s: %d faults in all", from, from+time.Minute, len(out.Info.Faults))
		}
	}

	samples := out.Info.Controller
	if len(samples) < 12 {
		t.Fatalf("%d samples of the controller's footprint, want one every 10 s", len(samples))
	}
	// Memory: past the first half minute, in which the heap finds its
	// size, resident memory grows less than 2 MB a minute. A history
	// kept in memory would grow 3-4 MB a minute at this rate.
	var steady []results.Sample
	for _, s := range samples {
		if s.At >= 30 {
			steady = append(steady, s)
		}
	}
	growth := harness.Fit(steady, func(s results.Sample) (float64, float64) { return s.At, s.RSSMB }) * 60
	if growth > 2 {
		t.Errorf("the controller's resident memory grew %.1f MB a minute: %v", growth, steady)
	}
	// The history: every 10 s past the first half minute gained events,
	// so the controller recorded throughout (the workload, the observer
	// and the nemesis all record through it; a stalled one records
	// nothing). How many is the workload's rate under that window's
	// faults on this machine's load, a figure and not a floor: a CI run
	// beside two other test packages gained 70 a second in one window
	// against a median of 273, while its nodes restarted. The first half
	// minute is left out, as it is for memory: the workload's connections
	// and the first election are in it.
	var rates []float64
	for i := 1; i < len(samples); i++ {
		if dt := samples[i].At - samples[i-1].At; samples[i-1].At >= 30 && dt >= 5 {
			rates = append(rates, float64(samples[i].Events-samples[i-1].Events)/dt)
		}
	}
	if len(rates) == 0 || slices.Min(rates) == 0 {
		t.Errorf("history events per second over each 10 s past the first half minute: %.0f, want events in every one", rates)
	}
	t.Logf("%d faults; resident memory %.1f MB at the end, growing %.2f MB a minute; history events per second over each 10 s: %.0f",
		len(out.Info.Faults), samples[len(samples)-1].RSSMB, growth, rates)

	srv := httptest.NewServer(http.FileServer(http.Dir(out.Dir)))
	defer srv.Close()
	ctx := browsertest.Open(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"+results.ReportFile), chromedp.WaitVisible(chromedp.CSS("#timeline svg.zoom"))); err != nil {
		t.Fatal(err)
	}
	if got := browsertest.Eval[string](t, ctx, `document.querySelector(".banner .word").textContent`); got != "valid" {
		t.Errorf("the report's banner says %q", got)
	}
}

// storedRun reads back the one run stored under root.
func storedRun(t *testing.T, root string) record.Outcome {
	t.Helper()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var out record.Outcome
	for _, e := range entries {
		if e.IsDir() && e.Type()&fs.ModeSymlink == 0 && out.Dir == "" {
			out.Dir = filepath.Join(root, e.Name())
		}
	}
	for file, v := range map[string]any{results.RunFile: &out.Info, results.ResultsFile: &out.Report} {
		if err := results.ReadJSON(filepath.Join(out.Dir, file), v); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	return out
}

// tailLines is the last n lines of b.
func tailLines(b []byte, n int) []byte {
	lines := bytes.SplitAfter(b, []byte("\n"))
	return bytes.Join(lines[max(0, len(lines)-n):], nil)
}
