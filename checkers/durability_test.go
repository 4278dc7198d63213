package checkers

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/history"
)

// ownWrite is a write to the target's own register through node, invoked
// at t and completed with typ at t+2.
func (b *hist) ownWrite(t int64, p int, typ history.Type, node, key, value string) (inv, end int64) {
	inv = b.add(history.Event{Type: history.Invoke, Time: ms(t), Process: p, F: history.DataWrite, Key: key, Value: value, Node: node})
	return inv, b.add(history.Event{Type: typ, Time: ms(t + 2), Process: p, F: history.DataWrite, Key: key, Node: node})
}

// ownRead is an ok read of the target's own register through node,
// invoked at t and answered value at t+1.
func (b *hist) ownRead(t int64, p int, node, key, value string) (inv, end int64) {
	inv = b.add(history.Event{Type: history.Invoke, Time: ms(t), Process: p, F: history.DataRead, Key: key, Node: node})
	return inv, b.add(history.Event{Type: history.OK, Time: ms(t + 1), Process: p, F: history.DataRead, Key: key, Node: node, Value: value})
}

func TestDurability(t *testing.T) {
	tests := []struct {
		name  string
		build func(b *hist)
		want  want
	}{
		{
			name: "the last write survives on every node",
			build: func(b *hist) {
				b.ownWrite(10, 1, history.OK, "n1", "k1", "p1-1")
				b.ownWrite(20, 2, history.OK, "n2", "k1", "p2-1")
				b.ownRead(100, 9, "n1", "k1", "p2-1")
				b.ownRead(100, 10, "n2", "k1", "p2-1")
			},
			want: want{valid: Valid, figures: map[string]float64{"writes_ok": 2, "final_reads": 2, "lost": 0, "keys": 1}},
		},
		{
			// Jepsen's Redis: the old primary's acknowledged write is
			// thrown away when it becomes a replica of the new one.
			name: "a write acknowledged after the survivor's is gone",
			build: func(b *hist) {
				b.ownWrite(10, 1, history.OK, "n1", "k1", "p1-1")   // 0, 1
				b.ownWrite(20, 2, history.OK, "n1", "k1", "p2-1")   // 2, 3
				b.ownRead(100, 9, "n2", "k1", "p1-1")               // 4, 5
				b.ownRead(100, 10, "n3", "k1", "p1-1")              // 6, 7
				b.ownWrite(30, 3, history.Fail, "n2", "k1", "p3-1") // failed: no effect
			},
			want: want{valid: Invalid, kind: "lost-write", events: []int64{2, 3, 5, 7},
				figures: map[string]float64{"writes_ok": 2, "writes_failed": 1, "final_reads": 2, "lost": 1, "violations": 1}},
		},
		{
			name: "every write lost: the final reads find the key empty",
			build: func(b *hist) {
				b.ownWrite(10, 1, history.OK, "n1", "k1", "p1-1") // 0, 1
				b.ownRead(100, 9, "n1", "k1", "")                 // 2, 3
			},
			want: want{valid: Invalid, kind: "lost-write", events: []int64{0, 1, 3}, figures: map[string]float64{"lost": 1}},
		},
		{
			// The read's value was written concurrently with the
			// acknowledged one: either order is possible.
			name: "a concurrent write may have come last",
			build: func(b *hist) {
				b.add(history.Event{Type: history.Invoke, Time: ms(10), Process: 1, F: history.DataWrite, Key: "k1", Value: "p1-1", Node: "n1"})
				b.ownWrite(11, 2, history.OK, "n2", "k1", "p2-1")
				b.add(history.Event{Type: history.OK, Time: ms(20), Process: 1, F: history.DataWrite, Key: "k1", Node: "n1"})
				b.ownRead(100, 9, "n1", "k1", "p1-1")
			},
			want: want{valid: Valid, figures: map[string]float64{"lost": 0}},
		},
		{
			name: "an indeterminate write may have landed last",
			build: func(b *hist) {
				b.ownWrite(10, 1, history.OK, "n1", "k1", "p1-1")
				b.ownWrite(5, 2, history.Info, "n2", "k1", "p2-1")
				b.ownRead(100, 9, "n1", "k1", "p2-1")
			},
			want: want{valid: Valid, figures: map[string]float64{"writes_indeterminate": 1, "lost": 0}},
		},
		{
			// A replica behind its primary is not a loss.
			name: "one final read still holds it",
			build: func(b *hist) {
				b.ownWrite(10, 1, history.OK, "n1", "k1", "p1-1")
				b.ownWrite(20, 2, history.OK, "n1", "k1", "p2-1")
				b.ownRead(100, 9, "n2", "k1", "p1-1")
				b.ownRead(100, 10, "n1", "k1", "p2-1")
			},
			want: want{valid: Valid, figures: map[string]float64{"lost": 0}},
		},
		{
			// A read made while a write was still open is not final.
			name: "no final read: a run killed before them",
			build: func(b *hist) {
				b.ownWrite(10, 1, history.OK, "n1", "k1", "p1-1")
				b.ownRead(11, 9, "n1", "k1", "")
			},
			want: want{valid: Unknown, note: "no read reached after the last write", figures: map[string]float64{"final_reads": 0}},
		},
		{
			name: "the resource's operations are not the target's own",
			build: func(b *hist) {
				b.write(10, 1, history.OK, "n1", "k1", "p1-1", 1, "")
				b.ownRead(100, 9, "n1", "k1", "")
			},
			want: want{valid: Valid, figures: map[string]float64{"writes_ok": 0, "final_reads": 1}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b hist
			tc.build(&b)
			checkResult(t, Durability(Input{History: b.events()}), tc.want)
		})
	}
}

// The target's own register is judged as a register of its own, apart
// from the resource's key of the same name, with no token: a read of a
// value overwritten before it began is not linearizable.
func TestLinearizableJudgesOwnDataApart(t *testing.T) {
	var b hist
	b.write(10, 1, history.OK, "n1", "k1", "p1-1", 1, "")
	b.ownWrite(10, 2, history.OK, "n1", "k1", "p2-1")
	b.ownWrite(20, 3, history.OK, "n1", "k1", "p3-1")
	inv, _ := b.ownRead(30, 4, "n2", "k1", "p2-1")
	r := Linearizable(time.Second)(Input{History: b.events(), Resource: []history.Decision{dec(1, "k1", "p1-1", 1, "n1", true, "strict")}})
	checkResult(t, r, want{valid: Invalid, kind: "not-linearizable", figures: map[string]float64{"keys": 2, "operations": 4}})
	if v := r.Violations[0]; !slices.Contains(v.Events, inv) || !strings.Contains(v.Message, "k1 (own data)") {
		t.Errorf("violation %+v: want the stale read of k1 (own data)", v)
	}
}
