package checkers

import (
	"strings"
	"testing"

	"github.com/splitbrain/splitbrain/history"
)

func TestElectionSafety(t *testing.T) {
	tests := []struct {
		name  string
		build func(b *hist)
		want  want
	}{
		{
			name:  "empty history",
			build: func(b *hist) {},
			want: want{valid: Valid, note: "nothing to check",
				figures: map[string]float64{"claims": 0, "tokens": 0, "elections": 0, "violations": 0}},
		},
		{
			name: "clean handover",
			build: func(b *hist) {
				b.lead(50, "n1", 1)
				b.write(60, 1, history.OK, "n1", "k1", "p1-1", 1, "")
				b.lead(100, "n1", 1)
				b.follow(150, "n1")
				b.lead(200, "n2", 2)
				b.write(210, 1, history.Fail, "n1", "k1", "p1-2", 0, "not-leader")
				b.lead(250, "n2", 2)
			},
			want: want{valid: Valid, figures: map[string]float64{"claims": 5, "tokens": 2, "elections": 2, "violations": 0}},
		},
		{
			name: "two nodes observed with one token",
			build: func(b *hist) {
				b.lead(50, "n1", 5)  // 0
				b.lead(60, "n2", 4)  // 1
				b.lead(100, "n1", 5) // 2
				b.lead(120, "n2", 5) // 3: n2 claims n1's token
				b.lead(170, "n2", 5) // 4: same violation, not counted again
			},
			want: want{valid: Invalid, kind: "duplicate-token", events: []int64{0, 3},
				figures: map[string]float64{"claims": 5, "tokens": 2, "elections": 3, "duplicates": 1, "violations": 1}},
		},
		{
			name: "a write acknowledged with another node's token",
			build: func(b *hist) {
				b.lead(50, "n1", 5)                                   // 0
				b.write(60, 1, history.OK, "n2", "k1", "p1-1", 5, "") // 1, 2
			},
			want: want{valid: Invalid, kind: "duplicate-token", events: []int64{0, 2}},
		},
		{
			name: "a write refused by the fence is a claim too",
			build: func(b *hist) {
				b.lead(50, "n1", 5)                                           // 0
				b.write(60, 1, history.Fail, "n2", "k1", "p1-1", 5, "fenced") // 1, 2
			},
			want: want{valid: Invalid, kind: "duplicate-token", events: []int64{0, 2}},
		},
		{
			name: "three nodes with one token are two violations",
			build: func(b *hist) {
				b.lead(50, "n2", 5) // 0
				b.lead(60, "n1", 5) // 1
				b.lead(70, "n3", 5) // 2
			},
			want: want{valid: Invalid, kind: "duplicate-token", events: []int64{0, 1},
				figures: map[string]float64{"tokens": 1, "elections": 3, "duplicates": 2, "violations": 2}},
		},
		{
			name: "token goes backwards",
			build: func(b *hist) {
				b.lead(50, "n1", 5)  // 0
				b.lead(100, "n1", 7) // 1
				b.lead(150, "n1", 7) // 2
				b.lead(300, "n1", 5) // 3: asked at 299, after 7 was answered at 100
				b.lead(350, "n1", 5) // 4: same regression
			},
			want: want{valid: Invalid, kind: "token-regressed", events: []int64{1, 3},
				figures: map[string]float64{"regressions": 1, "violations": 1, "elections": 2}},
		},
		{
			name: "a slow write with the old token is not a regression",
			build: func(b *hist) {
				b.lead(50, "n1", 5)                                   // 0
				b.invoke(90, 1, "n1", "k1", "p1-1")                   // 1: asked before token 7 was seen
				b.lead(150, "n1", 7)                                  // 2
				b.done(200, 1, history.OK, "n1", "k1", "p1-1", 5, "") // 3: answered after
				b.lead(250, "n1", 7)                                  // 4
			},
			want: want{valid: Valid, figures: map[string]float64{"claims": 4, "violations": 0}},
		},
		{
			name: "a node that restarts and is observed with the same token again",
			build: func(b *hist) {
				b.lead(50, "n1", 3)
				b.lead(100, "n1", 3)
				b.add(history.Event{Type: history.Nemesis, Time: ms(120), F: "kill", Phase: history.Inject, Nodes: []string{"n1"}})
				b.add(history.Event{Type: history.Nemesis, Time: ms(900), F: "kill", Phase: history.Heal, Nodes: []string{"n1"}})
				b.lead(1000, "n1", 3)
				b.follow(1000, "n2")
			},
			want: want{valid: Valid, figures: map[string]float64{"claims": 3, "tokens": 1, "elections": 1}},
		},
		{
			name: "reads, failed observations and indeterminate writes are no claims",
			build: func(b *hist) {
				b.lead(50, "n1", 5)
				// A read returns the register's node and token: not a belief.
				b.add(history.Event{Type: history.Invoke, Time: ms(60), Process: 2, F: history.Read, Key: "k1"})
				b.add(history.Event{Type: history.OK, Time: ms(61), Process: 2, F: history.Read, Key: "k1", Node: "n2", Token: 5, Value: "x"})
				b.add(history.Event{Type: history.Leader, Time: ms(70), Node: "n2", IsLeader: true, Token: 5, Error: "timeout"})
				b.write(80, 1, history.Info, "n2", "k1", "p1-1", 5, "timeout")
			},
			want: want{valid: Valid, figures: map[string]float64{"claims": 1}},
		},
		{
			name: "leaders without tokens cannot be checked",
			build: func(b *hist) {
				b.lead(50, "n1", 0)
				b.lead(60, "n2", 0)
			},
			want: want{valid: Valid, note: "no token", figures: map[string]float64{"claims": 0, "untokened_claims": 2}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b hist
			tt.build(&b)
			checkResult(t, ElectionSafety(Input{History: b.events()}), tt.want)
		})
	}
}

func TestElectionSafetyMessage(t *testing.T) {
	var b hist
	b.lead(30950, "n1", 8)
	b.write(31202, 1, history.OK, "n3", "k1", "p1-1", 8, "")
	r := ElectionSafety(Input{History: b.events()})
	if len(r.Violations) != 1 {
		t.Fatalf("violations: %+v", r.Violations)
	}
	v := r.Violations[0]
	for _, s := range []string{"token 8", "n1", "n3", "30.950 s", "31.204 s", "event 0", "event 2"} {
		if !strings.Contains(v.Message, s) {
			t.Errorf("message %q lacks %q", v.Message, s)
		}
	}
	if v.Time != ms(31204) || len(v.Nodes) != 2 {
		t.Errorf("violation %+v", v)
	}
}
