package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/nemesis/vdsoclock"
)

// readerImages builds the clock sidecar and an image of each reader
// (readers).
func readerImages(t *testing.T, d *Docker) map[string]string {
	t.Helper()
	images, err := d.readerImages(context.Background(), "..")
	if err != nil {
		t.Fatal(err)
	}
	return images
}

// A reading is a line a reader printed: true time as the reader took it
// (not the Engine's stamp, which comes later by as much as a loaded machine
// delays it, an error a fast clock would triple), its clocks' readings, and
// true time again after them.
type reading struct {
	at, end  time.Time
	rt, mono int64   // realtime (unix ns) and monotonic (ns) as the reader read them
	more     []int64 // the C reader's gettimeofday and time, in ns
}

// precisely is how close together a reading's two true times must be for
// its clocks to be judged against the first: a reader preempted between
// them (as a loaded machine does for tens of milliseconds) read its clocks
// at a true time it cannot tell, an error a clock at 3x triples. The JVM's
// true time is a file's stamp, coarse to one tick of the kernel's.
const precisely = 20 * time.Millisecond

// precise says whether x's true time is known to within precisely.
func (x reading) precise() bool { return x.end.Sub(x.at) <= precisely }

// readingsSince reads what the reader in container id printed since t, by
// true time: every line it read after t.
func readingsSince(t *testing.T, d *Docker, id string, since time.Time) []reading {
	t.Helper()
	res, err := d.cli.ContainerLogs(context.Background(), id, client.ContainerLogsOptions{ShowStdout: true, Timestamps: true, Since: since.Format(time.RFC3339Nano)})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, res); err != nil {
		t.Fatal(err)
	}
	var rs []reading
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		// The Engine's stamp, then the reader's line.
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		var n []int64
		for _, s := range f[1:] {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Fatalf("reader printed %q", sc.Text())
			}
			n = append(n, v)
		}
		if at := time.Unix(0, n[0]); !at.Before(since) {
			rs = append(rs, reading{at: at, end: time.Unix(0, n[len(n)-1]), rt: n[1], mono: n[2], more: n[3 : len(n)-1]})
		}
	}
	return rs
}

// awaitReadings waits until the reader has printed n lines since t whose
// true time is known precisely, and returns those.
func awaitReadings(t *testing.T, d *Docker, id string, since time.Time, n int, timeout time.Duration) []reading {
	t.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(50 * time.Millisecond) {
		all := readingsSince(t, d, id, since)
		rs := slices.DeleteFunc(slices.Clone(all), func(x reading) bool { return !x.precise() })
		if len(rs) >= n {
			return rs
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reader printed %d lines in %s since %s, %d of them with their true time known to %s, want %d", len(all), timeout, since.Format(time.StampMilli), len(rs), precisely, n)
		}
	}
}

// rate is how fast the monotonic clock ran over rs, against true time.
func rate(rs []reading) float64 {
	first, last := rs[0], rs[len(rs)-1]
	return float64(last.mono-first.mono) / float64(last.at.Sub(first.at))
}

// A clockedReader is a reader in a container with a clock sidecar beside
// it, as a run gives a node with clock: process.
type clockedReader struct {
	d             *Docker
	id, sidecar   string
	url           string // the sidecar's
	kind, network string
}

