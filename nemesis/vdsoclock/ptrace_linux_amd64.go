package vdsoclock

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// stopped is a process whose threads this tracer holds stopped.
type stopped struct {
	pid  int
	tids []int
	sigs map[int][]unix.Signal // signals that arrived while stopping, to send again
}

// stop seizes every thread of pid and stops it. A thread that starts while
// the others stop is taken on the next pass: a stopped thread starts none,
// so the passes end. The caller must have locked its OS thread: ptrace
// answers only the thread that attached.
func stop(pid int) (*stopped, error) {
	s := &stopped{pid: pid, sigs: map[int][]unix.Signal{}}
	for {
		tids, err := tasks(pid)
		if err != nil {
			s.resume()
			return nil, err
		}
		added := false
		for _, tid := range tids {
			if slices.Contains(s.tids, tid) {
				continue
			}
			if err := unix.PtraceSeize(tid); err != nil {
				if errors.Is(err, unix.ESRCH) {
					continue // the thread ended meanwhile
				}
				s.resume()
				return nil, fmt.Errorf("ptrace seize %d: %w", tid, err)
			}
			if err := unix.PtraceInterrupt(tid); err != nil {
				_ = unix.PtraceDetach(tid)
				continue
			}
			if !s.waitStop(tid) {
				continue
			}
			s.tids = append(s.tids, tid)
			added = true
		}
		if !added {
			if len(s.tids) == 0 {
				return nil, errGone
			}
			return s, nil
		}
	}
}

// errGone: the process ended before it could be patched.
var errGone = errors.New("process gone")

// waitStop waits for tid's stop after PTRACE_INTERRUPT. A signal that
// comes first is kept to be sent again once the thread runs; false if the
// thread ended.
func (s *stopped) waitStop(tid int) bool {
	for {
		var ws unix.WaitStatus
		if _, err := unix.Wait4(tid, &ws, unix.WALL, nil); err != nil {
			return false
		}
		switch {
		case ws.Exited() || ws.Signaled():
			return false
		case !ws.Stopped():
			continue
		case uint32(ws)>>16 == unix.PTRACE_EVENT_STOP:
			return true
		default: // a signal's delivery stop
			s.sigs[tid] = append(s.sigs[tid], ws.StopSignal())
			if err := unix.PtraceCont(tid, 0); err != nil {
				return false
			}
		}
	}
}

// resume lets every thread go and sends again the signals held back.
func (s *stopped) resume() {
	for _, tid := range s.tids {
		_ = unix.PtraceDetach(tid)
	}
	for tid, sigs := range s.sigs {
		for _, sig := range sigs {
			_ = unix.Tgkill(s.pid, tid, sig)
		}
	}
}

// leader is the thread that runs injected system calls.
func (s *stopped) leader() int {
	if slices.Contains(s.tids, s.pid) {
		return s.pid
	}
	return s.tids[0]
}

// within reports whether some thread's next instruction lies in one of the
// ranges [a, a+jumpLen): rewriting those bytes under it would have it run
// half of one instruction and half of another.
func (s *stopped) within(addrs []uint64) (bool, error) {
	for _, tid := range s.tids {
		var r unix.PtraceRegs
		if err := unix.PtraceGetRegs(tid, &r); err != nil {
			return false, fmt.Errorf("registers of %d: %w", tid, err)
		}
		for _, a := range addrs {
			if r.Rip >= a && r.Rip < a+jumpLen {
				return true, nil
			}
		}
	}
	return false, nil
}

