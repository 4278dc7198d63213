package checkers

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/splitbrain/splitbrain/history"
)

// Durability checks that what a target's own store acknowledged is still
// there at the end: a write to its own register (DataWrite) answered ok
// is lost when every final read of its key shows a value written before
// it began, or none. A final read is an ok DataRead invoked once every
// write of its key had been invoked and that write had returned: the
// workload's last reads, and the reads of every key on every node that
// the harness makes after the quiet period.
//
// A value survives in a read of the same value, or of one whose write may
// have taken effect after it (its write had not returned when the lost
// one began: concurrent, indeterminate or later); a value no write made
// (a phantom, which linearizable names) holds no write. A write that some
// final read still holds is not lost, though another read does not show
// it: a replica behind its primary is not a loss.
//
// Invalid needs a lost write; Unknown is a history with acknowledged
// writes whose keys no final read reached (a run killed before them).
//
// Figures: writes_ok, writes_failed, writes_indeterminate, keys,
// final_reads, lost, violations.
func Durability(in Input) Result {
	h := in.History
	byKey := map[string]*ownKeyOps{}
	of := func(k string) *ownKeyOps {
		if byKey[k] == nil {
			byKey[k] = &ownKeyOps{written: map[string]*ownWrite{}}
		}
		return byKey[k]
	}
	f := map[string]float64{"writes_ok": 0, "writes_failed": 0, "writes_indeterminate": 0, "final_reads": 0, "lost": 0}
	ops := opTracker{}
	var reads [][2]int // ok reads' invokes and completions, sorted out once every write is known
	for i := range h {
		inv := ops.see(h, i)
		e := &h[i]
		switch {
		case e.Type == history.Invoke && e.F == history.DataWrite:
			k := of(e.Key)
			k.written[e.Value] = &ownWrite{invoke: i, done: -1, ret: never}
			k.lastInvoke = max(k.lastInvoke, e.Time)
		case inv < 0 || h[inv].F != history.DataWrite && h[inv].F != history.DataRead:
		case h[inv].F == history.DataRead:
			if e.Type == history.OK {
				reads = append(reads, [2]int{inv, i})
			}
		default:
			w := of(h[inv].Key).written[h[inv].Value]
			w.done = i
			switch e.Type {
			case history.OK:
				w.ok, w.ret = true, e.Time
				f["writes_ok"]++
			case history.Fail:
				w.failed, w.ret = true, e.Time
				f["writes_failed"]++
			default:
				f["writes_indeterminate"]++
			}
		}
	}
	for _, k := range byKey {
		for _, w := range k.written {
			if !w.ok && !w.failed && w.done < 0 {
				f["writes_indeterminate"]++ // still open at the end
			}
			if w.ret != never {
				k.lastReturn = max(k.lastReturn, w.ret)
			}
		}
	}
	// A read is final once every write of its key was invoked and every
	// one that returned had returned.
	for _, r := range reads {
		k, start := of(h[r[0]].Key), h[r[0]].Time
		if start > k.lastInvoke && start > k.lastReturn {
			k.finals = append(k.finals, r[1])
			f["final_reads"]++
		}
	}
	names := make([]string, 0, len(byKey))
	for name := range byKey {
		names = append(names, name)
	}
	slices.Sort(names)
	r := Result{Valid: Valid, Figures: f}
	unread := 0
	for _, name := range names {
		k := byKey[name]
		for _, w := range k.written {
			if !w.ok {
				continue
			}
			if len(k.finals) == 0 {
				unread++
				continue
			}
			if !k.holds(h, w) {
				f["lost"]++
				r.Violations = append(r.Violations, lostWrite(h, name, w, k.finals))
			}
		}
	}
	f["keys"] = float64(len(byKey))
	// Proved at the final reads, told in the order the writes were made.
	slices.SortFunc(r.Violations, func(a, b Violation) int {
		return cmp.Or(cmp.Compare(a.Time, b.Time), cmp.Compare(a.Events[0], b.Events[0]))
	})
	f["violations"] = float64(len(r.Violations))
	r.Violations = r.Violations[:min(len(r.Violations), maxStored)]
	switch {
	case len(r.Violations) > 0:
		r.Valid = Invalid
	case unread > 0:
		r.Valid = Unknown
		r.Note = fmt.Sprintf("%d acknowledged writes are on keys that no read reached after the last write: the history ends before the final reads", unread)
	default:
		r.Note = fmt.Sprintf("%.0f acknowledged writes over %d keys, each still held by a final read (%.0f final reads)", f["writes_ok"], len(byKey), f["final_reads"])
	}
	return r
}

// ownKeyOps is what the history holds of one key of a target's own
// register.
type ownKeyOps struct {
	written    map[string]*ownWrite // by value: values are unique in a run
	finals     []int                // the positions of its final reads
	lastInvoke int64                // of its writes
	lastReturn int64                // of its writes that returned
}

// ownWrite is one write to a target's own register.
type ownWrite struct {
	invoke, done int   // positions of its invoke and completion (-1: none)
	ret          int64 // when it returned; never if it did not
	ok, failed   bool
}

// holds says some final read of k still shows w, or a value whose write
// may have taken effect after w.
func (k *ownKeyOps) holds(h []history.Event, w *ownWrite) bool {
	for _, i := range k.finals {
		v := h[i].Value
		if v == h[w.invoke].Value {
			return true
		}
		if by, ok := k.written[v]; ok && !by.failed && by.ret > h[w.invoke].Time {
			return true
		}
	}
	return false
}

// lostWrite tells of w, acknowledged and gone from every final read of key.
func lostWrite(h []history.Event, key string, w *ownWrite, finals []int) Violation {
	inv, done, first := &h[w.invoke], &h[w.done], &h[finals[0]]
	// The reads cited are the first few: every one tells the same.
	finals = finals[:min(len(finals), citedReads)]
	seen := make([]string, 0, len(finals))
	events := []int64{inv.Index, done.Index}
	for _, i := range finals {
		seen = append(seen, fmt.Sprintf("%s read %q", h[i].Node, h[i].Value))
		events = append(events, h[i].Index)
	}
	return Violation{
		Kind: "lost-write",
		Message: fmt.Sprintf("the target's own store acknowledged %s's write of %q to %s at %s (process %d), but every final read shows a value written before it began, or none: %s",
			inv.Node, inv.Value, key, secs(done.Time), inv.Process, strings.Join(seen, ", ")),
		Time:   first.Time,
		Events: events,
		Nodes:  []string{inv.Node},
	}
}

// citedReads is how many final reads a lost write's violation names.
const citedReads = 5
