package checkers

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/history"
)

// fault records a nemesis event of phase for fault f on nodes, decided at
// sent ms and in effect at t ms.
func (b *hist) fault(sent, t int64, phase, f string, nodes ...string) int64 {
	return b.add(history.Event{Type: history.Nemesis, Phase: phase, F: f, Nodes: nodes, Sent: ms(sent), Time: ms(t)})
}

// leaderLost: n1 leads, is killed, n2 takes over, the kill is healed.
func leaderLost(b *hist) {
	b.follow(50, "n1") // 0: leaderless from the first observation
	b.follow(50, "n2")
	b.follow(50, "n3")
	b.lead(300, "n1", 1) // 3: the first leader, 250 ms in
	b.follow(300, "n2")
	b.follow(300, "n3")
	b.fault(1000, 1010, history.Inject, "kill", "n1") // 6
	b.silent(1050, "n1")                              // 7: leaderless again
	b.follow(1050, "n2")
	b.follow(1050, "n3")
	b.lead(1600, "n2", 2) // 10: failover, 600 ms after the fault was decided
	b.follow(1600, "n3")
	b.fault(2000, 2100, history.Heal, "kill", "n1") // 12: n2 alone leads already
	b.follow(2150, "n1")
	b.lead(2150, "n2", 2)
	b.follow(2150, "n3")
}

// pausedThenNoLeader: n1 is paused and healed, and then nobody leads.
func pausedThenNoLeader(until int64) func(b *hist) {
	return func(b *hist) {
		b.lead(50, "n1", 1) // 0
		b.follow(50, "n2")
		b.fault(200, 210, history.Inject, "pause", "n1") // 2
		b.silent(250, "n1")
		b.follow(250, "n2")
		b.fault(500, 520, history.Heal, "pause", "n1") // 5: deadline 1520
		b.follow(600, "n1")
		b.follow(600, "n2")
		// At 700, 1100, 1500 (the last before the deadline: 12, 13), 1900...
		for t := int64(700); t <= until; t += 400 {
			b.follow(t, "n1")
			b.silent(t, "n2")
		}
	}
}

// storms: each leadership is a new node and token, the old leader seen
// following at the same instant (a handover, never leaderless).
func storms(at ...int64) func(b *hist) {
	return func(b *hist) {
		nodes := []string{"n1", "n2", "n3"}
		for k, t := range at {
			if k > 0 {
				b.follow(t, nodes[(k-1)%3])
			}
			b.lead(t, nodes[k%3], int64(k+1))
		}
	}
}

