package results

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// BenchmarkReport renders the report of synthetic runs of 10k, 100k and 1M
// events and reports its size and, when Chromium is installed, the times
// from navigation to the page's first paint and to its script being done
// (targets for 1M events: under 5 MB and under 2 s to first paint).
func BenchmarkReport(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			fx := makeFixture(b, b.TempDir(), n)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := WriteReport(fx.dir, fx.info, fx.report); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			path := filepath.Join(fx.dir, ReportFile)
			st, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(st.Size())/1e6, "report-MB")
			paint, ready := openTimes(b, path)
			b.ReportMetric(paint.Seconds()*1000, "paint-ms")
			b.ReportMetric(ready.Seconds()*1000, "ready-ms")
		})
	}
}

// openTimes opens path in Chromium and returns, from the start of the
// navigation, when the page was first painted with content and when it was
// ready (DOMContentLoaded: its script had drawn and wired the plots).
func openTimes(b *testing.B, path string) (paint, ready time.Duration) {
	ctx := browser(b)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+path)); err != nil {
		b.Fatal(err)
	}
	for {
		t, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`[
			(performance.getEntriesByName("first-contentful-paint")[0] || {startTime: -1}).startTime,
			performance.getEntriesByType("navigation")[0].domContentLoadedEventEnd]`))
		if err != nil {
			b.Fatal(err)
		}
		if t[0] >= 0 && t[1] > 0 {
			ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
			return ms(t[0]), ms(t[1])
		}
		time.Sleep(50 * time.Millisecond)
	}
}
