package checkers

import (
	"strings"
	"testing"

	"github.com/splitbrain/splitbrain/history"
)

func TestStaleToken(t *testing.T) {
	type build func(b *hist) []history.Decision
	tests := []struct {
		name  string
		build build
		want  want
	}{
		{
			name:  "nothing at all",
			build: func(b *hist) []history.Decision { return nil },
			want:  want{valid: Valid, note: "nothing to check"},
		},
		{
			name: "acknowledged writes but no resource log",
			build: func(b *hist) []history.Decision {
				b.write(10, 1, history.OK, "n1", "k1", "p1-1", 1, "")
				return nil
			},
			want: want{valid: Unknown, note: "resource log is empty", figures: map[string]float64{"acknowledged": 1}},
		},
		{
			name: "strict fence refuses the old leader",
			build: func(b *hist) []history.Decision {
				b.lead(5, "n1", 1)
				b.write(10, 1, history.OK, "n1", "k1", "p1-1", 1, "")
				b.lead(15, "n2", 2)
				b.write(20, 2, history.OK, "n2", "k1", "p2-1", 2, "")
				b.write(30, 1, history.Fail, "n1", "k1", "p1-2", 1, "fenced")
				return []history.Decision{
					dec(1, "k1", "p1-1", 1, "n1", true, "strict"),
					dec(2, "k1", "p2-1", 2, "n2", true, "strict"),
					dec(3, "k1", "p1-2", 1, "n1", false, "strict"),
				}
			},
			want: want{valid: Valid, figures: map[string]float64{"accepted": 2, "refused": 1, "keys": 1, "stale_accepted": 0, "violations": 0}},
		},
		{
			name: "unfenced resource accepts the old leader",
			build: func(b *hist) []history.Decision {
				b.write(10, 1, history.OK, "n1", "k1", "p1-1", 1, "") // 0, 1
				b.write(20, 2, history.OK, "n2", "k1", "p2-1", 2, "") // 2, 3
				b.write(30, 1, history.OK, "n1", "k1", "p1-2", 1, "") // 4, 5
				return []history.Decision{
					dec(1, "k1", "p1-1", 1, "n1", true, "unfenced"),
					dec(2, "k1", "p2-1", 2, "n2", true, "unfenced"),
					dec(3, "k1", "p1-2", 1, "n1", true, "unfenced"),
				}
			},
			want: want{valid: Invalid, kind: "stale-token-accepted", events: []int64{2, 3, 4, 5}, seqs: []int64{2, 3},
				figures: map[string]float64{"accepted": 3, "refused": 0, "stale_accepted": 1, "violations": 1}},
		},
		{
			name: "keys are fenced separately",
			build: func(b *hist) []history.Decision {
				b.write(10, 1, history.OK, "n2", "k1", "p1-1", 5, "")
				b.write(20, 1, history.OK, "n1", "k2", "p1-2", 3, "")
				return []history.Decision{
					dec(1, "k1", "p1-1", 5, "n2", true, "strict"),
					dec(2, "k2", "p1-2", 3, "n1", true, "strict"),
				}
			},
			want: want{valid: Valid, figures: map[string]float64{"keys": 2}},
		},
		{
			name: "decisions are judged in seq order, not file order",
			build: func(b *hist) []history.Decision {
				b.write(10, 1, history.OK, "n1", "k1", "p1-1", 1, "")
				b.write(20, 1, history.OK, "n2", "k1", "p1-2", 2, "")
				return []history.Decision{
					dec(2, "k1", "p1-2", 2, "n2", true, "unfenced"),
					dec(1, "k1", "p1-1", 1, "n1", true, "unfenced"),
				}
			},
			want: want{valid: Valid},
		},
		{
			name: "indeterminate writes may or may not have happened",
			build: func(b *hist) []history.Decision {
				b.lead(5, "n1", 1)
				b.write(10, 1, history.Info, "n1", "k1", "p1-1", 0, "timeout") // accepted
				b.write(20, 2, history.Info, "n1", "k1", "p2-1", 0, "timeout") // refused
				b.write(30, 3, history.Info, "n1", "k1", "p3-1", 0, "timeout") // never arrived
				return []history.Decision{
					dec(1, "k1", "p1-1", 1, "n1", true, "strict"),
					dec(2, "k1", "p2-1", 1, "n1", false, "strict"),
				}
			},
			want: want{valid: Valid, figures: map[string]float64{"accepted": 1, "refused": 1, "acknowledged": 0}},
		},
		{
			name: "a node says ok for a write the resource refused",
			build: func(b *hist) []history.Decision {
				b.write(10, 1, history.OK, "n1", "k1", "p1-1", 3, "")
				b.write(20, 2, history.OK, "n1", "k1", "p2-1", 1, "") // 2, 3
				return []history.Decision{
					dec(1, "k1", "p1-1", 3, "n1", true, "strict"),
					dec(2, "k1", "p2-1", 1, "n1", false, "strict"),
				}
			},
			want: want{valid: Invalid, kind: "ok-not-accepted", events: []int64{2, 3}, seqs: []int64{2},
				figures: map[string]float64{"ok_not_accepted": 1, "violations": 1}},
		},
		{
			name: "a node says ok for a write the resource never saw",
			build: func(b *hist) []history.Decision {
				b.write(10, 1, history.OK, "n1", "k1", "p1-1", 3, "")
				b.write(20, 2, history.OK, "n1", "k1", "p2-1", 3, "") // 2, 3
				return []history.Decision{dec(1, "k1", "p1-1", 3, "n1", true, "strict")}
			},
			want: want{valid: Invalid, kind: "ok-not-accepted", events: []int64{2, 3}},
		},
		{
			name: "a node says a write failed that the resource accepted",
			build: func(b *hist) []history.Decision {
				b.write(10, 1, history.Fail, "n1", "k1", "p1-1", 3, "fenced") // 0, 1
				return []history.Decision{dec(1, "k1", "p1-1", 3, "n1", true, "strict")}
			},
			want: want{valid: Invalid, kind: "fail-but-accepted", events: []int64{0, 1}, seqs: []int64{1}},
		},
		{
			name: "a write accepted with a token only another node claimed",
			build: func(b *hist) []history.Decision {
				b.lead(5, "n1", 5)                                             // 0
				b.write(10, 1, history.Info, "n3", "k1", "p1-1", 0, "timeout") // 1, 2: the answer was lost
				return []history.Decision{dec(1, "k1", "p1-1", 5, "n3", true, "strict")}
			},
			want: want{valid: Invalid, kind: "token-of-another-node", events: []int64{0, 1, 2}, seqs: []int64{1},
				figures: map[string]float64{"token_of_another_node": 1}},
		},
		{
			name: "a write accepted with a token nobody claimed, though its node answered with another",
			build: func(b *hist) []history.Decision {
				b.lead(5, "n1", 5)                                    // 0
				b.write(10, 1, history.OK, "n1", "k1", "p1-1", 5, "") // 1, 2: n1 said token 5
				return []history.Decision{dec(1, "k1", "p1-1", 99, "n1", true, "strict")}
			},
			want: want{valid: Invalid, kind: "token-never-claimed", events: []int64{1, 2}, seqs: []int64{1},
				figures: map[string]float64{"token_never_claimed": 1, "token_of_another_node": 0}},
		},
		{
			name: "a write accepted with a token nobody claimed, its node having answered that it failed",
			build: func(b *hist) []history.Decision {
				b.write(10, 1, history.Fail, "n2", "k1", "p1-1", 0, "not-leader") // 0, 1
				return []history.Decision{dec(1, "k1", "p1-1", 7, "n2", true, "strict")}
			},
			// The resource took a write its node disowned, as well.
			want: want{valid: Invalid, kind: "token-never-claimed", events: []int64{0, 1}, seqs: []int64{1},
				figures: map[string]float64{"token_never_claimed": 1, "fail_but_accepted": 1}},
		},
		{
			name: "a token nobody was seen claiming is not flagged",
			build: func(b *hist) []history.Decision {
				b.lead(5, "n1", 5)
				b.write(10, 1, history.Info, "n3", "k1", "p1-1", 0, "timeout")
				return []history.Decision{dec(1, "k1", "p1-1", 6, "n3", true, "strict")}
			},
			want: want{valid: Valid},
		},
		{
			name: "a reused value is not judged as failed-but-accepted",
			build: func(b *hist) []history.Decision {
				b.write(10, 1, history.OK, "n1", "k1", "same", 3, "")
				b.write(20, 2, history.Fail, "n2", "k1", "same", 2, "fenced")
				return []history.Decision{
					dec(1, "k1", "same", 3, "n1", true, "strict"),
					dec(2, "k1", "same", 2, "n2", false, "strict"),
				}
			},
			want: want{valid: Valid},
		},
		{
			name: "a decision the history has no write for",
			build: func(b *hist) []history.Decision {
				b.write(10, 1, history.OK, "n2", "k1", "p1-1", 2, "")
				return []history.Decision{
					dec(1, "k1", "p1-1", 2, "n2", true, "unfenced"),
					dec(2, "k1", "ghost", 1, "n1", true, "unfenced"),
				}
			},
			want: want{valid: Invalid, kind: "stale-token-accepted", events: []int64{0, 1}, seqs: []int64{1, 2}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b hist
			res := tt.build(&b)
			checkResult(t, StaleToken(Input{History: b.events(), Resource: res}), tt.want)
		})
	}
}

