package vdsoclock

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/splitbrain/splitbrain/contract"
)

// Clocks skews every process of the PID namespace it runs in, but its own.
type Clocks struct {
	mu      sync.Mutex
	skew    contract.Skew
	t       table
	since   time.Time      // when skew was set
	patched map[int]*patch // by pid
}

// New checks that this process may patch the others (ptrace is allowed, by
// the kernel and by the seccomp profile) and returns their Clocks.
func New() (*Clocks, error) {
	if err := probe(); err != nil {
		return nil, err
	}
	return &Clocks{patched: map[int]*patch{}}, nil
}

// probe stops and lets go one process of the namespace, as patching will.
func probe() error {
	pids, err := others()
	if err != nil {
		return err
	}
	if len(pids) == 0 {
		return errors.New("no process to patch: is the sidecar in the node's PID namespace (--pid container:<node>)?")
	}
	var last error
	for _, pid := range pids {
		err := stopAndGo(pid)
		if err == nil || errors.Is(err, errGone) {
			return nil
		}
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EACCES) {
			return fmt.Errorf("ptrace not allowed here (needs CAP_SYS_PTRACE and a seccomp profile that allows ptrace): %w", err)
		}
		last = err
	}
	return last
}

// Skew is the skew in force.
func (c *Clocks) Skew() contract.Skew {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.skew
}

// Set gives every process skew s. The zero skew puts every process back
// on true time at once, by its data block, but for the offset its
// monotonic clocks gained under a rate, which it keeps (gainedAt); the
// vDSOs' own bytes go back once the zero skew has held for settle
// (Rescan), so that a strobe, which heals and skews many times a second,
// rewrites data blocks rather than code. If some process cannot be given
// s, every process is healed and the error says why: no clock is left
// half-applied.
func (c *Clocks) Set(s contract.Skew) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := readNow()
	next := tableFor(s, now)
	for _, p := range c.patched {
		p.gained = gainedAt(p.gained, c.skew, c.t, s, now)
	}
	c.skew, c.t, c.since = s, next, time.Now()
	for pid, p := range c.patched {
		if err := p.setTable(c.t.keeping(p.gained)); err != nil {
			delete(c.patched, pid) // ended or exec'd: rescan takes it as new
		}
	}
	if c.t.zero() {
		return nil
	}
	if err := c.rescan(); err != nil {
		return errors.Join(err, c.heal())
	}
	return nil
}

// settle is how long the zero skew holds before the vDSOs are restored.
const settle = 500 * time.Millisecond

// Rescan patches the processes started since the last Set while a skew is
// in force, and restores the vDSOs once the zero skew has settled.
func (c *Clocks) Rescan() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.t.zero() {
		if len(c.patched) > 0 && time.Since(c.since) >= settle {
			return c.restore()
		}
		return nil
	}
	return c.rescan()
}

// restore puts back the vDSO of every patched process that carries no
// gained monotonic time; one that does reads the routine until it ends.
func (c *Clocks) restore() error {
	var errs []error
	for pid, p := range c.patched {
		if p.gained != 0 && p.current() {
			continue
		}
		if err := p.unpatch(); err != nil {
			errs = append(errs, fmt.Errorf("process %d: %w", pid, err))
		}
		delete(c.patched, pid)
	}
	return errors.Join(errs...)
}

// Heal puts every process back on true time and restores every vDSO now,
// its gained monotonic time too: the sidecar's last act, when it stops.
func (c *Clocks) Heal() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.heal()
}

// rescan patches the processes not patched yet. A new one's monotonic
// clocks go on from where the kernel's are, at the rate in force from then
// on: it carries minus what the rate gained before it was patched.
func (c *Clocks) rescan() error {
	pids, err := others()
	if err != nil {
		return err
	}
	for _, pid := range pids {
		if p, ok := c.patched[pid]; ok && p.current() {
			continue
		}
		delete(c.patched, pid)
		gained := -c.t.monotonicOffset(readNow())
		p, err := patchProcess(pid, c.t.keeping(gained))
		switch {
		case errors.Is(err, errGone) || errors.Is(err, errNoVDSO):
		case err != nil:
			return fmt.Errorf("process %d (%s): %w", pid, comm(pid), err)
		default:
			p.gained = gained
			c.patched[pid] = p
		}
	}
	return nil
}

// heal puts every patched process back on true time: first every data
// block to zero, at once, then the vDSOs' own bytes back.
func (c *Clocks) heal() error {
	c.skew, c.t = contract.Skew{}, table{}
	for pid, p := range c.patched {
		p.gained = 0
		if err := p.setTable(table{}); err != nil {
			delete(c.patched, pid)
		}
	}
	return c.restore()
}

// Keeping is how many patched processes carry monotonic time a rate gave
// them (gainedAt).
func (c *Clocks) Keeping() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, p := range c.patched {
		if p.gained != 0 {
			n++
		}
	}
	return n
}

// Patched is how many processes have a patched vDSO now.
func (c *Clocks) Patched() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.patched)
}

// readNow reads every clock the table skews, at one instant.
func readNow() readings {
	now := readings{}
	for _, id := range append(append([]int32{}, wallClocks...), monotonicClocks...) {
		var ts unix.Timespec
		if unix.ClockGettime(id, &ts) == nil {
			now[id] = ts.Nano()
		}
	}
	return now
}

// others lists the processes of this PID namespace but this one.
func others() ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// comm is a process's command name, for errors.
func comm(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return string(trimNL(b))
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == '\n' {
		b = b[:len(b)-1]
	}
	return b
}