// syscall runs system call nr with args in thread tid, stopped, by pointing
// it at a syscall instruction (at addr) for one step, and puts its
// registers back. orig_rax = -1 keeps the kernel from restarting, in place
// of ours, a system call the thread was stopped in; the registers put back
// carry that call, which the kernel then restarts as it would have.
func (s *stopped) syscall(tid int, addr uint64, nr uint64, args ...uint64) (uint64, error) {
	var saved unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &saved); err != nil {
		return 0, err
	}
	r := saved
	r.Rax, r.Orig_rax, r.Rip = nr, ^uint64(0), addr
	regs := []*uint64{&r.Rdi, &r.Rsi, &r.Rdx, &r.R10, &r.R8, &r.R9}
	for i, a := range args {
		*regs[i] = a
	}
	if err := unix.PtraceSetRegs(tid, &r); err != nil {
		return 0, err
	}
	defer func() { _ = unix.PtraceSetRegs(tid, &saved) }()
	for range 10 {
		if err := unix.PtraceSingleStep(tid); err != nil {
			return 0, err
		}
		var ws unix.WaitStatus
		if _, err := unix.Wait4(tid, &ws, unix.WALL, nil); err != nil {
			return 0, err
		}
		if ws.Exited() || ws.Signaled() {
			return 0, errGone
		}
		if err := unix.PtraceGetRegs(tid, &r); err != nil {
			return 0, err
		}
		if r.Rip == addr+2 {
			return r.Rax, nil
		}
		if ws.Stopped() && ws.StopSignal() != unix.SIGTRAP {
			s.sigs[tid] = append(s.sigs[tid], ws.StopSignal()) // came before the step: step again
		}
	}
	return 0, errors.New("injected system call did not complete")
}

// mem is a process's memory through /proc/PID/mem, which writes even to
// the read-only vDSO of a process this tracer holds (the kernel copies the
// page for that process alone).
type mem struct{ f *os.File }

func openMem(pid int) (mem, error) {
	f, err := os.OpenFile("/proc/"+strconv.Itoa(pid)+"/mem", os.O_RDWR, 0)
	return mem{f}, err
}

func (m mem) read(addr uint64, n int) ([]byte, error) {
	b := make([]byte, n)
	_, err := m.f.ReadAt(b, int64(addr))
	return b, err
}

func (m mem) write(addr uint64, b []byte) error {
	_, err := m.f.WriteAt(b, int64(addr))
	return err
}

func (m mem) close() { _ = m.f.Close() }

// image is the vDSO of a process as it is mapped now.
type image struct {
	start uint64
	img   []byte
	syms  map[string]symbol
}

func readImage(pid int, m mem) (image, error) {
	maps, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		return image{}, errGone
	}
	start, end, ok := vdsoRange(string(maps))
	if !ok {
		return image{}, errNoVDSO
	}
	img, err := m.read(start, int(end-start))
	if err != nil {
		return image{}, err
	}
	syms, err := vdsoSymbols(img)
	if err != nil {
		return image{}, err
	}
	return image{start: start, img: img, syms: syms}, nil
}

// errNoVDSO: a process without a vDSO (a zombie, or one the kernel gave
// none) has no clock to patch.
var errNoVDSO = errors.New("no vDSO")

// patchedTo reports whether the image jumps to page's routine, as a
// process patched by this tracer does until it execs.
func (im image) patchedTo(page uint64) bool {
	s := im.syms[replaced[0].name]
	return bytes.Equal(im.img[s.off:s.off+jumpLen], jump(page+replaced[0].entry))
}

// patch is what was done to one process.
type patch struct {
	pid  int
	page uint64            // the routine's page in the process
	orig map[uint64][]byte // the vDSO's own bytes, by address
	seq  uint8             // the data block's sequence number
	// gained is what its monotonic clocks carry from rates that ended
	// (gainedAt), which its data block holds until it ends.
	gained int64
}

const (
	sysMmap   = 9
	pageSize  = 4096
	tries     = 100 // of stopping a process with no thread in the bytes to rewrite
	triesWait = time.Millisecond
)

