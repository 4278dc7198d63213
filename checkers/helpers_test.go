package checkers

import (
	"slices"
	"strings"
	"testing"

	"github.com/splitbrain/splitbrain/history"
)

// hist builds a history by hand. Times are in milliseconds since the run
// started; events get their index from their position.
type hist struct{ ev []history.Event }

func ms(t int64) int64 { return t * 1e6 }

func (b *hist) add(e history.Event) int64 {
	e.Index = int64(len(b.ev))
	b.ev = append(b.ev, e)
	return e.Index
}

// lead records an observation of node leading with token, answered at t
// (asked 1 ms earlier).
func (b *hist) lead(t int64, node string, token int64) int64 {
	return b.slowLead(t-1, t, node, token)
}

// slowLead records an observation of node leading with token, asked at
// sent and answered at t.
func (b *hist) slowLead(sent, t int64, node string, token int64) int64 {
	return b.add(history.Event{Type: history.Leader, Time: ms(t), Sent: ms(sent), Node: node, IsLeader: true, Token: token})
}

// follow records an observation of node as a follower.
func (b *hist) follow(t int64, node string) int64 {
	return b.add(history.Event{Type: history.Leader, Time: ms(t), Sent: ms(t - 1), Node: node})
}

// invoke starts a write by process p to node.
func (b *hist) invoke(t int64, p int, node, key, value string) int64 {
	return b.add(history.Event{Type: history.Invoke, Time: ms(t), Process: p, F: history.Write, Key: key, Value: value, Node: node})
}

// done completes process p's write with typ, the token the node reported
// and an error.
func (b *hist) done(t int64, p int, typ history.Type, node, key, value string, token int64, err string) int64 {
	return b.add(history.Event{Type: typ, Time: ms(t), Process: p, F: history.Write, Key: key, Value: value, Node: node, Token: token, Error: err})
}

// write is an invoke at t and its completion at t+2.
func (b *hist) write(t int64, p int, typ history.Type, node, key, value string, token int64, err string) (inv, end int64) {
	inv = b.invoke(t, p, node, key, value)
	return inv, b.done(t+2, p, typ, node, key, value, token, err)
}

// silent records a poll of node that got no answer at t ms.
func (b *hist) silent(t int64, node string) int64 {
	return b.add(history.Event{Type: history.Leader, Node: node, Time: ms(t), Error: "timeout"})
}

func (b *hist) events() []history.Event { return b.ev }

// dec is one resource decision.
func dec(seq int64, key, value string, token int64, node string, accepted bool, mode string) history.Decision {
	return history.Decision{Seq: seq, Key: key, Value: value, Token: token, Node: node, Accepted: accepted, Mode: mode}
}

// want is what a table test expects of a Result.
type want struct {
	valid   Validity
	figures map[string]float64
	kind    string  // of the first violation, "" for none
	events  []int64 // of the first violation, nil: not checked
	seqs    []int64
	windows int // stored windows
	note    string
}

func checkResult(t *testing.T, r Result, w want) {
	t.Helper()
	if r.Valid != w.valid {
		t.Errorf("valid = %v, want %v (violations %+v, note %q)", r.Valid, w.valid, r.Violations, r.Note)
	}
	for k, v := range w.figures {
		got, ok := r.Figures[k]
		if !ok {
			t.Errorf("figure %q missing (figures %v)", k, r.Figures)
		} else if diff := got - v; diff > 1e-9 || diff < -1e-9 {
			t.Errorf("figure %q = %v, want %v", k, got, v)
		}
	}
	if w.kind == "" {
		if len(r.Violations) > 0 {
			t.Errorf("unexpected violations: %+v", r.Violations)
		}
	} else {
		if len(r.Violations) == 0 {
			t.Fatalf("no violation, want %s", w.kind)
		}
		v := r.Violations[0]
		if v.Kind != w.kind {
			t.Errorf("first violation kind = %q, want %q (%s)", v.Kind, w.kind, v.Message)
		}
		if w.events != nil && !slices.Equal(v.Events, w.events) {
			t.Errorf("first violation events = %v, want %v (%s)", v.Events, w.events, v.Message)
		}
		if w.seqs != nil && !slices.Equal(v.Seqs, w.seqs) {
			t.Errorf("first violation seqs = %v, want %v (%s)", v.Seqs, w.seqs, v.Message)
		}
		if v.Message == "" {
			t.Error("violation without a message")
		}
	}
	if len(r.Windows) != w.windows {
		t.Errorf("%d windows stored, want %d: %+v", len(r.Windows), w.windows, r.Windows)
	}
	if w.note != "" && !strings.Contains(r.Note, w.note) {
		t.Errorf("note %q does not say %q", r.Note, w.note)
	}
	if r.Figures == nil {
		t.Error("nil figures")
	}
}
