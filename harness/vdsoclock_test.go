package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

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
// delays it, an error a fast clock would triple), and its clocks' readings.
type reading struct {
	at       time.Time
	rt, mono int64   // realtime (unix ns) and monotonic (ns) as the reader read them
	more     []int64 // the C reader's gettimeofday and time, in ns
}

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
		if len(f) < 4 {
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
			rs = append(rs, reading{at: at, rt: n[1], mono: n[2], more: n[3:]})
		}
	}
	return rs
}

// awaitReadings waits until the reader has printed n lines since t.
func awaitReadings(t *testing.T, d *Docker, id string, since time.Time, n int, timeout time.Duration) []reading {
	t.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(50 * time.Millisecond) {
		rs := readingsSince(t, d, id, since)
		if len(rs) >= n {
			return rs
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reader printed %d lines in %s since %s, want %d", len(rs), timeout, since.Format(time.StampMilli), n)
		}
	}
}

// rate is how fast the monotonic clock ran over rs, against true time.
func rate(rs []reading) float64 {
	first, last := rs[0], rs[len(rs)-1]
	return float64(last.mono-first.mono) / float64(last.at.Sub(first.at))
}

// A static Go binary's time.Now() and time.Since(), a glibc program's
// clock_gettime, gettimeofday and time, and the JVM's currentTimeMillis and
// nanoTime, with no change to any of them, see a clock sidecar's jump and
// rate, and true time again once healed, their vDSOs restored, and after a
// restart.
func TestVdsoclockReachesEveryProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts containers")
	}
	t.Parallel()
	d := testDocker(t)
	images := readerImages(t, d)
	for _, r := range readers {
		t.Run(r.kind, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			runID, nw := throwawayNetwork(t, d, "test-vdsoclock-"+r.kind)
			ctr, err := d.Start(ctx, ContainerSpec{RunID: runID, Name: "n1", Image: images[r.kind], Network: nw})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.StartClockSidecar(ctx, runID, "n1-clock", ctr.ID, vdsoclockImage, nil, nil); err != nil {
				t.Fatal(err)
			}
			ip, err := d.IP(ctx, ctr.ID, nw)
			if err != nil {
				t.Fatal(err)
			}
			url := fmt.Sprintf("http://%s:%d", ip, vdsoclock.Port)
			if _, err := waitAll(ctx, []string{"n1"}, 20*time.Second, func(string) string { return url + "/health" }); err != nil {
				t.Fatal(err)
			}
			awaitReadings(t, d, ctr.ID, time.Now(), 2, 20*time.Second) // the JVM takes a moment
			set := func(s contract.Skew) time.Time {
				t.Helper()
				b, _ := json.Marshal(s)
				req, _ := http.NewRequest(http.MethodPut, url+"/skew", bytes.NewReader(b))
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
			// Each reading within tol of what the skew gives at its time,
			// for a reader preempted between its true and its skewed
			// readings.
			const tol = 150 * time.Millisecond
			check := func(what string, rs []reading, want func(at time.Time) time.Duration) {
				t.Helper()
				for _, x := range rs {
					w := want(x.at)
					cols := append([]int64{x.rt}, x.more...)
					for i, v := range cols {
						got := time.Duration(v - x.at.UnixNano())
						slack := tol
						if i == 2 {
							slack += time.Second // time() counts whole seconds
						}
						if got < w-slack || got > w+slack {
							t.Fatalf("%s: reading %d of a line at %s is %s off true time, want %s", what, i, x.at.Format(time.StampMilli), got, w)
						}
					}
				}
			}

			jumped := set(contract.Skew{Offset: time.Hour})
			check("jumped 1h", awaitReadings(t, d, ctr.ID, jumped, 10, 10*time.Second), func(time.Time) time.Duration { return time.Hour })
			if r.kind != "go" { // a Debian image, with bash
				// A process started during the fault is patched at the
				// sidecar's next look (every 100 ms, later on a loaded
				// machine): bash, whose $EPOCHREALTIME is glibc's
				// gettimeofday, waits until it reads half the jump, 10 s
				// at most.
				half := time.Now().Add(30 * time.Minute).Unix()
				wait := fmt.Sprintf(`until [ "${EPOCHREALTIME%%.*}" -gt %d ]; do sleep 0.1; done; echo $EPOCHREALTIME`, half)
				code, out, err := d.Exec(ctx, ctr.ID, []string{"timeout", "10", "bash", "-c", wait})
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
				if got := time.Duration(secs*1e9) - time.Duration(time.Now().UnixNano()); got < time.Hour-time.Second || got > time.Hour+tol {
					t.Errorf("a process started during a jump of 1h is %s off true time", got)
				}
			}

			since := time.Now()
			fast := set(contract.Skew{Rate: 3, Since: since.UnixNano()})
			rs := awaitReadings(t, d, ctr.ID, fast, 30, 10*time.Second)
			check("at 3x", rs, func(at time.Time) time.Duration { return 2 * at.Sub(since) })
			if got := rate(rs); got < 2.7 || got > 3.3 {
				t.Errorf("at 3x the monotonic clock ran at %.2fx over %s", got, rs[len(rs)-1].at.Sub(rs[0].at))
			}

			healed := set(contract.Skew{})
			// A Go program sleeping when its fast monotonic clock steps
			// back wakes that much later: up to the 2 s gained.
			rs = awaitReadings(t, d, ctr.ID, healed, 10, 10*time.Second)
			check("healed", rs, func(time.Time) time.Duration { return 0 })
			if got := rate(rs); got < 0.8 || got > 1.2 {
				t.Errorf("healed, the monotonic clock ran at %.2fx", got)
			}
			var st vdsoclock.State
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				res, err := http.Get(url + "/skew")
				if err != nil {
					t.Fatal(err)
				}
				err = json.NewDecoder(res.Body).Decode(&st)
				res.Body.Close()
				if err != nil {
					t.Fatal(err)
				}
				if st.Patched == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("healed 5 s ago, %d processes still have a patched vDSO", st.Patched)
				}
			}

			// A restart during a jump: the sidecar ends with the node's
			// PID namespace, the new processes have the kernel's vDSO.
			set(contract.Skew{Offset: time.Hour})
			if err := d.Kill(ctx, ctr.ID); err != nil {
				t.Fatal(err)
			}
			restarted := time.Now()
			if err := d.Restart(ctx, ctr.ID); err != nil {
				t.Fatal(err)
			}
			check("restarted", awaitReadings(t, d, ctr.ID, restarted, 10, 20*time.Second), func(time.Time) time.Duration { return 0 })
		})
	}
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
