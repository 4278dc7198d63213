package checkers

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/checkers/synth"
	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/history"
)

// synthetic builds a run of about n events: five nodes polled every 50 ms,
// a write every 10 ms to the leader (accepted by a strict resource), and a
// new leader every 10 s while the old one believes it leads for another
// 100 ms. Every handover is one overlap window. Its fixed shape makes
// figures easy to predict (TestAvailabilitySynthetic does); benchmarks use
// the realistic runs of package synth.
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
	return Input{History: h, Resource: res, Promise: contract.Promise{Kind: contract.OverlapBound, Bound: time.Second}, ObserveInterval: 50 * time.Millisecond}
}

// lastInput is the latest benchmark input, kept because several
// benchmarks in a row use the same million events.
var lastInput struct {
	n, keys int
	push    bool
	in      Input
}

// benchInput is a default synthetic run of about n events on keys keys,
// whose nodes push their beliefs if push, or are polled.
func benchInput(b *testing.B, n, keys int, push bool) Input {
	b.Helper()
	if lastInput.n == n && lastInput.keys == keys && lastInput.push == push {
		return lastInput.in
	}
	lastInput.in = Input{} // let the previous one go before making the next
	runtime.GC()
	c := synth.Default()
	c.Events, c.Keys, c.Push = n, keys, push
	r, err := synth.Generate(c)
	if err != nil {
		b.Fatal(err)
	}
	lastInput.n, lastInput.keys, lastInput.push, lastInput.in = n, keys, push, synthInput(r)
	return lastInput.in
}

// measure runs fn in b.Loop and reports events/s, and the heap: input-MB
// before the first run (the input, mostly) and peak-MB while fn ran,
// sampled every millisecond.
func measure(b *testing.B, events int, fn func()) {
	b.Helper()
	runtime.GC()
	heap := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(heap)
	input := heap[0].Value.Uint64()

	var peak uint64
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		s := []metrics.Sample{{Name: heap[0].Name}}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	b.ReportAllocs()
	for b.Loop() {
		fn()
	}
	close(stop)
	<-stopped
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(input)/1e6, "input-MB")
	b.ReportMetric(float64(peak)/1e6, "peak-MB")
}

func sizeName(n int) string {
	if n >= 1_000_000 {
		return fmt.Sprintf("%dM", n/1_000_000)
	}
	return fmt.Sprintf("%dk", n/1000)
}

// BenchmarkSafetyOverlapStale runs the three checkers that read every
// event, together as Run does. Target: a million events in under 2 s on
// 2 cores; "pushed" is the same with every node's beliefs pushed.
func BenchmarkSafetyOverlapStale(b *testing.B) {
	for _, tc := range []struct {
		n    int
		push bool
	}{{10_000, false}, {100_000, false}, {1_000_000, false}, {1_000_000, true}} {
		name := sizeName(tc.n)
		if tc.push {
			name += "-pushed"
		}
		b.Run(name, func(b *testing.B) {
			in := benchInput(b, tc.n, synth.Default().Keys, tc.push)
			cs := All(Options{})[:3]
			var rep Report
			measure(b, len(in.History), func() { rep = Run(in, cs) })
			if rep.Valid != Valid {
				b.Fatalf("a correct run: %+v", rep)
			}
		})
	}
}

// eventsPerCheckedOp is about how many events a default run holds per
// operation the linearizability checker sees: each operation is two events,
// leader polls add about one more, and failed writes (most writes go to a
// follower) are left out.
const eventsPerCheckedOp = 9

// BenchmarkLinearizable checks 10k and 100k operations over 100 keys.
// Target: 100k in under 10 s.
func BenchmarkLinearizable(b *testing.B) {
	for _, ops := range []int{10_000, 100_000} {
		b.Run(sizeName(ops)+"-ops", func(b *testing.B) {
			in := benchInput(b, ops*eventsPerCheckedOp, 100, false)
			check := Linearizable(DefaultCheckTimeout)
			var r Result
			measure(b, len(in.History), func() { r = check(in) })
			if r.Valid != Valid {
				b.Fatalf("a correct run: %v: %s", r.Valid, r.Note)
			}
			b.ReportMetric(r.Figures["operations"], "ops")
		})
	}
}

func BenchmarkElectionSafety(b *testing.B) { benchOne(b, ElectionSafety) }
func BenchmarkLeaderOverlap(b *testing.B)  { benchOne(b, LeaderOverlap) }
func BenchmarkStaleToken(b *testing.B)     { benchOne(b, StaleToken) }

// benchOne runs one checker over a million events.
func benchOne(b *testing.B, check func(Input) Result) {
	in := benchInput(b, 1_000_000, synth.Default().Keys, false)
	measure(b, len(in.History), func() { check(in) })
}