func TestAvailability(t *testing.T) {
	const recovery = time.Second
	tests := []struct {
		name    string
		build   func(b *hist)
		want    want
		missing []string // figures that must be left out
	}{
		{
			name:  "clean run, one failover",
			build: leaderLost,
			want: want{valid: Valid, figures: map[string]float64{
				"observed_s": 2.1, "first_leader_s": 0.25,
				"leaderless_s": 0.8, "leaderless_periods": 2, "leaderless_longest_s": 0.55,
				"failovers": 1, "failover_max_s": 0.6, "failover_mean_s": 0.6,
				"elections": 2, "elections_per_min": 2 / (2.1 / 60), "storms": 0,
				"recovery_s": 0, "violations": 0,
			}, note: "±50ms"},
			missing: []string{"write_availability"},
		},
		{
			name:  "no leader after the final heal",
			build: pausedThenNoLeader(1900),
			want: want{valid: Invalid, kind: "no-recovery", events: []int64{5, 12, 13}, figures: map[string]float64{
				"leaderless_s": 1.65, "leaderless_periods": 1, "first_leader_s": 0,
				"failovers": 0, "failover_max_s": 0, "violations": 1,
			}},
			missing: []string{"recovery_s"},
		},
		{
			name: "a single leader, too late",
			build: func(b *hist) {
				pausedThenNoLeader(1900)(b)
				b.lead(2000, "n1", 2)
			},
			want: want{valid: Invalid, kind: "no-recovery", events: []int64{5, 12, 13}, figures: map[string]float64{"recovery_s": 1.48}},
		},
		{
			name: "recovered, then the leader lost for good",
			build: func(b *hist) {
				leaderLost(b)        // recovered at 2150 (event 14)
				b.follow(2300, "n2") // 16: n2 steps down, and nobody takes over
				for t := int64(2700); t <= 3500; t += 400 {
					b.follow(t, "n1")
					b.follow(t, "n2")
					b.follow(t, "n3")
				}
			},
			want: want{valid: Invalid, kind: "leader-lost", events: []int64{12, 16}, figures: map[string]float64{"recovery_s": 0, "violations": 1}},
		},
		{
			name: "recovered, the leader lost for less than the recovery timeout",
			build: func(b *hist) {
				leaderLost(b)
				b.follow(2300, "n2")
				b.follow(2700, "n1")
				b.lead(2700, "n3", 3) // 0.4 s without a leader
				b.follow(3500, "n1")
				b.lead(3500, "n3", 3)
			},
			want: want{valid: Valid, figures: map[string]float64{"recovery_s": 0, "violations": 0}},
		},
		{
			name: "recovered, the leader lost longer than the timeout, then back",
			build: func(b *hist) {
				leaderLost(b)
				b.follow(2300, "n2") // 16
				b.follow(2900, "n1")
				b.follow(2900, "n3")
				b.lead(3400, "n3", 3) // 19: 1.1 s without a leader
			},
			want: want{valid: Invalid, kind: "leader-lost", events: []int64{12, 16, 19}},
		},
		{
			name:  "history ends before the recovery timeout",
			build: pausedThenNoLeader(1100),
			want:  want{valid: Unknown, note: "ends 0.580 s after the final heal, before the recovery timeout of 1s", figures: map[string]float64{"violations": 0}},
		},
		{
			name: "two leaders after the heal resolve into one",
			build: func(b *hist) {
				b.lead(50, "n1", 1)
				b.follow(50, "n2")
				b.follow(50, "n3")
				b.fault(100, 110, history.Inject, "isolate-leader", "n1")
				b.lead(150, "n1", 1)
				b.lead(400, "n2", 2) // elected on the majority side
				b.fault(500, 510, history.Heal, "isolate-leader", "n1")
				b.lead(550, "n1", 1)
				b.lead(550, "n2", 2)
				b.follow(550, "n3")
				b.follow(600, "n1") // steps down: n2 alone, 90 ms after the heal
				b.lead(600, "n2", 2)
			},
			want: want{valid: Valid, figures: map[string]float64{
				"recovery_s": 0.09, "leaderless_s": 0, "leaderless_periods": 0, "first_leader_s": 0,
				"failovers": 1, "failover_max_s": 0.3, "elections": 2,
			}},
		},
		{
			name: "the final heal failed",
			build: func(b *hist) {
				pausedThenNoLeader(1900)(b)
				b.ev[5].Error = "container gone"
			},
			want: want{valid: Unknown, note: "that heal failed (container gone)"},
		},
		{
			name: "a fault never healed",
			build: func(b *hist) {
				leaderLost(b)
				b.fault(2200, 2210, history.Inject, "kill", "n2")
				b.fault(2300, 2400, history.Inject, "clock", "n3") // failed: took no effect
				b.ev[len(b.ev)-1].Error = "no such file"
			},
			want:    want{valid: Unknown, note: "The fault kill injected at 2.210 s (event 16) was never healed"},
			missing: []string{"recovery_s"},
		},
		{
			name:  "an election storm is a window, not a violation",
			build: storms(0, 1000, 2000, 3000, 4000, 5000, 6000, 20_000, 30_000, 31_000, 32_000, 33_000, 34_000, 35_000),
			want: want{valid: Valid, windows: 2, figures: map[string]float64{
				"elections": 14, "storms": 2, "leaderless_s": 0, "recovery_s": 0,
			}},
		},
		{
			name:  "six elections in 12.5 s are no storm",
			build: storms(0, 2500, 5000, 7500, 10_000, 12_500),
			want:  want{valid: Valid, figures: map[string]float64{"elections": 6, "storms": 0, "elections_per_min": 6 / (12.5 / 60)}},
		},
		{
			name: "write availability",
			build: func(b *hist) {
				b.follow(50, "n1")
				b.follow(50, "n2")
				b.write(100, 1, history.OK, "n1", "k1", "a", 1, "") // proves n1 leads at 102
				b.write(110, 2, history.OK, "n1", "k1", "b", 1, "")
				b.write(120, 3, history.Fail, "n2", "k1", "c", 0, "not-leader")
				b.write(130, 4, history.Info, "n1", "k1", "d", 0, "timeout")
				b.write(135, 6, history.Fail, "n1", "k1", "e", 1, "fenced")
				b.add(history.Event{Type: history.Invoke, Time: ms(140), Process: 5, F: history.Read, Key: "k1"})
				b.add(history.Event{Type: history.OK, Time: ms(141), Process: 5, F: history.Read, Key: "k1", Node: "n1", Token: 1})
				b.lead(150, "n1", 1)
			},
			want: want{valid: Valid, figures: map[string]float64{
				"writes_ok": 2, "writes_failed": 2, "writes_not_leader": 1, "writes_indeterminate": 1, "write_availability": 0.4,
				"first_leader_s": 0.052, "leaderless_s": 0.052, "elections": 1,
			}},
		},
		{
			name: "no leader observations",
			build: func(b *hist) {
				b.write(100, 1, history.OK, "n1", "k1", "a", 1, "")
			},
			want: want{valid: Unknown, note: "no leader observation", figures: map[string]float64{
				"writes_ok": 1, "write_availability": 1, "observed_s": 0, "elections_per_min": 0,
			}},
			missing: []string{"first_leader_s", "recovery_s"},
		},
		{
			name:  "empty history",
			build: func(*hist) {},
			want:  want{valid: Unknown, note: "no leader observation"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b hist
			tt.build(&b)
			r := Availability(recovery)(Input{History: b.events(), ObserveInterval: 50 * time.Millisecond})
			checkResult(t, r, tt.want)
			for _, k := range tt.missing {
				if v, ok := r.Figures[k]; ok {
					t.Errorf("figure %q = %v, want it left out", k, v)
				}
			}
		})
	}
}