// startClockedReader starts a reader of kind and its clock sidecar, and
// waits until both run.
func startClockedReader(t *testing.T, d *Docker, images map[string]string, kind, prefix string) clockedReader {
	t.Helper()
	ctx := context.Background()
	runID, nw := throwawayNetwork(t, d, prefix+kind)
	ctr, err := d.Start(ctx, ContainerSpec{RunID: runID, Name: "n1", Image: images[kind], Network: nw})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := d.StartClockSidecar(ctx, runID, "n1-clock", ctr.ID, vdsoclockImage, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := clockedReader{d: d, id: ctr.ID, sidecar: sc, kind: kind, network: nw}
	r.awaitSidecar(t)
	awaitReadings(t, d, ctr.ID, time.Now(), 2, 20*time.Second) // the JVM takes a moment
	return r
}

// eachClockedReader runs test on a clockedReader of each kind, in
// parallel, each on a network named from prefix.
func eachClockedReader(t *testing.T, prefix string, test func(*testing.T, *Docker, clockedReader)) {
	if testing.Short() {
		t.Skip("starts containers")
	}
	t.Parallel()
	d := testDocker(t)
	images := readerImages(t, d)
	for _, rd := range readers {
		t.Run(rd.kind, func(t *testing.T) {
			t.Parallel()
			test(t, d, startClockedReader(t, d, images, rd.kind, prefix))
		})
	}
}

// awaitSidecar waits until the sidecar answers, at the node's address.
func (r *clockedReader) awaitSidecar(t *testing.T) {
	t.Helper()
	ip, err := r.d.IP(context.Background(), r.id, r.network)
	if err != nil {
		t.Fatal(err)
	}
	r.url = fmt.Sprintf("http://%s:%d", ip, vdsoclock.Port)
	if _, err := waitAll(context.Background(), []string{"n1"}, 20*time.Second, func(string) string { return r.url + "/health" }); err != nil {
		t.Fatal(err)
	}
}

// set gives the reader's processes skew s and returns when they have it.
func (r clockedReader) set(t *testing.T, s contract.Skew) time.Time {
	t.Helper()
	b, _ := json.Marshal(s)
	req, _ := http.NewRequest(http.MethodPut, r.url+"/skew", bytes.NewReader(b))
	began := time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusNoContent {
		var msg bytes.Buffer
		msg.ReadFrom(res.Body)
		t.Fatalf("PUT %+v: %s: %s", s, res.Status, msg.String())
	}
	t.Logf("PUT %+v took %s", s, time.Since(began).Round(time.Microsecond))
	return time.Now()
}

// state is what the sidecar says it holds.
func (r clockedReader) state(t *testing.T) vdsoclock.State {
	t.Helper()
	res, err := http.Get(r.url + "/skew")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var st vdsoclock.State
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// Each reading within clockTol of what the skew gives at its time, for a
// reader preempted between its true and its skewed readings.
const clockTol = 150 * time.Millisecond

// checkWall checks that every wall clock of each reading in rs is off true
// time by want at the reading's time.
func checkWall(t *testing.T, what string, rs []reading, want func(at time.Time) time.Duration) {
	t.Helper()
	for _, x := range rs {
		w := want(x.at)
		cols := append([]int64{x.rt}, x.more...)
		for i, v := range cols {
			got := time.Duration(v - x.at.UnixNano())
			slack := clockTol
			if i == 2 {
				slack += time.Second // time() counts whole seconds
			}
			if got < w-slack || got > w+slack {
				t.Fatalf("%s: reading %d of a line at %s is %s off true time, want %s", what, i, x.at.Format(time.StampMilli), got, w)
			}
		}
	}
}

// A static Go binary's time.Now() and time.Since(), a glibc program's
// clock_gettime, gettimeofday and time, and the JVM's currentTimeMillis and
// nanoTime, with no change to any of them, see a clock sidecar's jump, and
// true time again once healed, their vDSOs restored, and after a restart.
func TestVdsoclockReachesEveryProcess(t *testing.T) {
	eachClockedReader(t, "test-vdsoclock-", func(t *testing.T, d *Docker, r clockedReader) {
		ctx := context.Background()

		jumped := r.set(t, contract.Skew{Offset: time.Hour})
		checkWall(t, "jumped 1h", awaitReadings(t, d, r.id, jumped, 10, 10*time.Second), func(time.Time) time.Duration { return time.Hour })
		if r.kind != "go" { // a Debian image, with bash
			// A process started during the fault is patched at the
			// sidecar's next look (every 100 ms, later on a loaded
			// machine): bash, whose $EPOCHREALTIME is glibc's
			// gettimeofday, waits until it reads half the jump, 10 s
			// at most.
			half := time.Now().Add(30 * time.Minute).Unix()
			wait := fmt.Sprintf(`until [ "${EPOCHREALTIME%%.*}" -gt %d ]; do sleep 0.1; done; echo $EPOCHREALTIME`, half)
			code, out, err := d.Exec(ctx, r.id, []string{"timeout", "10", "bash", "-c", wait})
			if code == 124 {
				t.Fatalf("a process started during a jump of 1h was not patched within 10 s")
			}
			if err != nil || code != 0 {
				t.Fatalf("exec: %d %v: %s", code, err, out)
			}
			secs, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
			if err != nil {
				t.Fatalf("bash printed %q", out)
			}
			if got := time.Duration(secs*1e9) - time.Duration(time.Now().UnixNano()); got < time.Hour-time.Second || got > time.Hour+clockTol {
				t.Errorf("a process started during a jump of 1h is %s off true time", got)
			}
		}

		healed := r.set(t, contract.Skew{})
		rs := awaitReadings(t, d, r.id, healed, 10, 10*time.Second)
		checkWall(t, "healed", rs, func(time.Time) time.Duration { return 0 })
		if got := rate(rs); got < 0.8 || got > 1.2 {
			t.Errorf("healed, the monotonic clock ran at %.2fx", got)
		}
		// A jump gave the monotonic clocks nothing to keep: every
		// vDSO is restored.
		for deadline := time.Now().Add(5 * time.Second); r.state(t).Patched > 0; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("healed 5 s ago, %d processes still have a patched vDSO", r.state(t).Patched)
			}
		}

		// A restart during a jump: the sidecar ends with the node's
		// PID namespace, the new processes have the kernel's vDSO.
		r.set(t, contract.Skew{Offset: time.Hour})
		if err := d.Kill(ctx, r.id); err != nil {
			t.Fatal(err)
		}
		restarted := time.Now()
		if err := d.Restart(ctx, r.id); err != nil {
			t.Fatal(err)
		}
		checkWall(t, "restarted", awaitReadings(t, d, r.id, restarted, 10, 20*time.Second), func(time.Time) time.Duration { return 0 })
	})
}

