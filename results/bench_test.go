package results

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/checkers/synth"
	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/history"
	"github.com/splitbrain/splitbrain/internal/browsertest"
)

// BenchmarkReport renders the report of synthetic runs (package synth, with
// one stale token accepted planted) of 10k, 100k and 1M events from their
// history in memory, as the harness hands it over once checked, and
// reports its size and, when Chromium is installed, the times from
// navigation to the page's first paint and to its script being done
// (targets for 1M events: under 5 MB and under 2 s to first paint).
func BenchmarkReport(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			dir, info, report, h := synthRun(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := WriteReport(dir, info, report, h); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			path := filepath.Join(dir, ReportFile)
			st, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(st.Size())/1e6, "report-MB")
			paint, ready := browsertest.OpenTimes(b, browsertest.Open(b), "file://"+path)
			b.ReportMetric(paint.Seconds()*1000, "paint-ms")
			b.ReportMetric(ready.Seconds()*1000, "ready-ms")
		})
	}
}

// synthRun makes a run of about n events and judges it with the real
// checkers, as a run would. It returns the run's folder, empty, and its
// history.
func synthRun(b *testing.B, n int) (string, Info, checkers.Report, []history.Event) {
	b.Helper()
	cfg := synth.Default()
	cfg.Events = n
	r, err := synth.Generate(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := r.Inject(synth.StaleAccepted, rand.New(rand.NewPCG(1, 2))); err != nil {
		b.Fatal(err)
	}
	promise, err := contract.ParsePromise("overlap-bound: " + cfg.Bound.String())
	if err != nil {
		b.Fatal(err)
	}
	report := checkers.Run(checkers.Input{
		History: r.History, Resource: r.Resource, Promise: promise, ObserveInterval: cfg.Interval,
	}, checkers.All(checkers.Options{RecoveryTimeout: cfg.Recovery}))
	info := Info{
		ID: fmt.Sprintf("synth-%d", n), Target: "synth", Promise: promise.String(), Seed: cfg.Seed,
		Config: Settings{Nodes: cfg.Nodes, ObserveInterval: cfg.Interval},
		Faults: checkers.Faults(r.History),
	}
	return b.TempDir(), info, report, r.History
}
