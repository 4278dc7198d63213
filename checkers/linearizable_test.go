package checkers

import (
	"bytes"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/history"
)

// readOp is a read by process p of key from t to t+2 ms that returned value
// with token.
func (b *hist) readOp(t int64, p int, key, value string, token int64) (inv, end int64) {
	inv = b.add(history.Event{Type: history.Invoke, Time: ms(t), Process: p, F: history.Read, Key: key})
	return inv, b.add(history.Event{Type: history.OK, Time: ms(t + 2), Process: p, F: history.Read, Key: key, Value: value, Token: token})
}

func TestLinearizable(t *testing.T) {
	for _, tc := range []struct {
		name     string
		build    func(b *hist) []int64 // expected events of the first violation
		resource []history.Decision
		want     want
	}{{
		name: "writes then reads, in order",
		build: func(b *hist) []int64 {
			b.write(0, 1, history.OK, "n1", "k", "a", 1, "")
			b.readOp(10, 2, "k", "a", 1)
			b.write(20, 1, history.OK, "n2", "k", "b", 2, "")
			b.readOp(30, 2, "k", "b", 2)
			b.readOp(30, 3, "other", "", 0) // a key never written reads empty
			return nil
		},
		want: want{valid: Valid, figures: map[string]float64{"operations": 5, "keys": 2, "keys_checked": 2}},
	}, {
		name: "a read concurrent with a write may see either value",
		build: func(b *hist) []int64 {
			b.write(0, 1, history.OK, "n1", "k", "a", 1, "")
			b.invoke(10, 1, "n1", "k", "b")
			b.readOp(11, 2, "k", "a", 1)
			b.readOp(12, 3, "k", "b", 1)
			b.done(20, 1, history.OK, "n1", "k", "b", 1, "")
			return nil
		},
		want: want{valid: Valid},
	}, {
		name: "a stale read after a newer write completed",
		build: func(b *hist) []int64 {
			b.write(0, 1, history.OK, "n1", "k", "a", 1, "")
			inv, end := b.write(10, 1, history.OK, "n2", "k", "b", 2, "")
			rinv, rend := b.readOp(20, 2, "k", "a", 1)
			return []int64{inv, end, rinv, rend}
		},
		want: want{valid: Invalid, kind: "not-linearizable", figures: map[string]float64{"violations": 1}},
	}, {
		name: "an acknowledged write with a lower token than the register holds",
		build: func(b *hist) []int64 {
			inv, end := b.write(0, 1, history.OK, "n2", "k", "b", 2, "")
			winv, wend := b.write(10, 2, history.OK, "n1", "k", "a", 1, "")
			b.readOp(20, 3, "k", "a", 1)
			return []int64{inv, end, winv, wend}
		},
		want: want{valid: Invalid, kind: "not-linearizable"},
	}, {
		name: "an old leader's writes refused by the fence take no effect",
		build: func(b *hist) []int64 {
			b.write(0, 1, history.OK, "n2", "k", "b", 2, "")
			b.write(5, 2, history.Fail, "n1", "k", "a", 1, "fenced")
			b.write(6, 3, history.Fail, "n3", "k", "c", 0, "not-leader")
			b.readOp(20, 4, "k", "b", 2)
			return nil
		},
		want: want{valid: Valid, figures: map[string]float64{"operations": 2}},
	}, {
		name: "a restarted leader keeps writing with the same token",
		build: func(b *hist) []int64 {
			b.write(0, 1, history.OK, "n1", "k", "a", 3, "")
			b.write(10, 1, history.OK, "n1", "k", "b", 3, "")
			b.readOp(20, 2, "k", "b", 3)
			return nil
		},
		want: want{valid: Valid},
	}, {
		name: "an indeterminate write that a read later sees took effect",
		build: func(b *hist) []int64 {
			b.write(0, 1, history.OK, "n1", "k", "a", 1, "")
			b.write(10, 2, history.Info, "n2", "k", "b", 0, "timeout")
			b.write(11, 3, history.Info, "n2", "k", "never-read", 0, "timeout")
			b.readOp(30, 4, "k", "b", 2)
			return nil
		},
		resource: []history.Decision{
			dec(1, "k", "a", 1, "n1", true, "strict"),
			dec(2, "k", "b", 2, "n2", true, "strict"),
			dec(3, "k", "never-read", 2, "n2", true, "strict"),
		},
		want: want{valid: Valid, figures: map[string]float64{"operations": 3, "indeterminate_left_out": 1}},
	}, {
		name: "an indeterminate write seen, then unseen",
		build: func(b *hist) []int64 {
			b.write(0, 1, history.OK, "n1", "k", "a", 1, "")
			b.write(10, 2, history.Info, "n2", "k", "b", 0, "timeout")
			b.readOp(30, 4, "k", "b", 2)
			inv, end := b.readOp(40, 4, "k", "a", 1)
			return []int64{inv, end}
		},
		resource: []history.Decision{
			dec(1, "k", "a", 1, "n1", true, "strict"),
			dec(2, "k", "b", 2, "n2", true, "strict"),
		},
		want: want{valid: Invalid, kind: "not-linearizable"},
	}, {
		name: "a write still open when the history ends is indeterminate",
		build: func(b *hist) []int64 {
			b.write(0, 1, history.OK, "n1", "k", "a", 1, "")
			b.invoke(10, 2, "n2", "k", "b")
			b.readOp(30, 4, "k", "b", 2)
			return nil
		},
		want: want{valid: Valid},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var b hist
			events := tc.build(&b)
			in := Input{History: b.events(), Resource: tc.resource}
			tc.want.events = nil
			r := Linearizable(time.Minute)(in)
			checkResult(t, r, tc.want)
			if tc.want.valid != Invalid {
				if len(r.Files) != 0 {
					t.Errorf("files without a violation: %v", len(r.Files))
				}
				return
			}
			got := r.Violations[0].Events
			for _, e := range events {
				if !containsIndex(got, e) {
					t.Errorf("violation events %v lack %d (%s)", got, e, r.Violations[0].Message)
				}
			}
			if html := r.Files[LinearizabilityFile]; !bytes.Contains(html, []byte("<html")) {
				t.Errorf("no porcupine view: %d bytes", len(html))
			}
		})
	}
}

