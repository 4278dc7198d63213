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
// events and reports its size and, when Chromium is installed, the time
// from navigation to the first paint of the page (targets for 1M events:
// under 5 MB and under 2 s).
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
			b.ReportMetric(firstPaint(b, path).Seconds()*1000, "paint-ms")
		})
	}
}

// firstPaint opens path in Chromium and returns when the page was first
// painted with content, counted from the start of the navigation.
func firstPaint(b *testing.B, path string) time.Duration {
	ctx := browser(b)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+path)); err != nil {
		b.Fatal(err)
	}
	for {
		ms, err := chromedp.Run(ctx, chromedp.Evaluate[float64](
			`(performance.getEntriesByName("first-contentful-paint")[0] || {startTime: -1}).startTime`))
		if err != nil {
			b.Fatal(err)
		}
		if ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
