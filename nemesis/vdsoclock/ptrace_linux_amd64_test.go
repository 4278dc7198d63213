package vdsoclock

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/contract"
)

// A child (this test binary, run with envChild) answers each line on its
// stdin with what Go's time reads: time.Now() and time.Since(start), both
// through its vDSO's clock_gettime.
const envChild = "VDSOCLOCK_TEST_CHILD"

// sink keeps the child's timing loop from being optimized away.
var sink int64

func TestMain(m *testing.M) {
	if os.Getenv(envChild) != "" {
		start := time.Now()
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			// "N": time N calls of time.Now() and answer how long they took.
			if n, err := strconv.Atoi(in.Text()); err == nil {
				began := time.Now()
				for range n {
					sink += time.Now().UnixNano()
				}
				fmt.Println(int64(time.Since(began)))
				continue
			}
			fmt.Println(time.Now().UnixNano(), int64(time.Since(start)))
		}
		return
	}
	os.Exit(m.Run())
}

type child struct {
	cmd *exec.Cmd
	in  io.Writer
	out *bufio.Scanner
}

func startChild(t testing.TB) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envChild+"=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return &child{cmd: cmd, in: in, out: bufio.NewScanner(out)}
}

// A reading is what the child read, and when we asked and heard, by our
// true clock.
type childReading struct {
	wall         time.Time     // its time.Now()
	since        time.Duration // its time.Since(start)
	asked, heard time.Time
}

// skewWithin reports whether the child's wall clock was off by want, give
// or take tol, at some moment between our question and its answer.
func (r childReading) skewWithin(want, tol time.Duration) bool {
	return !r.wall.Before(r.asked.Add(want-tol)) && !r.wall.After(r.heard.Add(want+tol))
}

// read asks the child for its clocks.
func (c *child) read(t *testing.T) childReading {
	t.Helper()
	asked := time.Now()
	if _, err := fmt.Fprintln(c.in); err != nil {
		t.Fatal(err)
	}
	if !c.out.Scan() {
		t.Fatalf("child: %v", c.out.Err())
	}
	heard := time.Now()
	var now, s int64
	if _, err := fmt.Sscan(c.out.Text(), &now, &s); err != nil {
		t.Fatal(err)
	}
	return childReading{wall: time.Unix(0, now), since: time.Duration(s), asked: asked, heard: heard}
}

// A Go process's time.Now() and time.Since() follow the data block from the
// moment it is patched, and are true again once unpatched, the vDSO's bytes
// as they were. Each reading is judged against when it was asked and
// answered, however slow a loaded machine makes either.
func TestPatchGoProcess(t *testing.T) {
	const tol = 5 * time.Millisecond
	c := startChild(t)
	pid := c.cmd.Process.Pid
	if r := c.read(t); !r.skewWithin(0, tol) {
		t.Fatalf("child's clock off by %s before any patch", r.wall.Sub(r.heard))
	}
	m, err := openMem(pid)
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	before, err := readImage(pid, m)
	if err != nil {
		t.Fatal(err)
	}

	p, err := patchProcess(pid, tableFor(contract.Skew{Offset: time.Hour}, readNow()))
	if err != nil {
		t.Fatal(err)
	}
	r0 := c.read(t)
	if !r0.skewWithin(time.Hour, tol) {
		t.Fatalf("after a jump of 1h, the child's clock is off by %s", r0.wall.Sub(r0.heard))
	}

	// Twice as fast from since on: both clocks gain what passes.
	since := time.Now()
	if err := p.setTable(tableFor(contract.Skew{Rate: 2, Since: since.UnixNano()}, readNow())); err != nil {
		t.Fatal(err)
	}
	r1 := c.read(t)
	time.Sleep(300 * time.Millisecond)
	r2 := c.read(t)
	if !r2.skewWithin(r2.asked.Sub(since), r2.heard.Sub(r2.asked)+tol) {
		t.Errorf("at twice the rate for %s, the child's wall clock is off by %s", r2.heard.Sub(since), r2.wall.Sub(r2.heard))
	}
	// Between the two readings, true time passed at least from r1's
	// answer to r2's question and at most from r1's question to r2's
	// answer: the child's time.Since twice that.
	if d := r2.since - r1.since; d < 2*r2.asked.Sub(r1.heard)-tol || d > 2*r2.heard.Sub(r1.asked)+tol {
		t.Errorf("at twice the rate, time.Since moved %s while %s to %s passed", d, r2.asked.Sub(r1.heard), r2.heard.Sub(r1.asked))
	}
	if r1.since < r0.since {
		t.Errorf("time.Since went back at the rate's start: %s then %s", r0.since, r1.since)
	}

	if err := p.unpatch(); err != nil {
		t.Fatal(err)
	}
	after, err := readImage(pid, m)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(after.img, before.img) {
		t.Error("the vDSO is not as it was after the heal")
	}
	if r := c.read(t); !r.skewWithin(0, tol) {
		t.Errorf("after the heal the child's clock is off by %s", r.wall.Sub(r.heard))
	}
}

// BenchmarkTimeNow times Go's time.Now() (a wall and a monotonic reading,
// each a vDSO clock_gettime) in a child process, as the kernel's vDSO
// serves it and as the patched one does, where each reading is a system
// call: go test -run NONE -bench TimeNow ./nemesis/vdsoclock
func BenchmarkTimeNow(b *testing.B) {
	for _, patched := range []bool{false, true} {
		name := "vdso"
		if patched {
			name = "patched"
		}
		b.Run(name, func(b *testing.B) {
			c := startChild(b)
			if patched {
				p, err := patchProcess(c.cmd.Process.Pid, tableFor(contract.Skew{Offset: time.Second}, readNow()))
				if err != nil {
					b.Fatal(err)
				}
				defer p.unpatch()
			}
			if _, err := fmt.Fprintln(c.in, b.N); err != nil {
				b.Fatal(err)
			}
			if !c.out.Scan() {
				b.Fatalf("child: %v", c.out.Err())
			}
			took, err := strconv.ParseInt(c.out.Text(), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(took)/float64(b.N), "child-ns/op")
		})
	}
}
