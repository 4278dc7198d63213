package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A process that dies without its teardown (go test's timeout, a panic,
// SIGKILL) leaves its containers and networks running. Each carries the
// label LabelOwner, which names the process that made it, so that a later
// process finds those whose owner is gone and removes them
// (RemoveOrphans): `make test` does so before its tests start.

// LabelOwner names the process that made an object:
// "<host name>/<pid>/<start>", its start in clock ticks after boot
// (/proc/<pid>/stat), since a pid alone is given again to another process.
const LabelOwner = "dev.splitbrain.owner"

// unownedAge is how old an object of ours with no owner label (made by a
// splitbrain from before the label) must be to be taken for an orphan: no
// run lasts that long.
const unownedAge = time.Hour

// An owner is a process of one host.
type owner struct {
	host  string
	pid   int
	start uint64
}

func (o owner) String() string { return fmt.Sprintf("%s/%d/%d", o.host, o.pid, o.start) }

// parseOwner reads a LabelOwner value.
func parseOwner(s string) (owner, bool) {
	host, rest, ok1 := strings.Cut(s, "/")
	pid, start, ok2 := strings.Cut(rest, "/")
	var o owner
	var err1, err2 error
	o.host = host
	o.pid, err1 = strconv.Atoi(pid)
	o.start, err2 = strconv.ParseUint(start, 10, 64)
	return o, ok1 && ok2 && host != "" && err1 == nil && err2 == nil
}

// thisProcess is this process as an owner.
var thisProcess = sync.OnceValues(func() (owner, error) {
	host, err := os.Hostname()
	if err != nil {
		return owner{}, err
	}
	_, start, err := procStat(os.Getpid())
	return owner{host, os.Getpid(), start}, err
})

// procStat reads process pid's state (R, S, Z...) and when it started, in
// clock ticks after boot: the 3rd and 22nd fields of /proc/<pid>/stat,
// counted after the command's name, which may hold spaces and
// parentheses itself.
func procStat(pid int) (state string, start uint64, err error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, err
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return "", 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(stat[i+1:])) // from the 3rd field
	if len(f) < 20 {
		return "", 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	return f[0], start, err
}

// ownerGone says whether process o of this host has ended: no process has
// its pid, the one that has started at another time, or it is dead and
// not yet reaped by its parent (a zombie). A process whose state cannot
// be read is taken to run.
func ownerGone(o owner) bool {
	state, start, err := procStat(o.pid)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	return err == nil && (start != o.start || state == "Z" || state == "X")
}

// orphan says whether an object of ours with labels, made at created, is
// an orphan at now: its owner, a process of host, is gone (gone says of
// a process of this host), or it has no owner and is older than
// unownedAge. Objects of another host's processes are never orphans here:
// their processes cannot be seen.
func orphan(labels map[string]string, created, now time.Time, host string, gone func(owner) bool) bool {
	o, ok := parseOwner(labels[LabelOwner])
	if !ok {
		return now.Sub(created) > unownedAge
	}
	return o.host == host && gone(o)
}

// RemoveOrphans force-removes the containers and networks of ours whose
// owner process has ended on this host, and those with no owner that are
// older than unownedAge: what killed runs left behind. What live
// processes run, and anything not labelled as ours, it leaves alone.
func (d *Docker) RemoveOrphans(ctx context.Context) (Removed, error) {
	self, err := thisProcess()
	if err != nil {
		return Removed{}, err
	}
	now := time.Now()
	return d.removeWhere(ctx, LabelManaged+"=true", func(labels map[string]string, created time.Time) bool {
		return orphan(labels, created, now, self.host, ownerGone)
	})
}