func TestAvailabilityMessages(t *testing.T) {
	var b hist
	pausedThenNoLeader(1900)(&b)
	r := Availability(time.Second)(Input{History: b.events()})
	v := r.Violations[0]
	if v.Time != ms(1520) || len(v.Nodes) != 0 {
		t.Errorf("no-recovery: %+v", v)
	}
	for _, s := range []string{"within 1s of the final heal (event 5 at 0.520 s)", "no node believed it led (n2 did not answer)", "none was seen by the end of the history, 1.380 s after it"} {
		if !strings.Contains(v.Message, s) {
			t.Errorf("message %q does not say %q", v.Message, s)
		}
	}
	if !strings.Contains(r.Note, "precision is unknown") {
		t.Errorf("note %q", r.Note)
	}

	b = hist{}
	storms(0, 1000, 2000, 3000, 4000, 5000, 6000)(&b)
	r = Availability(time.Second)(Input{History: b.events()})
	w := r.Windows[0]
	// The storm runs from the first claim of its first leadership to the
	// first claim of its last: events 0 and 12.
	if w.Kind != "election-storm" || !slices.Equal(w.Events, []int64{0, 12}) || w.Time != 0 ||
		!slices.Equal(w.Nodes, []string{"n1", "n2", "n3"}) || !strings.Contains(w.Message, "7 new leaderships (of n1, n2 and n3) began between 0.000 s and 6.000 s") {
		t.Errorf("storm: %+v", w)
	}

	// Two leaders at the deadline are named, with their tokens.
	b = hist{}
	b.lead(50, "n1", 1)
	b.lead(50, "n2", 2)
	b.lead(1100, "n1", 1)
	r = Availability(time.Second)(Input{History: b.events()})
	if v := r.Violations; r.Valid != Invalid || !slices.Equal(v[0].Nodes, []string{"n1", "n2"}) ||
		!strings.Contains(v[0].Message, "n1 (token 1) and n2 (token 2) both believed they led") || !slices.Equal(v[0].Events, []int64{0, 1}) {
		t.Errorf("two leaders: %+v", r)
	}
}

func TestAvailabilityDoesNotModifyInput(t *testing.T) {
	var b hist
	leaderLost(&b)
	b.write(2200, 1, history.OK, "n2", "k1", "a", 2, "")
	b.write(2210, 2, history.Info, "n1", "k1", "b", 0, "timeout")
	in := Input{History: b.events(), ObserveInterval: 50 * time.Millisecond}
	want := slices.Clone(in.History)
	for i := range want {
		want[i].Nodes = slices.Clone(want[i].Nodes)
	}
	Availability(time.Second)(in)
	if !reflect.DeepEqual(in.History, want) {
		t.Error("Availability modified its input")
	}
}

func TestAvailabilitySynthetic(t *testing.T) {
	in := synthetic(100_000)
	r := Availability(DefaultRecoveryTimeout)(in)
	handovers := float64(in.History[len(in.History)-1].Time / int64(10*time.Second))
	if r.Valid != Valid || r.Figures["elections"] != handovers+1 || r.Figures["storms"] != 0 || r.Figures["write_availability"] != 1 {
		t.Errorf("%+v", r)
	}
}

func BenchmarkAvailability(b *testing.B) { benchOne(b, Availability(DefaultRecoveryTimeout)) }

// cutOff: n1 leads until it is cut off at 1 s; the cut heals at 10 s
// (event 5), and nobody leads then.
func cutOff(b *hist) {
	b.lead(50, "n1", 1)
	b.follow(50, "n2")
	b.fault(1000, 1010, history.Inject, "partition", "n1") // 2
	b.silent(1100, "n1")
	b.follow(1100, "n2")
	b.fault(9990, 10_000, history.Heal, "partition", "n1") // 5
}

