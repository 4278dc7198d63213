package results

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/history"
)

func TestBuildTimeline(t *testing.T) {
	const hist = `{"index":0,"time":1000000000,"type":"leader","node":"n1","token":1,"sent":990000000,"leader":true}
{"index":1,"time":1000000000,"type":"leader","node":"n10"}
{"index":2,"time":2000000000,"type":"leader","node":"n1","token":1,"leader":true}
{"index":3,"time":2400000000,"type":"invoke","process":1,"f":"write","key":"k","value":"a","node":"n1"}
{"index":4,"time":2500000000,"type":"ok","process":1,"f":"write","key":"k","value":"a","node":"n1","token":1}
{"index":5,"time":2600000000,"type":"nemesis","f":"pause-leader","value":"froze n1","sent":2590000000,"phase":"inject","nodes":["n1"]}
{"index":6,"time":3000000000,"type":"leader","node":"n1","error":"no answer"}
{"index":7,"time":3500000000,"type":"leader","node":"n2","token":2,"leader":true}
{"index":8,"time":3900000000,"type":"nemesis","f":"pause-leader","value":"froze n1","sent":3800000000,"phase":"heal","nodes":["n1"]}
{"index":9,"time":4000000000,"type":"leader","node":"n1","token":1,"leader":true}
{"index":10,"time":4100000000,"type":"invoke","process":2,"f":"write","key":"k","value":"b","node":"n1"}
{"index":11,"time":4200000000,"type":"fail","process":2,"f":"write","key":"k","value":"b","node":"n1","token":1,"error":"fenced"}
{"index":12,"time":4300000000,"type":"invoke","process":3,"f":"write","key":"k","value":"c","node":"n1"}
{"index":13,"time":4400000000,"type":"fail","process":3,"f":"write","key":"k","value":"c","node":"n1","error":"not-leader"}
{"index":14,"time":4500000000,"type":"leader","node":"n2","token":2,"leader":true}
{"index":15,"time":4600000000,"type":"invoke","process":4,"f":"write","key":"k","value":"d","node":"n2"}
{"index":16,"time":5600000000,"type":"info","process":4,"f":"write","key":"k","value":"d","node":"n2","error":"timeout"}
{"index":17,"time":5700000000,"type":"invoke","process":5,"f":"read","key":"k"}
{"index":18,"time":5800000000,"type":"ok","process":5,"f":"read","key":"k","value":"a","node":"n1","token":1}
{"index":19,"time":6000000000,"type":"nemesis","f":"kill-leader","value":"killed n2","sent":5900000000,"phase":"inject","nodes":["n2"]}
{"index":20,"time":6100000000,"type":"leader","node":"n2","error":"no answer"}
`
	h, err := history.ReadEvents(strings.NewReader(hist))
	if err != nil {
		t.Fatal(err)
	}
	tl := buildTimeline(h, []string{"n1", "n2"}, 0)
	if want := []string{"n1", "n2", "n10"}; !reflect.DeepEqual(tl.Nodes, want) {
		t.Errorf("lanes %v, want %v (configured first, natural order)", tl.Nodes, want)
	}
	if tl.Events != 21 || tl.End != 6100000000 {
		t.Errorf("events %d, end %d; want 21, 6.1 s", tl.Events, tl.End)
	}
	sec := func(f float64) int64 { return int64(f * 1e9) }
	wantBars := []bar{
		{span: span{sec(1), sec(2.5)}, Node: 0, Token: 1},   // observations and the acknowledged write; silence ends it
		{span: span{sec(3.5), sec(4.5)}, Node: 1, Token: 2}, // until its poll got no answer
		{span: span{sec(4), sec(4.2)}, Node: 0, Token: 1},   // heard again, then refused by the fence, then not leader
	}
	if !reflect.DeepEqual(tl.Bars, wantBars) {
		t.Errorf("bars\n%+v\nwant\n%+v", tl.Bars, wantBars)
	}
	// What is drawn is what the leader-overlap checker judged.
	if f := checkers.LeaderOverlap(checkers.Input{History: h}).Figures; int(f["intervals"]) != len(tl.Bars) || int(f["windows"]) != len(tl.Overlaps) {
		t.Errorf("%d bars and %d overlaps drawn; the checker judged %v intervals and %v windows", len(tl.Bars), len(tl.Overlaps), f["intervals"], f["windows"])
	}
	// n1's belief is certain until its fenced write was sent, at 4.1 s.
	if want := []overlap{{span: span{sec(4), 4_100_000_000}, Nodes: []int{0, 1}}}; !reflect.DeepEqual(tl.Overlaps, want) {
		t.Errorf("overlaps %+v, want %+v", tl.Overlaps, want)
	}
	if want := []span{{0, sec(1)}, {sec(2.5), sec(3.5)}, {sec(4.5), sec(6.1)}}; !reflect.DeepEqual(tl.Leaderless, want) {
		t.Errorf("leaderless %v, want %v", tl.Leaderless, want)
	}
	if len(tl.Faults) != 2 {
		t.Fatalf("faults %+v, want 2", tl.Faults)
	}
	if f := tl.Faults[0]; f.From != sec(2.59) || f.To != sec(3.9) || !f.Healed {
		t.Errorf("the pause is %+v, want from its decision at 2.59 s to its heal at 3.9 s", f)
	}
	if f := tl.Faults[1]; f.To != tl.End || f.Healed {
		t.Errorf("the unhealed kill is %+v, want it to last until the end", f)
	}
	var kinds []outcome
	for _, o := range tl.Ops {
		kinds = append(kinds, o.Kind)
	}
	if want := []outcome{accepted, fenced, failed, unsure, accepted}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("outcomes %v, want %v", kinds, want)
	}
	if r := tl.Ops[4]; r.Write || r.Node != -1 || r.Took != sec(0.1) {
		t.Errorf("the read is %+v: want no node (its node is the register's writer) and 100 ms", r)
	}
}