func TestStaleTokenMessage(t *testing.T) {
	var b hist
	b.write(30950, 1, history.OK, "n1", "k1", "p1-1", 8, "")
	b.write(31204, 2, history.Info, "n3", "k1", "p2-1", 0, "timeout")
	res := []history.Decision{
		dec(790, "k1", "p1-1", 8, "n1", true, "unfenced"),
		dec(812, "k1", "p2-1", 7, "n3", true, "unfenced"),
	}
	r := StaleToken(Input{History: b.events(), Resource: res})
	if len(r.Violations) != 1 {
		t.Fatalf("violations: %+v", r.Violations)
	}
	v := r.Violations[0]
	for _, s := range []string{"n3's write of k1 with token 7", "seq 812", "sent at 31.204 s", "n1's write with token 8", "seq 790", "sent at 30.950 s", "strict fence would have refused it"} {
		if !strings.Contains(v.Message, s) {
			t.Errorf("message %q lacks %q", v.Message, s)
		}
	}
	if v.Time != ms(31204) {
		t.Errorf("time %d", v.Time)
	}
}

// A broken run can hold many violations: all are counted, the first
// maxStored kept, earliest first.
func TestStaleTokenCapsStoredViolations(t *testing.T) {
	var b hist
	res := []history.Decision{dec(1, "k1", "first", 9, "n1", true, "unfenced")}
	b.write(1, 1, history.OK, "n1", "k1", "first", 9, "")
	for i := range 150 {
		v := "v" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		b.write(int64(10+i*10), i+2, history.OK, "n2", "k1", v, 8, "")
		res = append(res, dec(int64(i+2), "k1", v, 8, "n2", true, "unfenced"))
	}
	r := StaleToken(Input{History: b.events(), Resource: res})
	if r.Figures["violations"] != 150 || r.Figures["stale_accepted"] != 150 || len(r.Violations) != maxStored {
		t.Fatalf("figures %v, %d stored", r.Figures, len(r.Violations))
	}
	if r.Violations[0].Seqs[1] != 2 || r.Violations[maxStored-1].Seqs[1] != maxStored+1 {
		t.Errorf("not the first ones: %v ... %v", r.Violations[0].Seqs, r.Violations[maxStored-1].Seqs)
	}
	if !strings.Contains(r.Note, "first 100 of 150") {
		t.Errorf("note %q", r.Note)
	}
}
