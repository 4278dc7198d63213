// Package diskfs is the filesystem layer of the disk faults: a FUSE
// passthrough mounted over a node's data directories, inside its
// container, which can stall or fail what the program writes and keeps
// an undo log of what it has not synced, so that a power cut can lose it.
package diskfs

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
)

// Port is where the layer takes its faults (PUT /fault) and says how it
// does (GET /health), on every address of its container.
const Port = 7097

// Errors a failing disk gives, by the names a Fault carries.
var errnos = map[string]syscall.Errno{"EIO": syscall.EIO, "ENOSPC": syscall.ENOSPC}

// Fault is the disk's state: Stall holds every write, fsync and change of
// a file or directory until the fault is lifted; Fail ("EIO", "ENOSPC")
// fails them at once. The zero Fault is a healthy disk.
type Fault struct {
	Stall bool   `json:"stall,omitempty"`
	Fail  string `json:"fail,omitempty"`
}

// Validate says what is wrong with f.
func (f Fault) Validate() error {
	if _, ok := errnos[f.Fail]; f.Fail != "" && !ok {
		return fmt.Errorf("fail: %q is not EIO or ENOSPC", f.Fail)
	}
	if f.Stall && f.Fail != "" {
		return fmt.Errorf("a disk stalls or fails, not both")
	}
	return nil
}

// Stats are what the layer has seen since it started.
type Stats struct {
	Writes  int64 `json:"writes"`
	Syncs   int64 `json:"syncs"`
	Stalled int64 `json:"stalled"` // operations that waited on a stall
	Failed  int64 `json:"failed"`
	// Unsynced is how many files have writes not yet synced, and
	// UndoBytes the size of their undo log; both 0 without one.
	Unsynced  int   `json:"unsynced"`
	UndoBytes int64 `json:"undo_bytes"`
}

// Layer is the state every mount of a container shares: the fault in
// force and, when the run may cut power, the undo log.
type Layer struct {
	mu    sync.Mutex
	heal  *sync.Cond
	fault Fault
	undo  *Undo // nil: writes are not recorded
	stats struct{ writes, syncs, stalled, failed atomic.Int64 }
}

// NewLayer is a healthy disk; undo, if not nil, records unsynced writes.
func NewLayer(undo *Undo) *Layer {
	l := &Layer{undo: undo}
	l.heal = sync.NewCond(&l.mu)
	return l
}

// Set puts fault f in force; a stall lifted lets its waiting operations
// go on.
func (l *Layer) Set(f Fault) error {
	if err := f.Validate(); err != nil {
		return err
	}
	l.mu.Lock()
	l.fault = f
	l.mu.Unlock()
	l.heal.Broadcast()
	return nil
}

// enter is the gate of every operation that changes the disk: it waits
// out a stall and fails with a failing disk's error.
func (l *Layer) enter() syscall.Errno {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fault.Stall {
		l.stats.stalled.Add(1)
		for l.fault.Stall {
			l.heal.Wait()
		}
	}
	if e, ok := errnos[l.fault.Fail]; ok {
		l.stats.failed.Add(1)
		return e
	}
	return 0
}

// Stats says what the layer has seen.
func (l *Layer) Stats() Stats {
	s := Stats{Writes: l.stats.writes.Load(), Syncs: l.stats.syncs.Load(), Stalled: l.stats.stalled.Load(), Failed: l.stats.failed.Load()}
	if l.undo != nil {
		s.Unsynced, s.UndoBytes = l.undo.Pending()
	}
	return s
}

// ServeHTTP takes a fault (PUT /fault, a Fault as JSON) and says how the
// disk does (GET /health, Stats as JSON).
func (l *Layer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPut && r.URL.Path == "/fault":
		var f Fault
		if err := json.NewDecoder(r.Body).Decode(&f); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := l.Set(f); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodGet && r.URL.Path == "/health":
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(l.Stats())
	default:
		http.NotFound(w, r)
	}
}

// Where the layer lives in a container, outside its data directories:
// its program, its undo log, and the mark a power cut leaves for the
// layer's next start.
const (
	Dir      = "/.splitbrain"
	Program  = Dir + "/diskfs"
	UndoDir  = Dir + "/undo"
	PowerCut = "power-cut" // in Dir
)

// ExitRefused is the layer's exit code when it cannot start its program:
// a data directory the image lacks, or FUSE refused by the kernel or the
// Engine. Its last line of output says which.
const ExitRefused = 78
