// Package browsertest opens pages in a headless Chromium, for the tests that check what a reader of a report sees.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Open starts a headless Chromium (Debian's chromium package, which `make
// deps` installs) for the test's lifetime. Without one the test is
// skipped on a developer's machine, and fails in CI, where skipping would
// hide that nothing ran.
func Open(tb testing.TB) context.Context {
	tb.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatal("chromium is not installed, so the report cannot be opened in a browser: run `make deps` (apt-get install chromium)")
		}
		tb.Skip("chromium is not installed (make deps installs it)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // we run as root in CI
		chromedp.WindowSize(1400, 1000),
	)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	tb.Cleanup(cancel)
	ctx, cancel := chromedp.NewContext(actx)
	tb.Cleanup(cancel)
	ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
	tb.Cleanup(cancel)
	return ctx
}

// Eval evaluates js in the open page, failing the test if it cannot.
func Eval[T any](tb testing.TB, ctx context.Context, js string) T {
	tb.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		tb.Fatalf("%s: %v", js, err)
	}
	return v
}

// OpenTimes opens url and returns, from the start of the navigation, when
// the page was first painted with content and when it was ready
// (DOMContentLoaded: its script had run).
func OpenTimes(tb testing.TB, ctx context.Context, url string) (paint, ready time.Duration) {
	tb.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		tb.Fatal(err)
	}
	for {
		t, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`[
			(performance.getEntriesByName("first-contentful-paint")[0] || {startTime: -1}).startTime,
			performance.getEntriesByType("navigation")[0].domContentLoadedEventEnd]`))
		if err != nil {
			tb.Fatal(err)
		}
		if t[0] >= 0 && t[1] > 0 {
			ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
			return ms(t[0]), ms(t[1])
		}
		time.Sleep(50 * time.Millisecond)
	}
}
