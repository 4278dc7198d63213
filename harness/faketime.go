package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/targets"
)

// Clock faults reach a target that is not written in Go through
// libfaketime, preloaded into its processes, which reads the node's skew
// from a timestamp file in the node's clock folder. The file holds only an
// offset ("+12.500", seconds): libfaketime's own speed factor counts from
// when each process started, so a clock running at another rate is made
// by rewriting the offset every faketimeStep instead.
const (
	faketimeFile = "faketime.rc"
	faketimeStep = 20 * time.Millisecond
	faketimeLib  = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1" // Debian's libfaketime
	// libcMalloc is glibc's malloc as a library of its own. Preloaded
	// before libfaketime, it lets a program linked with jemalloc (Debian's
	// redis-server) start under libfaketime: jemalloc reads the clock
	// while it initializes, libfaketime allocates while it does, and the
	// two recurse into each other until the program aborts (libfaketime
	// issue #130). With glibc's malloc, free and malloc_usable_size first,
	// jemalloc is asked only for statistics and size classes.
	libcMalloc = "/lib/x86_64-linux-gnu/libc_malloc_debug.so.0"
)

// faketimeEnv is what a node needs for libfaketime to follow its clock
// folder. Only the wall clock is skewed, as on a real machine whose clock
// is off: monotonic clocks, and the waits and timers on them, keep true
// time. libfaketime leaves the monotonic clocks alone; its companion
// monotonic.so, preloaded just before it, keeps it from the waits on them
// (faketime_tools.go).
func faketimeEnv() map[string]string {
	return map[string]string{
		"LD_PRELOAD":                   libcMalloc + ":" + faketimeMount + "/monotonic.so:" + faketimeLib,
		"FAKETIME_TIMESTAMP_FILE":      clockMount + "/" + faketimeFile,
		"FAKETIME_NO_CACHE":            "1",
		"FAKETIME_DONT_FAKE_MONOTONIC": "1",
	}
}

// usesFaketime says whether libfaketime skews the clock of any container
// of target m: its nodes', or a service's.
func usesFaketime(m targets.Manifest) bool {
	return m.Clock == targets.ClockFaketime || slices.ContainsFunc(m.Services, func(s targets.Service) bool { return s.Clock == targets.ClockFaketime })
}

// faketimeSpec is the timestamp file's content for skew s at real time now.
func faketimeSpec(s contract.Skew, now time.Time) string {
	return fmt.Sprintf("%+.3f\n", s.Apply(now).Sub(now).Seconds())
}

// faketimeClocks writes the timestamp files of the nodes' skews, and keeps
// rewriting those whose clocks run at another rate until stopped.
type faketimeClocks struct {
	// write replaces node's timestamp file by b, whole: in its clock
	// folder here, or copied into its container on another engine.
	write func(node string, b []byte) error

	mu    sync.Mutex
	skews map[string]contract.Skew // nodes whose clocks run at another rate
	stop  chan struct{}
	done  chan struct{}
}

// faketimeWriter replaces a node's timestamp file in the clock folder dir.
func faketimeWriter(dir string) func(node string, b []byte) error {
	return func(node string, b []byte) error { return writeAtomic(filepath.Join(dir, node), faketimeFile, b) }
}

// startFaketimeBy writes the timestamp files with write.
func startFaketimeBy(write func(node string, b []byte) error) *faketimeClocks {
	f := &faketimeClocks{write: write, skews: map[string]contract.Skew{}, stop: make(chan struct{}), done: make(chan struct{})}
	go f.run()
	return f
}

// set writes node's timestamp file for s now.
func (f *faketimeClocks) set(node string, s contract.Skew) error {
	// Under the lock, so that no rewrite of an older skew lands after it.
	f.mu.Lock()
	defer f.mu.Unlock()
	if s.Rate != 0 && s.Rate != 1 {
		f.skews[node] = s
	} else {
		delete(f.skews, node)
	}
	return f.write(node, []byte(faketimeSpec(s, time.Now())))
}

func (f *faketimeClocks) run() {
	defer close(f.done)
	t := time.NewTicker(faketimeStep)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
			f.mu.Lock()
			// The time of the write, not of the tick: a tick read late on
			// a loaded machine would write an offset already old.
			now := time.Now()
			for node, s := range f.skews {
				_ = f.write(node, []byte(faketimeSpec(s, now)))
			}
			f.mu.Unlock()
		}
	}
}

// close stops the rewriting; the files stay as they are.
func (f *faketimeClocks) close() {
	close(f.stop)
	<-f.done
}

// writeAtomic replaces dir/name by a rename, so a reader never sees half
// of it.
func writeAtomic(dir, name string, b []byte) error {
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}