// noLeader has n1 and n2 answer that they follow every second from from,
// and once more at until, where the history ends.
func noLeader(b *hist, from, until int64) {
	for t := from; t < until; t += 1000 {
		b.follow(t, "n1")
		b.follow(t, "n2")
	}
	b.follow(until, "n1")
	b.follow(until, "n2")
}

// recoveredThenLost: after cutOff n2 alone leads at 11 s (event 7) and
// steps down at 12 s (event 8); nobody leads from then to until.
func recoveredThenLost(until int64) func(b *hist) {
	return func(b *hist) {
		cutOff(b)
		b.follow(11_000, "n1")
		b.lead(11_000, "n2", 2)
		b.follow(12_000, "n2")
		noLeader(b, 13_000, until)
	}
}

// TestAvailabilityUndecided: a history too short to prove recovery or its
// breach is unknown, with how far it got; one that goes past the bound
// (as a complete run does: the controller's quiet period waits for it) is
// judged.
func TestAvailabilityUndecided(t *testing.T) {
	const recovery = 30 * time.Second // the final heal at 10 s: the deadline at 40 s
	tests := []struct {
		name  string
		build func(b *hist)
		want  want
	}{
		{
			name:  "no leader, the history ends 14 s after the final heal",
			build: func(b *hist) { cutOff(b); noLeader(b, 11_000, 24_000) },
			want:  want{valid: Unknown, note: "The history ends 14.000 s after the final heal, before the recovery timeout of 30s, and no single leader was seen by then: it proves neither"},
		},
		{
			name:  "no leader, the history ends 1 ms before the deadline",
			build: func(b *hist) { cutOff(b); noLeader(b, 11_000, 39_999) },
			want:  want{valid: Unknown, note: "ends 29.999 s after the final heal"},
		},
		{
			name:  "no leader, the history ends at the deadline",
			build: func(b *hist) { cutOff(b); noLeader(b, 11_000, 40_000) },
			want:  want{valid: Invalid, kind: "no-recovery"},
		},
		{
			name:  "no leader, the history ends an interval past the deadline",
			build: func(b *hist) { cutOff(b); noLeader(b, 11_000, 41_000) },
			want:  want{valid: Invalid, kind: "no-recovery", events: []int64{5, 64, 65}},
		},
		{
			name: "a single leader 24 s after the final heal",
			build: func(b *hist) {
				cutOff(b)
				noLeader(b, 11_000, 33_000)
				b.follow(34_000, "n1")
				b.lead(34_000, "n2", 2)
			},
			want: want{valid: Valid, figures: map[string]float64{"recovery_s": 24}},
		},
		{
			name:  "no fault took effect, the history ends 14 s in without a leader",
			build: func(b *hist) { noLeader(b, 50, 14_050) },
			want:  want{valid: Unknown, note: "ends 14.000 s after the start of the run, before the recovery timeout"},
		},
		{
			name:  "recovered, then the history ends 14 s into a stretch with no leader",
			build: recoveredThenLost(26_000),
			want: want{valid: Unknown, figures: map[string]float64{"recovery_s": 1},
				note: "After the final heal a single leader was seen at 11.000 s, but the history ends 14.000 s into a stretch with no leader that began at 12.000 s (event 8), before the recovery timeout of 30s: it proves neither"},
		},
		{
			// A polled node's answers leave gaps of up to an interval, and
			// a complete run ends as the controller sees one leader.
			name:  "recovered, then the history ends within two intervals of the last leader seen",
			build: recoveredThenLost(13_500),
			want:  want{valid: Valid, figures: map[string]float64{"recovery_s": 1}},
		},
		{
			name:  "recovered, then the history ends at the recovery timeout into a stretch with no leader",
			build: recoveredThenLost(42_000),
			want:  want{valid: Unknown, note: "ends 30.000 s into a stretch with no leader"},
		},
		{
			name:  "recovered, then no leader for 1 ms longer than the recovery timeout",
			build: recoveredThenLost(42_001),
			want:  want{valid: Invalid, kind: "leader-lost", events: []int64{5, 8}},
		},
		{
			name:  "recovered, then no leader to an interval past the recovery timeout",
			build: recoveredThenLost(43_000),
			want:  want{valid: Invalid, kind: "leader-lost", events: []int64{5, 8}},
		},
		{
			name: "recovered, then a leader again 20 s later",
			build: func(b *hist) {
				recoveredThenLost(31_000)(b)
				b.lead(32_000, "n1", 3)
				b.follow(32_000, "n2")
			},
			want: want{valid: Valid, figures: map[string]float64{"recovery_s": 1, "leaderless_longest_s": 20}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b hist
			tt.build(&b)
			checkResult(t, Availability(recovery)(Input{History: b.events(), ObserveInterval: time.Second}), tt.want)
		})
	}
}
