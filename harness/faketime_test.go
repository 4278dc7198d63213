package harness

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/splitbrain/splitbrain/contract"
)

// skewOf runs date(1) under libfaketime, as a node of a faketime target
// runs (less monotonic.so, which is compiled for the containers), and
// returns how far its wall clock is from ours.
func skewOf(t *testing.T, file string) time.Duration {
	t.Helper()
	cmd := exec.Command("date", "+%s.%N")
	env := faketimeEnv()
	env["LD_PRELOAD"] = libcMalloc + ":" + faketimeLib
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
	f := startFaketimeBy(faketimeWriter(dir))
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
	// time its program took, and what it reads is the offset last
	// written, as old as the file (the rewriter may be late too).
	read := func() (skew time.Duration, mid time.Time, slack time.Duration) {
		began := time.Now()
		var age time.Duration
		if fi, err := os.Stat(file); err == nil {
			age = max(began.Sub(fi.ModTime()), 0)
		}
		skew = skewOf(t, file)
		took := time.Since(began)
		return skew, began.Add(took / 2), took/2 + age
	}
	first, at1, slack1 := read()
	time.Sleep(time.Second)
	second, at2, slack2 := read()
	gained, want := second-first, 3*at2.Sub(at1)
	if !near(first, 30*time.Second) || math.Abs(float64(gained-want)) > float64(300*time.Millisecond+3*(slack1+slack2)) {
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
	f := startFaketimeBy(faketimeWriter(clocks))
	defer f.close()
	const skew = -1000 * time.Second
	if err := f.set("n1", contract.Skew{Offset: skew}); err != nil {
		t.Fatal(err)
	}
	tools, err := d.faketimeDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	runID, nw := throwawayNetwork(t, d, "test-faketime")
	ctr, err := d.Start(ctx, ContainerSpec{
		RunID: runID, Name: "n1", Image: image, Network: nw, Env: faketimeEnv(),
		Binds: []string{filepath.Join(clocks, "n1") + ":" + clockMount, tools + ":" + faketimeMount + ":ro"},
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

// waiterImages builds an image of each waiter (waiters) on the runtimes
// of the tests.
func waiterImages(t *testing.T, d *Docker) map[string]string {
	t.Helper()
	images, err := d.waiterImages(context.Background(), "..")
	if err != nil {
		t.Fatal(err)
	}
	return images
}

// A wait a waiter printed: what it was, how long it took and when it
// ended on the monotonic clock, what its wall clock read then, and the
// monotonic clock read after the wall clock.
type wait struct {
	what                    string
	took, mono, wall, after time.Duration // since the clocks' epochs
}

// precise says whether w's wall clock was read within precisely of its
// monotonic one: a waiter preempted between the two reads a skew too
// large by as long as it was kept off the CPU.
func (w wait) precise() bool { return w.after-w.mono <= precisely }

// waits reads a waiter's output.
func waits(out []byte) []wait {
	var ws []wait
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 5 {
			continue
		}
		var n [4]int64
		var err error
		for i := range n {
			if n[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
				break
			}
		}
		if err == nil {
			ws = append(ws, wait{f[0], time.Duration(n[0]), time.Duration(n[1]), time.Duration(n[2]), time.Duration(n[3])})
		}
	}
	return ws
}

// monotonic reads the host's CLOCK_MONOTONIC, which the containers share.
func monotonic(t *testing.T) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ts.Nano())
}

// A C program, Python and the JVM, under libfaketime as the harness
// preloads it, keep sleeping, waiting and timing out on true time while
// their wall clocks jump each way, strobe and run fast, and show each
// skew; each is still alive after every fault and every heal.
func TestFaketimeKinds(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts containers")
	}
	ctx := context.Background()
	d := testDocker(t)
	images := waiterImages(t, d)
	tools, err := d.faketimeDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	clocks := t.TempDir()
	// Every offset written, and when: on a loaded machine the rewrites of
	// a rate fall behind (at a load of 20, the skew read gained 2.1 s a
	// second in all three kinds alike, the file's rewrites late), and
	// what a program must show is the file it read.
	var (
		mu      sync.Mutex
		written = map[string][]offsetWritten{}
	)
	write := faketimeWriter(clocks)
	f := startFaketimeBy(func(node string, b []byte) error {
		err := write(node, b)
		if secs, perr := strconv.ParseFloat(strings.TrimSpace(string(b)), 64); err == nil && perr == nil {
			var ts unix.Timespec
			unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
			mu.Lock()
			written[node] = append(written[node], offsetWritten{time.Duration(ts.Nano()), time.Duration(secs * float64(time.Second))})
			mu.Unlock()
		}
		return err
	})
	defer f.close()
	runID, nw := throwawayNetwork(t, d, "test-faketime-kinds")
	ids := map[string]string{}
	for _, w := range waiters {
		os.Mkdir(filepath.Join(clocks, w.kind), 0o755)
		ctr, err := d.Start(ctx, ContainerSpec{
			RunID: runID, Name: w.kind, Image: images[w.kind], Network: nw, Env: faketimeEnv(),
			Binds: []string{filepath.Join(clocks, w.kind) + ":" + clockMount, tools + ":" + faketimeMount + ":ro"},
		})
		if err != nil {
			t.Fatal(err)
		}
		ids[w.kind] = ctr.ID
	}
	// Each kind's waits, and its wall clock's skew at each: the wall
	// clock less the monotonic one, less what that was before any fault.
	waitsOf := func(kind string) []wait {
		out, err := d.Logs(ctx, ids[kind])
		if err != nil {
			t.Fatal(err)
		}
		return waits(out)
	}
	alive := func(kind, when string) bool {
		exited, code := d.Exited(ctx, ids[kind])
		if exited {
			out, _ := d.Logs(ctx, ids[kind])
			t.Errorf("%s exited (code %d) %s; its output ends:\n%s", kind, code, when, tail(out, 5))
		}
		return !exited
	}
	// Each kind's wall clock less its monotonic one before any fault,
	// from its most precise wait of the first: a gap between its two
	// reads would be in every skew after (baseGap allows for it).
	base, baseGap := map[string]time.Duration{}, map[string]time.Duration{}
	deadline := time.Now().Add(30 * time.Second)
	for _, w := range waiters {
		for alive(w.kind, "as it started") {
			ws := waitsOf(w.kind)
			if slices.ContainsFunc(ws, wait.precise) && len(ws) >= 2 {
				b := slices.MinFunc(ws, func(a, b wait) int { return cmp.Compare(a.after-a.mono, b.after-b.mono) })
				base[w.kind], baseGap[w.kind] = b.wall-b.mono, b.after-b.mono
				break
			}
			if time.Now().After(deadline) {
				out, _ := d.Logs(ctx, ids[w.kind])
				t.Errorf("%s: not two waits done in 30 s, one of them read precisely; its output:\n%s", w.kind, tail(out, 5))
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	setAll := func(s contract.Skew) { // also from the strobe's goroutine: no Fatal
		for _, w := range waiters {
			if err := f.set(w.kind, s); err != nil {
				t.Error(err)
			}
		}
	}
	near := func(got, want time.Duration) bool { return math.Abs(float64(got-want)) < float64(300*time.Millisecond) }
	jumpTo := func(offset time.Duration) func() (stop func()) {
		return func() func() { setAll(contract.Skew{Offset: offset}); return func() {} }
	}
	skewed := func(offset time.Duration) func(string, []time.Duration, []wait) error {
		return func(_ string, skews []time.Duration, _ []wait) error {
			for _, s := range skews {
				if !near(s, offset) {
					return fmt.Errorf("skew %s, want %s", s, offset)
				}
			}
			return nil
		}
	}
	const strobe = 7500 * time.Millisecond
	phases := []struct {
		name  string
		begin func() (stop func())
		lasts time.Duration
		check func(kind string, skews []time.Duration, ws []wait) error
	}{
		{"a jump of -20 s", jumpTo(-20 * time.Second), 600 * time.Millisecond, skewed(-20 * time.Second)},
		{"its heal", jumpTo(0), 400 * time.Millisecond, skewed(0)},
		{"a jump of +20 s", jumpTo(20 * time.Second), 600 * time.Millisecond, skewed(20 * time.Second)},
		{"its heal", jumpTo(0), 400 * time.Millisecond, skewed(0)},
		{"a strobe", func() func() {
			// As clock-strobe does: a jump and true time in turn, every
			// 70 ms, which a waiter's 100 ms waits do not keep step with.
			stop, stopped := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(stopped)
				tick := time.NewTicker(70 * time.Millisecond)
				defer tick.Stop()
				for on := true; ; on = !on {
					s := contract.Skew{}
					if on {
						s.Offset = strobe
					}
					setAll(s)
					select {
					case <-stop:
						return
					case <-tick.C:
					}
				}
			}()
			return func() { close(stop); <-stopped }
		}, time.Second, func(_ string, skews []time.Duration, _ []wait) error {
			var on, off bool
			for _, s := range skews {
				switch {
				case near(s, strobe):
					on = true
				case near(s, 0):
					off = true
				default:
					return fmt.Errorf("skew %s, want %s or none", s, strobe)
				}
			}
			if !on || !off {
				return fmt.Errorf("skews %v: want both %s and none", skews, strobe)
			}
			return nil
		}},
		{"its heal", jumpTo(0), 400 * time.Millisecond, skewed(0)},
		{"a rate of 4x", func() func() {
			setAll(contract.Skew{Rate: 4, Since: time.Now().UnixNano()})
			return func() {}
		}, 2 * time.Second, func(kind string, skews []time.Duration, ws []wait) error {
			if span := ws[len(ws)-1].mono - ws[0].mono; span < time.Second {
				return fmt.Errorf("waits over %s only", span)
			}
			// The file gained 3 s a second as written (1x would gain
			// nothing, 3x 2 s, 5x 4 s), rewritten every 20 ms or as
			// soon after as the machine let it; each wait read an offset
			// written about then: the last before the wait ended, or one
			// of its neighbours (the time of a write is taken after its
			// rename).
			mu.Lock()
			ow := slices.Clone(written[kind])
			mu.Unlock()
			var in []offsetWritten
			for _, o := range ow {
				if o.mono >= ws[0].mono && o.mono <= ws[len(ws)-1].mono {
					in = append(in, o)
				}
			}
			if len(in) < 2 {
				return fmt.Errorf("%d rewrites of the file during the waits", len(in))
			}
			if gained := fit(in, func(o offsetWritten) (float64, float64) { return o.mono.Seconds(), o.offset.Seconds() }); gained < 2.8 || gained > 3.2 {
				return fmt.Errorf("the file gained %.2f s a second, want 3", gained)
			}
			for i, w := range ws {
				// The skew read is the offset the waiter found plus the
				// time between its two clocks' reads (at most
				// w.after-w.mono), less the base's (at most baseGap).
				last, _ := slices.BinarySearchFunc(ow, w.mono, func(o offsetWritten, m time.Duration) int { return cmp.Compare(o.mono, m) })
				if !slices.ContainsFunc(ow[max(0, last-3):min(len(ow), last+1)], func(o offsetWritten) bool {
					return o.offset > skews[i]-(w.after-w.mono)-5*time.Millisecond && o.offset < skews[i]+baseGap[kind]+5*time.Millisecond
				}) {
					return fmt.Errorf("a wait at %s read a skew of %s, not one written shortly before (%v)", w.mono, skews[i], ow[max(0, last-3):min(len(ow), last+1)])
				}
			}
			t.Logf("%s: the skew read gained %.2f s a second over %d rewrites", kind, fit(ws, func(w wait) (float64, float64) { return w.mono.Seconds(), (w.wall - w.mono).Seconds() }), len(in))
			return nil
		}},
		{"its heal", jumpTo(0), 400 * time.Millisecond, skewed(0)},
	}
	for _, p := range phases {
		// A wait counts once the phase's first file is written: on a
		// loaded machine that may be long after begin was called.
		stop := p.begin()
		began := monotonic(t)
		time.Sleep(p.lasts)
		ended := monotonic(t)
		stop()
		for _, w := range waiters {
			if !alive(w.kind, "under "+p.name) {
				t.FailNow()
			}
			// The waits that ended well inside the phase, a clock read
			// after its beginning, their wall clock read precisely.
			var in []wait
			var skews []time.Duration
			for _, x := range waitsOf(w.kind) {
				if x.mono > began+20*time.Millisecond && x.mono < ended && x.precise() {
					in = append(in, x)
					skews = append(skews, x.wall-x.mono-base[w.kind])
				}
			}
			if len(in) < 2 {
				t.Errorf("%s under %s: %d waits read precisely ended in %s", w.kind, p.name, len(in), p.lasts)
				continue
			}
			if err := p.check(w.kind, skews, in); err != nil {
				t.Errorf("%s under %s: %v", w.kind, p.name, err)
			}
		}
	}
	// Every wait lasted its 100 ms on the true clock, give or take a
	// loaded machine: none woke early, none overslept by a skew.
	for _, w := range waiters {
		ws := waitsOf(w.kind)
		for _, x := range ws {
			if x.took < 99*time.Millisecond || x.took > 2*time.Second {
				t.Errorf("%s: a %s took %s, want 100 ms", w.kind, x.what, x.took)
			}
		}
		t.Logf("%s: %d waits", w.kind, len(ws))
	}
}

// The canary passes in an image with libfaketime under the preload the
// harness gives its nodes, and says what breaks under libfaketime alone
// (waits on the monotonic clock) and without it (a wall clock no clock
// fault reaches).
func TestFaketimeCanary(t *testing.T) {
	if testing.Short() {
		t.Skip("starts containers")
	}
	ctx := context.Background()
	d := testDocker(t)
	if err := d.testRuntimes(ctx); err != nil {
		t.Fatal(err)
	}
	dir, err := d.faketimeDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	runID := "test-faketime-canary-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	t.Cleanup(func() { d.Remove(context.Background(), LabelRun+"="+runID) })
	for _, c := range []struct{ preload, name, want string }{
		{faketimeEnv()["LD_PRELOAD"], "as the harness preloads it", ""},
		// The canary's first wait comes before it reads the wall clock:
		// libfaketime, with no offset read yet, moves its deadline by as
		// long as the machine has been up.
		{libcMalloc + ":" + faketimeLib, "libfaketime alone", "canary: a 10 ms wait on the monotonic clock begun under no skew has not ended after a second"},
		{libcMalloc + ":" + faketimeMount + "/monotonic.so", "without libfaketime", "s off, not +30.000 s: libfaketime is not loaded"},
	} {
		env := faketimeEnv()
		env["LD_PRELOAD"] = c.preload
		err := d.checkFaketime(ctx, runID, "canary", top(faketimeRuntimes()).tag, dir, env)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// An offsetWritten is a timestamp file's offset and when it was written,
// on the monotonic clock.
type offsetWritten struct{ mono, offset time.Duration }

// fit is the least-squares slope of y over x of the points xy makes of
// items, 0 when x never varies.
func fit[T any](items []T, xy func(T) (x, y float64)) float64 {
	n := float64(len(items))
	var sx, sy, sxx, sxy float64
	for _, it := range items {
		x, y := xy(it)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	if d := n*sxx - sx*sx; d != 0 {
		return (n*sxy - sx*sy) / d
	}
	return 0
}
