package checkers

import (
	"fmt"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/history"
)

// synthetic builds a run of about n events: five nodes polled every 50 ms,
// a write every 10 ms to the leader (accepted by a strict resource), and a
// new leader every 10 s while the old one believes it leads for another
// 100 ms. Every handover is one overlap window.
func synthetic(n int) Input {
	const step = 10 * int64(time.Millisecond)
	nodes := []string{"n1", "n2", "n3", "n4", "n5"}
	h := make([]history.Event, 0, n+16)
	add := func(e history.Event) {
		e.Index = int64(len(h))
		h = append(h, e)
	}
	var res []history.Decision
	leader, old := 0, -1
	token, oldToken := int64(1), int64(0)
	var seq, oldUntil int64
	proc := 1
	for t := step; len(h) < n; t += step {
		if t%(10*int64(time.Second)) == 0 {
			old, oldToken, oldUntil = leader, token, t+100*int64(time.Millisecond)
			leader, token = (leader+1)%len(nodes), token+1
		}
		if t%(5*step) == 0 {
			for i, node := range nodes {
				e := history.Event{Type: history.Leader, Time: t + int64(i), Sent: t - 1000, Node: node}
				switch {
				case i == leader:
					e.IsLeader, e.Token = true, token
				case i == old && t <= oldUntil:
					e.IsLeader, e.Token = true, oldToken
				}
				add(e)
			}
		}
		node, key := nodes[leader], fmt.Sprintf("k%d", seq%10)
		value := fmt.Sprintf("p%d-%d", proc, seq)
		add(history.Event{Type: history.Invoke, Time: t + 100, Process: proc, F: history.Write, Key: key, Value: value, Node: node})
		seq++
		res = append(res, history.Decision{Seq: seq, Key: key, Value: value, Token: token, Node: node, Accepted: true, Mode: "strict"})
		add(history.Event{Type: history.OK, Time: t + 2000, Process: proc, F: history.Write, Key: key, Value: value, Node: node, Token: token})
		proc = proc%10 + 1
	}
	return Input{History: h, Resource: res, Promise: Promise{Kind: OverlapBound, Bound: time.Second}, ObserveInterval: 50 * time.Millisecond}
}

func TestSynthetic(t *testing.T) {
	in := synthetic(100_000)
	rep := Run(in, All(Options{}))
	if rep.Valid != Valid {
		t.Fatalf("synthetic run: %+v", rep)
	}
	// A handover every 10 s of 300 events a second.
	handovers := float64(in.History[len(in.History)-1].Time / int64(10*time.Second))
	ov := rep.Checkers["leader-overlap"]
	if ov.Figures["windows"] != handovers || len(ov.Windows) != min(int(handovers), maxStored) {
		t.Errorf("overlap: %v", ov.Figures)
	}
	if es := rep.Checkers["election-safety"]; es.Figures["tokens"] != handovers+1 {
		t.Errorf("election-safety: %v", es.Figures)
	}
}

func BenchmarkRunAll(b *testing.B) {
	in := synthetic(1_000_000)
	b.ResetTimer()
	for b.Loop() {
		Run(in, All(Options{}))
	}
}

func BenchmarkElectionSafety(b *testing.B) { benchOne(b, ElectionSafety) }
func BenchmarkLeaderOverlap(b *testing.B)  { benchOne(b, LeaderOverlap) }
func BenchmarkStaleToken(b *testing.B)     { benchOne(b, StaleToken) }

func benchOne(b *testing.B, check func(Input) Result) {
	in := synthetic(1_000_000)
	b.ResetTimer()
	for b.Loop() {
		check(in)
	}
}
