package harness

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/targets/sdk"
)

// skewOf runs date(1) under libfaketime, as a node of a faketime target
// runs, and returns how far its wall clock is from ours.
func skewOf(t *testing.T, file string) time.Duration {
	t.Helper()
	cmd := exec.Command("date", "+%s.%N")
	env := faketimeEnv()
	env["FAKETIME_TIMESTAMP_FILE"] = file
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	before := time.Now()
	out, err := cmd.Output()
	after := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	secs, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil {
		t.Fatal(err)
	}
	mid := before.Add(after.Sub(before) / 2)
	return time.Duration(secs*1e9) - time.Duration(mid.UnixNano())
}

// The timestamp files move a libc program's clock as the SDK's clock file
// moves a Go node's: jumps at once, other rates through the offset
// rewritten as time goes by, true time again when healed.
func TestFaketimeFollowsSkews(t *testing.T) {
	if _, err := os.Stat(faketimeLib); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("libfaketime is missing (make deps installs it): %v", err)
		}
		t.Skip("libfaketime is not installed (make deps)")
	}
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "n1"), 0o755)
	file := filepath.Join(dir, "n1", faketimeFile)
	f := startFaketime(dir)
	defer f.close()
	near := func(got, want time.Duration) bool { return math.Abs(float64(got-want)) < float64(300*time.Millisecond) }

	if err := f.set("n1", sdk.Skew{Offset: -30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if got := skewOf(t, file); !near(got, -30*time.Second) {
		t.Errorf("bumped by -30s: skew %s", got)
	}

	// Four times real speed since 10 s ago: 30 s ahead, and gaining.
	if err := f.set("n1", sdk.Skew{Rate: 4, Since: time.Now().Add(-10 * time.Second).UnixNano()}); err != nil {
		t.Fatal(err)
	}
	first := skewOf(t, file)
	time.Sleep(time.Second)
	second := skewOf(t, file)
	if !near(first, 30*time.Second) || !near(second-first, 3*time.Second) {
		t.Errorf("at 4x: skew %s, a second later %s", first, second)
	}

	if err := f.set("n1", sdk.Skew{}); err != nil {
		t.Fatal(err)
	}
	if got := skewOf(t, file); !near(got, 0) {
		t.Errorf("healed: skew %s", got)
	}
}