func containsIndex(events []int64, i int64) bool {
	for _, e := range events {
		if e == i {
			return true
		}
	}
	return false
}

func TestLinearizableAnnotatesFaultsAndLeaders(t *testing.T) {
	var b hist
	b.lead(1, "n1", 1)
	b.add(history.Event{Type: history.Nemesis, Time: ms(5), Phase: history.Inject, F: "partition-leader", Value: "isolated n1"})
	b.write(0, 1, history.OK, "n1", "k", "a", 1, "")
	b.write(10, 1, history.OK, "n2", "k", "b", 2, "")
	b.lead(12, "n2", 2)
	b.add(history.Event{Type: history.Nemesis, Time: ms(15), Phase: history.Heal, F: "partition-leader"})
	b.readOp(20, 2, "k", "a", 1)
	r := Linearizable(time.Minute)(Input{History: b.events()})
	html := r.Files[LinearizabilityFile]
	for _, s := range []string{"partition-leader", "isolated n1", "n2 leads (token 2)"} {
		if !bytes.Contains(html, []byte(s)) {
			t.Errorf("the view does not show %q", s)
		}
	}
}

func TestLinearizableOutOfBudgetIsUnknown(t *testing.T) {
	var b hist
	b.write(0, 1, history.OK, "n1", "k", "a", 1, "")
	b.readOp(10, 2, "k", "a", 1)
	r := Linearizable(time.Nanosecond)(Input{History: b.events()})
	checkResult(t, r, want{valid: Unknown, note: "--check-timeout", figures: map[string]float64{"keys_unknown": 1}})
}