// patchProcess patches pid's vDSO to read its clocks through routine with
// data block t. On error nothing is left patched.
func patchProcess(pid int, t table) (*patch, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	m, err := openMem(pid)
	if err != nil {
		return nil, errGone
	}
	defer func() { m.close() }() // the one open at the end
	im, err := readImage(pid, m)
	if err != nil {
		return nil, err
	}
	sysOff, err := syscallAt(im.img)
	if err != nil {
		return nil, err
	}
	var addrs []uint64
	for _, r := range replaced {
		if s, ok := im.syms[r.name]; ok {
			addrs = append(addrs, im.start+s.off)
		}
	}
	s, err := stopClear(pid, addrs)
	if err != nil {
		return nil, err
	}
	defer s.resume()
	// The image was read before the stop: a process that exec'd since (a
	// shell's child becoming sleep) has a new vDSO elsewhere and a new
	// memory, and a routine injected at the old addresses crashes it. It
	// is left to the next pass, which patches what it became.
	m.close()
	if m, err = openMem(pid); err != nil {
		return nil, errGone
	}
	if now, err := readImage(pid, m); err != nil || now.start != im.start || !bytes.Equal(now.img, im.img) {
		return nil, errGone
	}
	page, err := s.syscall(s.leader(), im.start+sysOff, sysMmap, 0, pageSize,
		unix.PROT_READ|unix.PROT_WRITE|unix.PROT_EXEC, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS, ^uint64(0), 0)
	if err != nil {
		return nil, fmt.Errorf("mmap in %d: %w", pid, err)
	}
	if int64(page) < 0 && int64(page) > -4096 {
		return nil, fmt.Errorf("mmap in %d: %w", pid, unix.Errno(-int64(page)))
	}
	code := slices.Clone(routine)
	copy(code[offTable:], t.bytes())
	if err := m.write(page, code); err != nil {
		return nil, fmt.Errorf("write the routine into %d: %w", pid, err)
	}
	p := &patch{pid: pid, page: page, orig: map[uint64][]byte{}}
	for _, r := range replaced {
		sym, ok := im.syms[r.name]
		if !ok {
			continue
		}
		addr := im.start + sym.off
		orig := slices.Clone(im.img[sym.off : sym.off+jumpLen])
		if err := m.write(addr, jump(page+r.entry)); err != nil {
			p.restore(m)
			return nil, fmt.Errorf("write the vDSO of %d: %w", pid, err)
		}
		p.orig[addr] = orig
	}
	return p, nil
}

// stopClear stops pid with no thread about to run the bytes at addrs,
// letting it run a moment between tries.
func stopClear(pid int, addrs []uint64) (*stopped, error) {
	for range tries {
		s, err := stop(pid)
		if err != nil {
			return nil, err
		}
		in, err := s.within(addrs)
		if err != nil {
			s.resume()
			return nil, err
		}
		if !in {
			return s, nil
		}
		s.resume()
		time.Sleep(triesWait)
	}
	return nil, fmt.Errorf("process %d: a thread stayed in the vDSO's first bytes for %d tries", pid, tries)
}

// restore writes the vDSO's own bytes back.
func (p *patch) restore(m mem) error {
	var errs []error
	for addr, b := range p.orig {
		errs = append(errs, m.write(addr, b))
	}
	return errors.Join(errs...)
}

// current reports whether p is still in place: the process has not
// exec'd (a new vDSO), nor ended and given its pid to another.
func (p *patch) current() bool {
	m, err := openMem(p.pid)
	if err != nil {
		return false
	}
	defer m.close()
	im, err := readImage(p.pid, m)
	return err == nil && im.patchedTo(p.page)
}

// setTable rewrites p's data block: the sequence number odd, the rows,
// the sequence number even, each write landing whole before the next (x86
// keeps stores in order), so a reader that saw the same even number before
// and after its reads read one table.
func (p *patch) setTable(t table) error {
	if !p.current() {
		return errGone
	}
	m, err := openMem(p.pid)
	if err != nil {
		return errGone
	}
	defer m.close()
	p.seq++
	if err := m.write(p.page+offSeq, []byte{p.seq}); err != nil {
		return err
	}
	if err := m.write(p.page+offTable, t.bytes()); err != nil {
		return err
	}
	p.seq++
	return m.write(p.page+offSeq, []byte{p.seq})
}

// unpatch heals p: a zero table first, which takes effect at once, then
// the vDSO's own bytes back, with every thread stopped clear of them.
func (p *patch) unpatch() error {
	if err := p.setTable(table{}); err != nil {
		if errors.Is(err, errGone) {
			return nil
		}
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s, err := stopClear(p.pid, slices.Collect(maps.Keys(p.orig)))
	if err != nil {
		if errors.Is(err, errGone) {
			return nil
		}
		return err
	}
	defer s.resume()
	if !p.current() {
		return nil // exec'd or ended before the stop: nothing of p is left
	}
	m, err := openMem(p.pid)
	if err != nil {
		return nil
	}
	defer m.close()
	return p.restore(m)
}

// tasks lists the threads of pid.
func tasks(pid int) ([]int, error) {
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return nil, errGone
	}
	var tids []int
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}

// stopAndGo stops every thread of pid and lets them go: what patching
// needs, without the patch.
func stopAndGo(pid int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s, err := stop(pid)
	if err == nil {
		s.resume()
	}
	return err
}
