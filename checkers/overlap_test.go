package checkers

import (
	"strings"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/history"
)

// oldLeaderFenced: n1 (token 1) keeps believing it leads for 100 ms after
// n2 (token 2) took over, and its one write in that time is refused by the
// fence. n1's interval runs from 50 to 300 ms (events 0 to 7), n2's from
// 200 to 350 ms (events 3 to 10). Each poll's request leaves 1 ms before
// its answer arrives, so n1's belief is certain until 299 ms: one window of
// 99 ms.
func oldLeaderFenced(b *hist) {
	b.lead(50, "n1", 1)                                            // 0
	b.lead(100, "n1", 1)                                           // 1
	b.lead(150, "n1", 1)                                           // 2
	b.lead(200, "n2", 2)                                           // 3
	b.lead(250, "n1", 1)                                           // 4
	b.write(260, 1, history.Fail, "n1", "k1", "p1-1", 1, "fenced") // 5, 6
	b.lead(300, "n1", 1)                                           // 7
	b.lead(301, "n2", 2)                                           // 8
	b.follow(350, "n1")                                            // 9
	b.lead(350, "n2", 2)                                           // 10
}

func TestLeaderOverlap(t *testing.T) {
	exclusive := contract.Promise{Kind: contract.Exclusive}
	fenced := contract.Promise{Kind: contract.Fenced}
	bound := func(d time.Duration) contract.Promise { return contract.Promise{Kind: contract.OverlapBound, Bound: d} }
	oneWindow := map[string]float64{"windows": 1, "total_s": 0.099, "longest_s": 0.099, "intervals": 2}

	tests := []struct {
		name    string
		build   func(b *hist)
		promise contract.Promise
		want    want
	}{
		{
			name: "clean handover, exclusive",
			build: func(b *hist) {
				b.lead(50, "n1", 1)
				b.lead(100, "n1", 1)
				b.follow(150, "n1")
				b.lead(160, "n2", 2)
				b.lead(200, "n2", 2)
				b.follow(200, "n1")
			},
			promise: exclusive,
			want:    want{valid: Valid, figures: map[string]float64{"windows": 0, "total_s": 0, "longest_s": 0, "intervals": 2, "violations": 0}},
		},
		{
			name:    "old leader fenced, fenced promise",
			build:   oldLeaderFenced,
			promise: fenced,
			want:    want{valid: Valid, windows: 1, figures: with(oneWindow, map[string]float64{"violations": 0})},
		},
		{
			name:    "old leader fenced, exclusive promise",
			build:   oldLeaderFenced,
			promise: exclusive,
			want: want{valid: Invalid, kind: "overlap", events: []int64{0, 3, 7, 10},
				figures: with(oneWindow, map[string]float64{"violations": 1})},
		},
		{
			name:    "old leader fenced, within the bound",
			build:   oldLeaderFenced,
			promise: bound(2 * time.Second),
			want:    want{valid: Valid, windows: 1, figures: with(oneWindow, map[string]float64{"violations": 0})},
		},
		{
			name:    "old leader fenced, past the bound",
			build:   oldLeaderFenced,
			promise: bound(50 * time.Millisecond),
			want:    want{valid: Invalid, kind: "overlap", events: []int64{0, 3, 7, 10}, figures: map[string]float64{"violations": 1}},
		},
		{
			name:    "old leader fenced, no promise",
			build:   oldLeaderFenced,
			promise: contract.Promise{},
			want:    want{valid: Unknown, windows: 1, note: "not judged", figures: oneWindow},
		},
		{
			name: "a frozen leader counts again only from when it is heard",
			build: func(b *hist) {
				b.lead(10, "n1", 1)  // 0, then n1 is frozen
				b.lead(100, "n2", 2) // 1
				b.silent(260, "n1")  // 2: the poll of n1 went unanswered
				b.lead(500, "n2", 2) // 3
				b.lead(600, "n1", 1) // 4: n1 wakes up believing it leads
				b.lead(620, "n1", 1) // 5
				b.follow(650, "n1")  // 6
				b.lead(650, "n2", 2) // 7
			},
			promise: bound(50 * time.Millisecond),
			want:    want{valid: Valid, windows: 1, figures: map[string]float64{"windows": 1, "total_s": 0.019, "longest_s": 0.019, "intervals": 3}},
		},
		{
			name: "a gap without an unanswered poll is bridged",
			build: func(b *hist) {
				b.lead(10, "n1", 1)  // 0, then n1 is frozen
				b.lead(100, "n2", 2) // 1
				b.lead(500, "n2", 2) // 2
				b.lead(600, "n1", 1) // 3: n1 wakes up believing it leads
				b.follow(650, "n1")  // 4
				b.lead(650, "n2", 2) // 5
			},
			promise: bound(time.Second),
			want:    want{valid: Valid, windows: 1, figures: map[string]float64{"windows": 1, "total_s": 0.499, "longest_s": 0.499}},
		},
		{
			name: "a node refusing a write as not leader ends its interval",
			build: func(b *hist) {
				b.lead(10, "n1", 1)
				b.lead(50, "n1", 1)
				b.write(60, 1, history.Fail, "n1", "k1", "p1-1", 0, "not-leader")
				b.lead(100, "n2", 2)
				b.lead(300, "n2", 2)
				b.lead(400, "n1", 1)
			},
			promise: exclusive,
			want:    want{valid: Valid, figures: map[string]float64{"windows": 0, "intervals": 3}},
		},
		{
			name: "one observation inside another's interval is a window of no length",
			build: func(b *hist) {
				b.lead(10, "n1", 1)  // 0
				b.lead(100, "n1", 1) // 1
				b.lead(150, "n2", 2) // 2
				b.follow(200, "n2")  // 3
				b.lead(300, "n1", 1) // 4
			},
			promise: exclusive,
			want: want{valid: Invalid, kind: "overlap", events: []int64{0, 2, 4},
				figures: map[string]float64{"windows": 1, "total_s": 0, "longest_s": 0}},
		},
		{
			// n1's last answer was slow: its request left at 199 ms, before
			// n2's first answer arrived at 201 ms, so n1 may have stepped
			// down before n2 took over.
			name: "answers that crossed in flight prove no overlap",
			build: func(b *hist) {
				b.lead(100, "n1", 1)
				b.slowLead(199, 205, "n1", 1)
				b.slowLead(199, 201, "n2", 2)
				b.lead(250, "n2", 2)
				b.follow(250, "n1")
			},
			promise: exclusive,
			want:    want{valid: Valid, figures: map[string]float64{"windows": 0, "intervals": 2}},
		},
		{
			// n1's last answer was slow: its request left at 200 ms, so its
			// belief is certain only until then. n2's one proof was made
			// somewhere between 240 and 260 ms, maybe after n1 stepped down.
			name: "one observation past another's certain belief proves nothing",
			build: func(b *hist) {
				b.lead(10, "n1", 1)
				b.lead(100, "n1", 1)
				b.slowLead(240, 260, "n2", 2)
				b.slowLead(200, 300, "n1", 1)
				b.follow(350, "n1")
			},
			promise: exclusive,
			want:    want{valid: Valid, figures: map[string]float64{"windows": 0, "intervals": 2}},
		},
		{
			name: "an acknowledged write proves belief",
			build: func(b *hist) {
				b.lead(10, "n1", 1)                                    // 0
				b.write(148, 1, history.OK, "n2", "k1", "p1-1", 2, "") // 1, 2
				b.lead(300, "n1", 1)                                   // 3
			},
			promise: exclusive,
			want:    want{valid: Invalid, kind: "overlap", events: []int64{0, 2, 3}},
		},
		{
			name: "three leaders",
			build: func(b *hist) {
				b.lead(10, "n1", 1)
				b.lead(100, "n2", 2)
				b.lead(200, "n3", 3)
				b.lead(250, "n3", 3)
				b.lead(300, "n1", 1)
				b.lead(400, "n2", 2)
			},
			promise: bound(time.Second),
			want:    want{valid: Valid, windows: 1, figures: map[string]float64{"windows": 1, "total_s": 0.199, "intervals": 3}},
		},
		{
			name: "a node that restarts with the same token, alone",
			build: func(b *hist) {
				b.lead(10, "n1", 4)
				b.lead(60, "n1", 4)
				b.follow(60, "n2")
				b.lead(900, "n1", 4)
				b.follow(900, "n2")
			},
			promise: exclusive,
			want:    want{valid: Valid, figures: map[string]float64{"windows": 0, "intervals": 1}},
		},
		{
			name: "a proof without a token continues the interval",
			build: func(b *hist) {
				b.lead(10, "n1", 0)
				b.write(20, 1, history.OK, "n1", "k1", "p1-1", 0, "")
				b.lead(30, "n1", 3)
				b.lead(40, "n1", 0)
			},
			promise: exclusive,
			want:    want{valid: Valid, figures: map[string]float64{"intervals": 1}},
		},
		{
			name: "no history",
			build: func(b *hist) {
			},
			promise: contract.Promise{},
			want:    want{valid: Valid, figures: map[string]float64{"windows": 0, "intervals": 0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b hist
			tt.build(&b)
			r := LeaderOverlap(Input{History: b.events(), Promise: tt.promise, ObserveInterval: 50 * time.Millisecond})
			checkResult(t, r, tt.want)
			if !strings.Contains(r.Note, "±50ms") {
				t.Errorf("note lacks the precision: %q", r.Note)
			}
		})
	}
}

func TestLeaderOverlapMessages(t *testing.T) {
	var b hist
	oldLeaderFenced(&b)
	r := LeaderOverlap(Input{History: b.events(), Promise: contract.Promise{Kind: contract.OverlapBound, Bound: 50 * time.Millisecond}})
	v := r.Violations[0]
	for _, s := range []string{"n1 (token 1) and n2 (token 2) both believed they led", "from 0.200 s to 0.299 s", "(0.099 s)", "longer than the promised bound of 50ms"} {
		if !strings.Contains(v.Message, s) {
			t.Errorf("message %q lacks %q", v.Message, s)
		}
	}
	if v.Time != ms(200) || len(v.Nodes) != 2 || v.Nodes[0] != "n1" || v.Nodes[1] != "n2" {
		t.Errorf("violation %+v", v)
	}
	if !strings.Contains(r.Note, "an unknown precision") {
		t.Errorf("note without an interval: %q", r.Note)
	}

	r = LeaderOverlap(Input{History: b.events(), Promise: contract.Promise{Kind: contract.Fenced}})
	if len(r.Windows) != 1 || !strings.Contains(r.Windows[0].Message, "measured risk") {
		t.Errorf("fenced windows: %+v", r.Windows)
	}
}

func TestLeaderOverlapThreeMessage(t *testing.T) {
	var b hist
	b.lead(10, "n1", 1)
	b.lead(100, "n2", 2)
	b.lead(200, "n3", 3)
	b.lead(300, "n1", 1)
	b.lead(300, "n2", 2)
	b.lead(300, "n3", 3)
	r := LeaderOverlap(Input{History: b.events(), Promise: contract.Promise{Kind: contract.Exclusive}})
	if len(r.Violations) != 1 {
		t.Fatalf("violations: %+v", r.Violations)
	}
	v := r.Violations[0]
	if !strings.Contains(v.Message, "n1 (token 1), n2 (token 2) and n3 (token 3) all believed") || len(v.Nodes) != 3 {
		t.Errorf("message %q, nodes %v", v.Message, v.Nodes)
	}
}

func with(figs ...map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for _, m := range figs {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func TestLeaderOverlapInstantMessage(t *testing.T) {
	var b hist
	b.lead(10, "n1", 1)
	b.lead(100, "n1", 1)
	b.lead(150, "n2", 2)
	b.follow(200, "n2")
	b.lead(300, "n1", 1)
	r := LeaderOverlap(Input{History: b.events(), Promise: contract.Promise{Kind: contract.Exclusive}})
	if len(r.Violations) != 1 || !strings.Contains(r.Violations[0].Message, "n1 (token 1) and n2 (token 2) both believed they led at one instant, by 0.150 s") {
		t.Errorf("violations: %+v", r.Violations)
	}
}