// The timeline of a process's monotonic clock through a rate: at 3x it
// gains 2 s a second; at the heal the wall clock is true again while the
// monotonic clock keeps what it gained, never stepping back, and runs at
// the true rate; the process keeps its patch to hold that offset until it
// restarts, and a restarted one reads the kernel's monotonic clock (the C
// and the JVM readers print it whole, so against this host's: a container
// has no clock of its own).
func TestVdsoclockRateHealKeepsMonotonic(t *testing.T) {
	eachClockedReader(t, "test-vdsoclock-heal-", func(t *testing.T, d *Docker, r clockedReader) {
		ctx := context.Background()
		// ahead is how far the monotonic clock read ahead of true time at
		// x, give or take a constant: its reading less the true time.
		ahead := func(x reading) time.Duration { return time.Duration(x.mono - x.at.UnixNano()) }
		before := awaitReadings(t, d, r.id, time.Now(), 5, 10*time.Second)
		base := ahead(before[len(before)-1])

		since := time.Now()
		fast := r.set(t, contract.Skew{Rate: 3, Since: since.UnixNano()})
		rs := awaitReadings(t, d, r.id, fast, 30, 10*time.Second)
		checkWall(t, "at 3x", rs, func(at time.Time) time.Duration { return 2 * at.Sub(since) })
		if got := rate(rs); got < 2.7 || got > 3.3 {
			t.Errorf("at 3x the monotonic clock ran at %.2fx over %s", got, rs[len(rs)-1].at.Sub(rs[0].at))
		}

		healed := r.set(t, contract.Skew{})
		gained := 2 * healed.Sub(since) // at most: the heal took effect before healed
		after := awaitReadings(t, d, r.id, healed, 50, 10*time.Second)
		checkWall(t, "healed", after, func(time.Time) time.Duration { return 0 })
		if got := rate(after); got < 0.9 || got > 1.1 {
			t.Errorf("healed, the monotonic clock ran at %.2fx over %s", got, after[len(after)-1].at.Sub(after[0].at))
		}
		// Every line from before the rate to a second after the heal:
		// the monotonic clock never went back, and after the heal it
		// is as far ahead as at the heal, at every reading.
		all := readingsSince(t, d, r.id, before[0].at)
		for i := 1; i < len(all); i++ {
			if all[i].mono < all[i-1].mono {
				t.Fatalf("the monotonic clock went back by %s at %s (healed at %s)", time.Duration(all[i-1].mono-all[i].mono), all[i].at.Format(time.StampMilli), healed.Format(time.StampMilli))
			}
		}
		var last reading // the last one at 3x known precisely
		for _, x := range all {
			if x.at.Before(healed.Add(-clockTol)) && x.precise() {
				last = x
			}
		}
		atHeal := ahead(last) - base
		if atHeal < gained-2*(healed.Sub(last.at)+clockTol) || atHeal > gained+clockTol {
			t.Fatalf("at the heal the monotonic clock was %s ahead, want about %s", atHeal, gained)
		}
		for _, x := range after {
			if got := ahead(x) - base; got < atHeal-clockTol || got > gained+clockTol {
				t.Fatalf("healed, at %s the monotonic clock is %s ahead, want what it gained, %s to %s", x.at.Format(time.StampMilli), got, atHeal, gained)
			}
		}
		// Well past the sidecar's settle, the process keeps its patch.
		time.Sleep(2 * time.Second)
		if st := r.state(t); st.Patched == 0 {
			t.Fatal("2 s after the heal no process holds the patch: the gained monotonic time is gone")
		}
		later := awaitReadings(t, d, r.id, time.Now(), 5, 10*time.Second)
		if got := ahead(later[len(later)-1]) - base; got < atHeal-clockTol || got > gained+clockTol {
			t.Fatalf("2 s after the heal the monotonic clock is %s ahead, want %s to %s", got, atHeal, gained)
		}
		t.Logf("at 3x for %s (a gain of %s); 2 s after the heal, %s ahead", healed.Sub(since).Round(time.Millisecond), gained.Round(time.Millisecond), (ahead(later[len(later)-1]) - base).Round(time.Millisecond))

		// A restart, its sidecar restarted with it as a run does: new
		// processes, at true time.
		if err := d.Kill(ctx, r.id); err != nil {
			t.Fatal(err)
		}
		restarted := time.Now()
		if err := d.Restart(ctx, r.id); err != nil {
			t.Fatal(err)
		}
		if err := d.RestartContainer(ctx, r.sidecar); err != nil {
			t.Fatal(err)
		}
		r.awaitSidecar(t)
		rs = awaitReadings(t, d, r.id, restarted, 10, 20*time.Second)
		if st := r.state(t); st.Patched != 0 {
			t.Errorf("restarted, %d processes hold a patch", st.Patched)
		}
		if r.kind == "go" {
			return // its time.Since counts from its own start
		}
		var rt, mono unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_REALTIME, &rt)
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono)
		host := time.Duration(mono.Nano() - rt.Nano()) // the kernel's monotonic less realtime
		for _, x := range rs {
			if got := ahead(x) - host; got < -clockTol || got > clockTol {
				t.Fatalf("restarted, at %s the monotonic clock is %s off the kernel's", x.at.Format(time.StampMilli), got)
			}
		}
	})
}

