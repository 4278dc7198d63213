// Package procsignal stops and continues a container's processes by the
// command name the kernel keeps for them, from a throwaway container that
// joins the container's PID namespace.
package procsignal

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/splitbrain/splitbrain/targets"
)

// Process is one process as /proc tells of it.
type Process struct {
	PID  int
	Comm string // the command name: its executable's, at most 15 bytes
}

// Actions the program takes, by the name it is given.
const (
	Stop     = "stop"     // SIGSTOP
	Continue = "continue" // SIGCONT
	List     = "list"     // no signal: only say what is named so
)

// signals are the signals of the actions that send one.
var signals = map[string]syscall.Signal{Stop: syscall.SIGSTOP, Continue: syscall.SIGCONT}

// Result is what the program prints as JSON: the processes named comm
// that it signalled, and whether the namespace's init (PID 1) is named
// so. The kernel drops a SIGSTOP that init's own namespace sends it (it
// has no handler for it, nor may have), so the caller signals init from
// outside: the Docker Engine's kill.
//
// List signals nothing: Signalled are then the processes named comm but
// init, Running the names of every process, sorted, and InitComm init's.
type Result struct {
	Comm      string   `json:"comm"`
	Signalled []int    `json:"signalled"`
	Init      bool     `json:"init"`
	Running   []string `json:"running,omitempty"`
	InitComm  string   `json:"init_comm,omitempty"`
}

// Found says whether any process is named so.
func (r Result) Found() bool { return r.Init || len(r.Signalled) > 0 }

// Read lists the processes under proc (a /proc), in PID order, but the
// reader itself (proc's self), which may bear the name it looks for: a
// Go program in an image of splitbrain's is /app, as a Go node is. A
// process that exits while it is read is left out.
func Read(proc string) ([]Process, error) {
	entries, err := os.ReadDir(proc)
	if err != nil {
		return nil, err
	}
	self, _ := os.Readlink(filepath.Join(proc, "self"))
	var out []Process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || e.Name() == self {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(proc, e.Name(), "comm"))
		if err != nil {
			continue
		}
		out = append(out, Process{PID: pid, Comm: strings.TrimSuffix(string(comm), "\n")})
	}
	slices.SortFunc(out, func(a, b Process) int { return a.PID - b.PID })
	return out, nil
}

// Cut is comm as the kernel keeps it.
func Cut(comm string) string {
	if len(comm) > targets.MaxCommLen {
		return comm[:targets.MaxCommLen]
	}
	return comm
}

// Named are the processes of ps whose command name is comm, cut as the
// kernel cuts it.
func Named(ps []Process, comm string) []Process {
	comm = Cut(comm)
	var out []Process
	for _, p := range ps {
		if p.Comm == comm {
			out = append(out, p)
		}
	}
	return out
}

// Do takes action on the processes of ps named comm, each but init sent
// the action's signal by kill, which returns its error.
func Do(action, comm string, ps []Process, kill func(pid int, s syscall.Signal) error) (Result, error) {
	sig, sends := signals[action]
	if !sends && action != List {
		return Result{}, fmt.Errorf("unknown action %q (want %s, %s or %s)", action, Stop, Continue, List)
	}
	r := Result{Comm: comm, Signalled: []int{}}
	if !sends {
		for _, p := range ps {
			r.Running = append(r.Running, p.Comm)
			if p.PID == 1 {
				r.InitComm = p.Comm
			}
		}
		slices.Sort(r.Running)
		r.Running = slices.Compact(r.Running)
	}
	for _, p := range Named(ps, comm) {
		switch {
		case p.PID == 1:
			r.Init = true
		case !sends:
			r.Signalled = append(r.Signalled, p.PID)
		default:
			if err := kill(p.PID, sig); err != nil && err != syscall.ESRCH { // one that exited meanwhile has nothing to stop
				return r, fmt.Errorf("%s %d (%s): %w", action, p.PID, comm, err)
			}
			r.Signalled = append(r.Signalled, p.PID)
		}
	}
	return r, nil
}
