package harness

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/contract"
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

	if err := f.set("n1", contract.Skew{Offset: -30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if got := skewOf(t, file); !near(got, -30*time.Second) {
		t.Errorf("bumped by -30s: skew %s", got)
	}

	// Four times real speed since 10 s ago: 30 s ahead, and gaining.
	if err := f.set("n1", contract.Skew{Rate: 4, Since: time.Now().Add(-10 * time.Second).UnixNano()}); err != nil {
		t.Fatal(err)
	}
	// The skew gains 3 s per second between the two reads, however long
	// a loaded machine takes over them: each read is placed within the
	// time its program took.
	read := func() (skew time.Duration, mid time.Time, took time.Duration) {
		began := time.Now()
		skew = skewOf(t, file)
		took = time.Since(began)
		return skew, began.Add(took / 2), took
	}
	first, at1, took1 := read()
	time.Sleep(time.Second)
	second, at2, took2 := read()
	gained, want := second-first, 3*at2.Sub(at1)
	if !near(first, 30*time.Second) || math.Abs(float64(gained-want)) > float64(300*time.Millisecond+3*(took1+took2)/2) {
		t.Errorf("at 4x: skew %s, %s later %s: gained %s, want about %s", first, at2.Sub(at1), second, gained, want)
	}

	if err := f.set("n1", contract.Skew{}); err != nil {
		t.Fatal(err)
	}
	if got := skewOf(t, file); !near(got, 0) {
		t.Errorf("healed: skew %s", got)
	}
}

// In a container, as a faketime target's node runs: a libc program with
// libfaketime preloaded, and its clock folder mounted where the harness
// mounts it, reads the skew the harness wrote.
func TestFaketimeInAContainer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a container")
	}
	if _, err := os.Stat(faketimeLib); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("libfaketime is missing (make deps installs it): %v", err)
		}
		t.Skip("libfaketime is not installed (make deps)")
	}
	ctx := context.Background()
	d := testDocker(t)
	// An image of the host's date(1), its libraries and libfaketime.
	root := t.TempDir()
	for _, f := range []string{"/bin/date", faketimeLib, libcMalloc, "/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libm.so.6", "/lib64/ld-linux-x86-64.so.2"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Skipf("this host does not lay out its libraries as Debian's amd64 does: %v", err)
		}
		os.MkdirAll(filepath.Join(root, filepath.Dir(f)), 0o755)
		if err := os.WriteFile(filepath.Join(root, f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "Dockerfile"), []byte("FROM scratch\nCOPY . /\nENTRYPOINT [\"/bin/date\", \"+%s\"]\n"), 0o644)
	const image = "splitbrain/test-faketime:latest"
	if err := d.BuildDockerfileImage(ctx, image, root, "Dockerfile"); err != nil {
		t.Fatal(err)
	}

	clocks := t.TempDir()
	os.Mkdir(filepath.Join(clocks, "n1"), 0o755)
	f := startFaketime(clocks)
	defer f.close()
	const skew = -1000 * time.Second
	if err := f.set("n1", contract.Skew{Offset: skew}); err != nil {
		t.Fatal(err)
	}
	runID, nw := throwawayNetwork(t, d, "test-faketime")
	ctr, err := d.Start(ctx, ContainerSpec{
		RunID: runID, Name: "n1", Image: image, Network: nw, Env: faketimeEnv(),
		Binds: []string{filepath.Join(clocks, "n1") + ":" + clockMount},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, out := waitExit(t, d, ctr.ID, 10*time.Second)
	secs, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatalf("date printed %q: %v", out, err)
	}
	if got := time.Duration(secs-time.Now().Unix()) * time.Second; got > skew+5*time.Second || got < skew-5*time.Second {
		t.Errorf("the container's clock is %s off, want %s", got, skew)
	}
}