// A clock sidecar that may not ptrace (here a seccomp profile refuses the
// call) exits at once saying so, and the harness takes that as bad input
// naming what is missing, before any process was touched.
func TestVdsoclockWithoutPtrace(t *testing.T) {
	if testing.Short() {
		t.Skip("starts containers")
	}
	t.Parallel()
	ctx := context.Background()
	d := testDocker(t)
	const reader = "splitbrain/test-vdsoclock-go:latest"
	for image, pkg := range map[string][2]string{vdsoclockImage: {"..", vdsoclockMain}, reader: {".", "./testdata/vdsoclock/reader"}} {
		if err := d.BuildGoImage(ctx, image, pkg[0], pkg[1]); err != nil {
			t.Fatal(err)
		}
	}
	runID, nw := throwawayNetwork(t, d, "test-vdsoclock-seccomp")
	ctr, err := d.Start(ctx, ContainerSpec{RunID: runID, Name: "n1", Image: reader, Network: nw})
	if err != nil {
		t.Fatal(err)
	}
	const noPtrace = `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["ptrace"],"action":"SCMP_ACT_ERRNO"}]}`
	res, err := d.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:   "splitbrain-" + runID + "-n1-clock",
		Config: &container.Config{Image: vdsoclockImage, Labels: runLabels(runID, "n1-clock")},
		HostConfig: &container.HostConfig{
			NetworkMode: container.NetworkMode("container:" + ctr.ID), PidMode: container.PidMode("container:" + ctr.ID),
			CapAdd: []string{"SYS_PTRACE"}, SecurityOpt: []string{"seccomp=" + noPtrace},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	ip, err := d.IP(ctx, ctr.ID, nw)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{docker: d, ips: map[string]netip.Addr{"n1": netip.MustParseAddr(ip)}, clockSidecars: map[string]string{"n1": res.ID}}
	err = c.waitClockSidecar(ctx, "n1")
	if !IsBadInput(err) || !strings.Contains(err.Error(), "ptrace not allowed") {
		t.Fatalf("a sidecar refused ptrace: %v, want bad input saying ptrace is not allowed", err)
	}
	t.Log(err)
}