func TestBuildTimelineEmpty(t *testing.T) {
	tl := buildTimeline(nil, []string{"n1"}, 0)
	if tl.Events != 0 || len(tl.Nodes) != 1 || tl.Bars != nil || tl.Leaderless != nil {
		t.Errorf("no history gives %+v; want an empty timeline with the configured lane", tl)
	}
}

func TestResolution(t *testing.T) {
	for _, c := range []struct {
		end  time.Duration
		want time.Duration
	}{
		{0, time.Millisecond},
		{time.Second, time.Millisecond},
		{70 * time.Second, 20 * time.Millisecond},
		{time.Hour, time.Second},
	} {
		if got := time.Duration(resolution(int64(c.end), 4000)); got != c.want {
			t.Errorf("resolution(%v) = %v, want %v", c.end, got, c.want)
		}
	}
}

func TestMergeBars(t *testing.T) {
	got := mergeBars([]bar{
		{span: span{0, 10}, Node: 0, Token: 1},
		{span: span{15, 20}, Node: 0, Token: 1}, // 5 after: merged at resolution 10
		{span: span{25, 40}, Node: 0, Token: 2}, // another token
		{span: span{55, 60}, Node: 0, Token: 2}, // 15 after: kept apart
		{span: span{1, 2}, Node: 1, Token: 1},
	}, 2, 10)
	want := [][]beliefBar{
		{{span: span{0, 20}, Token: 1, Merged: 2}, {span: span{25, 40}, Token: 2, Merged: 1}, {span: span{55, 60}, Token: 2, Merged: 1}},
		{{span: span{1, 2}, Token: 1, Merged: 1}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestMergeOverlapsAndSpans(t *testing.T) {
	ovs := mergeOverlaps([]overlap{{span: span{0, 5}, Nodes: []int{2, 0}}, {span: span{8, 9}, Nodes: []int{1, 0}}, {span: span{30, 31}, Nodes: []int{0, 1}}}, 10)
	if want := []overlap{{span: span{0, 9}, Nodes: []int{0, 1, 2}}, {span: span{30, 31}, Nodes: []int{0, 1}}}; !reflect.DeepEqual(ovs, want) {
		t.Errorf("overlaps %+v, want %+v", ovs, want)
	}
	if got, want := mergeSpans([]span{{0, 5}, {8, 9}, {30, 31}}, 10), []span{{0, 9}, {30, 31}}; !reflect.DeepEqual(got, want) {
		t.Errorf("spans %v, want %v", got, want)
	}
}

func TestWriteRuns(t *testing.T) {
	ops := []op{
		{At: 5, Node: 0, Kind: accepted, Write: true},
		{At: 15, Node: 0, Kind: accepted, Write: true},
		{At: 45, Node: 0, Kind: accepted, Write: true},
		{At: 99, Node: 1, Kind: fenced, Write: true},
		{At: 75, Took: 10, Node: 1, Kind: unsure, Write: true}, // sent at 65
		{At: 50, Node: -1, Kind: accepted},                     // a read: not on any lane
	}
	got := writeRuns(ops, 2, 100, 10)
	if want := []span{{0, 20}, {40, 50}}; !reflect.DeepEqual(got[0][accepted], want) {
		t.Errorf("n1's accepted writes %v, want %v", got[0][accepted], want)
	}
	if want := []span{{90, 100}}; !reflect.DeepEqual(got[1][fenced], want) {
		t.Errorf("n2's fenced writes %v, want %v", got[1][fenced], want)
	}
	if want := []span{{60, 70}}; !reflect.DeepEqual(got[1][unsure], want) {
		t.Errorf("n2's indeterminate write %v, want %v: placed when it was sent", got[1][unsure], want)
	}
	if got[1][accepted] != nil || got[0][unsure] != nil {
		t.Error("rows with no write have runs")
	}
}

func TestChartStats(t *testing.T) {
	ops := []op{
		{At: 1, Took: 2e6, Kind: accepted},
		{At: 2, Took: 4e6, Kind: accepted},
		{At: 3, Took: 1e9, Kind: unsure},
		{At: 4, Took: 1e6, Kind: fenced},
		{At: 15, Took: 1e6, Kind: failed},
	}
	st := chartStats(ops, 20, 10)
	if len(st) != 3 {
		t.Fatalf("%d buckets, want 3", len(st))
	}
	b := st[0]
	if b.count != [outcomes]int{accepted: 2, failed: 1, unsure: 1} || b.p50 != 2 || b.p99 != 4 || b.max != 1000 {
		t.Errorf("first bucket %+v: want 2 ok, 1 failed (fenced), 1 info; median 2 ms, p99 4 ms, slowest 1 s", b)
	}
	if !math.IsNaN(st[1].p50) || st[1].max != 1 {
		t.Errorf("second bucket %+v: want no ok latency and a slowest of 1 ms", st[1])
	}
	if !math.IsNaN(st[2].max) {
		t.Errorf("an empty bucket has a slowest of %v, want none", st[2].max)
	}
}

func TestLeaderRuns(t *testing.T) {
	got := leaderRuns([]bar{
		{span: span{0, 25}, Node: 0, Token: 1},
		{span: span{27, 40}, Node: 1, Token: 2}, // holds bucket 20-30 for 3 only: token 1 keeps it
		{span: span{55, 55}, Node: 2, Token: 3}, // one proof alone in its bucket
	}, 60, 10)
	want := []beliefBar{{span: span{0, 30}, Token: 1}, {span: span{30, 40}, Token: 2}, {span: span{50, 60}, Token: 3}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
