package vdsoclock

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/contract"
)

// A child (this test binary, run with envChild) answers each line on its
// stdin with what Go's time reads: time.Now() and time.Since(start), both
// through its vDSO's clock_gettime.
const envChild = "VDSOCLOCK_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(envChild) != "" {
		start := time.Now()
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
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

func startChild(t *testing.T) *child {
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

// read asks the child for its clocks: its wall clock less ours, and its
// time since it started.
func (c *child) read(t *testing.T) (skew, since time.Duration) {
	t.Helper()
	if _, err := fmt.Fprintln(c.in); err != nil {
		t.Fatal(err)
	}
	if !c.out.Scan() {
		t.Fatalf("child: %v", c.out.Err())
	}
	var now, s int64
	if _, err := fmt.Sscan(c.out.Text(), &now, &s); err != nil {
		t.Fatal(err)
	}
	return time.Duration(now - time.Now().UnixNano()), time.Duration(s)
}

func near(got, want, tol time.Duration) bool { return got-want < tol && want-got < tol }

// A Go process's time.Now() and time.Since() follow the data block from the
// moment it is patched, and are true again once unpatched, the vDSO's bytes
// as they were.
func TestPatchGoProcess(t *testing.T) {
	c := startChild(t)
	pid := c.cmd.Process.Pid
	if skew, _ := c.read(t); !near(skew, 0, 50*time.Millisecond) {
		t.Fatalf("child's clock off by %s before any patch", skew)
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

	jump := contract.Skew{Offset: time.Hour}
	p, err := patchProcess(pid, tableFor(jump, readNow()))
	if err != nil {
		t.Fatal(err)
	}
	_, since0 := c.read(t)
	if skew, _ := c.read(t); !near(skew, time.Hour, 50*time.Millisecond) {
		t.Fatalf("after a jump of 1h, the child's clock is off by %s", skew)
	}

	// Twice as fast from now: both clocks gain what passes.
	rate := contract.Skew{Rate: 2, Since: time.Now().UnixNano()}
	if err := p.setTable(tableFor(rate, readNow())); err != nil {
		t.Fatal(err)
	}
	_, since1 := c.read(t)
	time.Sleep(300 * time.Millisecond)
	skew, since2 := c.read(t)
	if !near(skew, 300*time.Millisecond, 100*time.Millisecond) {
		t.Errorf("at twice the rate for 300ms, the child's wall clock is off by %s", skew)
	}
	if d := since2 - since1; !near(d, 600*time.Millisecond, 100*time.Millisecond) {
		t.Errorf("at twice the rate for 300ms, time.Since moved %s", d)
	}
	if since1 < since0 {
		t.Errorf("time.Since went back at the rate's start: %s then %s", since0, since1)
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
	if skew, _ := c.read(t); !near(skew, 0, 50*time.Millisecond) {
		t.Errorf("after the heal the child's clock is off by %s", skew)
	}
}
