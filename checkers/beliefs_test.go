package checkers

import (
	"reflect"
	"testing"

	"github.com/splitbrain/splitbrain/history"
)

func TestBeliefsOf(t *testing.T) {
	var b hist
	b.lead(1000, "n1", 1)                                           // 0
	b.follow(1000, "n10")                                           // 1
	b.lead(2000, "n1", 1)                                           // 2
	b.write(2498, 1, history.OK, "n1", "k", "a", 1, "")             // 3, 4: wrote as leader
	b.silent(3000, "n1")                                            // 5: silence ends n1's interval
	b.lead(3500, "n2", 2)                                           // 6
	b.lead(4000, "n1", 1)                                           // 7: heard again, a new interval
	b.write(4198, 2, history.Fail, "n1", "k", "b", 1, "fenced")     // 8, 9: refused by the fence, as leader
	b.write(4398, 3, history.Fail, "n1", "k", "c", 0, "not-leader") // 10, 11: refused as not leader
	b.lead(4500, "n2", 2)                                           // 12
	b.add(history.Event{Type: history.Invoke, Time: ms(5700), Process: 4, F: history.Read, Key: "k"})
	b.add(history.Event{Type: history.OK, Time: ms(5800), Process: 4, F: history.Read, Key: "k", Node: "n1", Token: 1}) // a read proves nothing
	b.silent(6100, "n2")                                                                                                // 15

	got := BeliefsOf(b.events(), 0)
	want := Beliefs{
		Nodes: []string{"n1", "n10", "n2"},
		Intervals: []Interval{
			{Span: Span{ms(1000), ms(2500)}, Asked: ms(2498), Node: 0, Token: 1, First: 0, Last: 4},
			{Span: Span{ms(4000), ms(4200)}, Asked: ms(4198), Node: 0, Token: 1, First: 7, Last: 9},
			{Span: Span{ms(3500), ms(4500)}, Asked: ms(4499), Node: 2, Token: 2, First: 6, Last: 12},
		},
		// Certain until the last proof's request left: n1's write was
		// invoked at 4198 ms.
		Overlaps:   []Overlap{{Span: Span{ms(4000), ms(4198)}, Intervals: []int{1, 2}}},
		Leaderless: []Span{{0, ms(1000)}, {ms(2500), ms(3500)}, {ms(4500), ms(6100)}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
}

func TestSweep(t *testing.T) {
	iv := func(node int, start, end int64) Interval { return Interval{Span: Span{start, end}, Node: node} }
	ivs := []Interval{
		iv(0, 10, 50),
		iv(1, 20, 30),
		iv(2, 25, 60),
		iv(1, 70, 70), // one proof, alone
		iv(0, 80, 90),
		iv(1, 90, 95), // starts as the other ends: at once
	}
	overlaps, idle := sweep(ivs, 3, 100)
	want := []Overlap{{Span: Span{20, 50}, Intervals: []int{0, 1, 2}}, {Span: Span{90, 90}, Intervals: []int{4, 5}}}
	if !reflect.DeepEqual(overlaps, want) {
		t.Errorf("overlaps %+v, want %+v", overlaps, want)
	}
	if want := []Span{{0, 10}, {60, 70}, {70, 80}, {95, 100}}; !reflect.DeepEqual(idle, want) {
		t.Errorf("leaderless %v, want %v", idle, want)
	}
	// An overlap's intervals are its own: appending to one leaves the next
	// one's alone.
	_ = append(overlaps[0].Intervals, 5)
	if overlaps[1].Intervals[0] != 4 {
		t.Errorf("appending to one overlap's intervals changed the next one's: %v", overlaps[1].Intervals)
	}
	if _, idle := sweep(nil, 0, 100); !reflect.DeepEqual(idle, []Span{{0, 100}}) {
		t.Errorf("with no interval, leaderless %v, want all of [0, 100]", idle)
	}
}

func TestCertainOverlaps(t *testing.T) {
	iv := func(node int, start, asked int64) Interval {
		return Interval{Span: Span{start, max(start, asked)}, Asked: asked, Node: node}
	}
	ivs := []Interval{
		iv(0, 100, 400), // n1, certain from 100 to 400
		iv(1, 150, 200), // n2, certain from 150 to 200: overlaps n1
		iv(2, 160, 158), // n3, one proof made between 158 and 160: inside that window
		iv(2, 300, 290), // n3 again, between 290 and 300: inside n1's span, no window yet
		iv(1, 405, 395), // n2, between 395 and 405: may lie past n1's 400
		iv(2, 500, 450), // n3, alone
	}
	got := certainOverlaps(ivs, 3)
	want := []Overlap{
		{Span: Span{150, 200}, Intervals: []int{0, 1, 2}},
		{Span: Span{300, 300}, Intervals: []int{0, 3}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
