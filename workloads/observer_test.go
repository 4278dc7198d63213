package workloads

import (
	"maps"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/history"
)

// A node is in the beliefs while its latest answer is young enough, a
// poll that failed since notwithstanding; a node that never answered, or
// answered too long ago, is not. The leader follows the same rule.
func TestBeliefsKeepAnAnswerPastAFailedPoll(t *testing.T) {
	rec, err := history.NewRecorder(t.TempDir()+"/h.jsonl", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	o := NewObserver(staticCluster{}, rec, 50*time.Millisecond)
	o.record(history.Event{Type: history.Leader, Node: "n1", IsLeader: true, Token: 3})
	o.record(history.Event{Type: history.Leader, Node: "n1", Error: "no answer: timeout"})
	o.record(history.Event{Type: history.Leader, Node: "n2", IsLeader: false})
	o.record(history.Event{Type: history.Leader, Node: "n3", Error: "no answer: connection refused"})
	if got, want := o.Beliefs(time.Hour), map[string]bool{"n1": true, "n2": false}; !maps.Equal(got, want) {
		t.Errorf("beliefs %v, want %v", got, want)
	}
	if n, token := o.Leader(time.Hour); n != "n1" || token != 3 {
		t.Errorf("leader %s with token %d, want n1 with 3", n, token)
	}
	time.Sleep(time.Second)
	o.record(history.Event{Type: history.Leader, Node: "n2", IsLeader: true, Token: 4})
	if got, want := o.Beliefs(500*time.Millisecond), map[string]bool{"n2": true}; !maps.Equal(got, want) {
		t.Errorf("beliefs within 500 ms %v, want %v", got, want)
	}
	if n, token := o.Leader(500 * time.Millisecond); n != "n2" || token != 4 {
		t.Errorf("leader within 500 ms %s with token %d, want n2 with 4", n, token)
	}
}
