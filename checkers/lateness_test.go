package checkers

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/history"
)

// serviceOutage: n1 leads through two kills of a majority of its
// service, each healed in 0.4 s; the third, decided at 5 s, takes the
// leader away, and its heal, decided at 6 s, takes healTook ms. No node leads again: n1 and n2 answer that they follow every
// second until 5 s past the recovery deadline. As etcd-election under
// kill-service-majority was seen on a loaded machine, where the heal that
// took 0.4 s alone took 28 s.
func serviceOutage(healTook int64) func(b *hist) {
	return func(b *hist) {
		b.lead(50, "n1", 1)
		b.follow(50, "n2")
		for _, at := range []int64{1000, 3000} {
			b.fault(at, at+10, history.Inject, "kill-service-majority", "etcd1", "etcd2")
			b.fault(at+1000, at+1400, history.Heal, "kill-service-majority", "etcd1", "etcd2")
		}
		b.lead(4500, "n1", 1)
		b.follow(4500, "n2")
		b.fault(5000, 5010, history.Inject, "kill-service-majority", "etcd2", "etcd3") // 8
		b.follow(5500, "n1")
		b.follow(5500, "n2")
		b.follow(6000, "n1")
		b.follow(6000, "n2")
		healed := 6000 + healTook
		observe(b, 6500, healed, 1000)
		b.fault(6000, healed, history.Heal, "kill-service-majority", "etcd2", "etcd3")
		observe(b, healed+1000, healed+35_000, 1000)
	}
}

// observe has n1 and n2 answer that they follow every step ms from from,
// and once more at until.
func observe(b *hist, from, until, step int64) {
	for t := from; t < until; t += step {
		b.follow(t, "n1")
		b.follow(t, "n2")
	}
	b.follow(until, "n1")
	b.follow(until, "n2")
}

// A stretch with no leader that a heal many times slower than usual
// overlaps is not the target's to answer for: unknown, with the reason,
// where the same history with a quick heal is invalid.
func TestAvailabilityExcusesALateHeal(t *testing.T) {
	const recovery = 30 * time.Second
	judge := func(healTook int64) Result {
		var b hist
		serviceOutage(healTook)(&b)
		return Availability(recovery)(Input{History: b.events(), ObserveInterval: 50 * time.Millisecond})
	}
	checkResult(t, judge(400), want{valid: Invalid, kind: "no-recovery"})
	late := judge(28_000)
	checkResult(t, late, want{valid: Unknown, kind: "no-recovery",
		note: "took 28.000 s, more than 3 times its usual 2.000 s (the larger of the median of its other heals, 0.400 s, and 2s): the harness itself was late"})
	if !strings.HasPrefix(late.Note, "Unknown, not invalid: the heal of kill-service-majority decided at 6.000 s (event 71) took") {
		t.Errorf("note %q does not name the late heal", late.Note)
	}
	// Three times the usual time is not late yet.
	checkResult(t, judge(6000), want{valid: Invalid, kind: "no-recovery"})
}

// A fault's usual time is the median of its other actions of the same
// phase, or the floor: one slow action does not raise the measure it is
// judged by, and a fault struck once is judged by the floor alone.
func TestFaultActions(t *testing.T) {
	var b hist
	b.fault(1000, 1010, history.Inject, "kill-one", "n1")
	b.fault(2000, 2400, history.Heal, "kill-one", "n1")
	b.fault(3000, 3010, history.Inject, "kill-one", "n2")
	b.fault(4000, 4600, history.Heal, "kill-one", "n2")
	b.fault(5000, 5010, history.Inject, "kill-one", "n3")
	b.fault(6000, 14_000, history.Heal, "kill-one", "n3")
	b.fault(7000, 7001, history.Inject, "partition-all")
	b.fault(8000, 15_000, history.Heal, "partition-all")
	b.add(history.Event{Type: history.Nemesis, Phase: history.Heal, F: "pause-one", Time: ms(9000)}) // not timed
	var got []string
	for _, a := range faultActions(b.events()) {
		e := b.ev[a.pos]
		median := "none"
		if a.median >= 0 {
			median = secs(a.median)
		}
		got = append(got, strings.Join([]string{e.F, e.Phase, secs(a.took), median, secs(a.usual())}, " "))
		if a.late() != (e.F == "kill-one" && e.Phase == history.Heal && a.took == ms(8000) || e.F == "partition-all" && e.Phase == history.Heal) {
			t.Errorf("%s %s took %s: late %v", e.F, e.Phase, secs(a.took), a.late())
		}
	}
	want := []string{
		"kill-one inject 0.010 s 0.010 s 2.000 s",
		"kill-one heal 0.400 s 4.300 s 4.300 s", // the median of 0.6 s and 8 s
		"kill-one inject 0.010 s 0.010 s 2.000 s",
		"kill-one heal 0.600 s 4.200 s 4.200 s",
		"kill-one inject 0.010 s 0.010 s 2.000 s",
		"kill-one heal 8.000 s 0.500 s 2.000 s",
		"partition-all inject 0.001 s none 2.000 s",
		"partition-all heal 7.000 s none 2.000 s",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fault actions:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// An observer that learned nothing promptly of any node for so much of a
// stretch that what it saw is within the bound could have missed the
// leader, or learned of it late: unknown. One that saw enough of it to
// prove the breach, whatever it missed, does not excuse it.
func TestAvailabilityExcusesABlindObserver(t *testing.T) {
	const recovery = 30 * time.Second
	// quiet observes every 500 ms from from to until, but not between
	// gapFrom and gapTo, where with late it hears answers asked 1.5 s
	// before (30 intervals: no node can be that late).
	quiet := func(from, until, gapFrom, gapTo int64, late bool) func(b *hist) {
		return func(b *hist) {
			for t := from; t <= until; t += 500 {
				switch {
				case t <= gapFrom || t >= gapTo:
					b.follow(t, "n1")
					b.follow(t, "n2")
				case late:
					b.add(history.Event{Type: history.Leader, Time: ms(t), Sent: ms(t - 1500), Node: "n1"})
					b.add(history.Event{Type: history.Leader, Time: ms(t), Sent: ms(t - 1500), Node: "n2"})
				}
			}
		}
	}
	// n1 leads until it is cut off at 1 s; the cut heals at 10 s, which
	// puts the recovery deadline at 40 s.
	cut := func(b *hist) {
		b.lead(50, "n1", 1)
		b.follow(50, "n2")
		b.fault(1000, 1010, history.Inject, "partition", "n1")
		quiet(1500, 9500, 0, 0, false)(b)
		b.fault(9990, 10_000, history.Heal, "partition", "n1")
	}
	noRecovery := func(gapFrom, gapTo int64, late bool) func(b *hist) {
		return func(b *hist) { cut(b); quiet(10_500, 46_000, gapFrom, gapTo, late)(b) }
	}
	// A single leader from 11 s to 12 s, then none until 45 s: 33 s.
	lost := func(gapFrom, gapTo int64) func(b *hist) {
		return func(b *hist) {
			cut(b)
			b.follow(11_000, "n1")
			b.lead(11_000, "n2", 2)
			b.follow(12_000, "n2")
			quiet(12_500, 45_000, gapFrom, gapTo, false)(b)
		}
	}
	tests := []struct {
		name  string
		build func(b *hist)
		want  want
	}{
		{"no recovery, every answer prompt", noRecovery(0, 0, false), want{valid: Invalid, kind: "no-recovery"}},
		{"no recovery, nothing heard for 3 s", noRecovery(20_000, 23_000, false), want{valid: Unknown, kind: "no-recovery",
			note: "the observer itself learned nothing promptly from any node for 3.000 s of the 30.000 s judged (the longest from 20.000 s to 23.000 s): what it saw in time, 27.000 s, is no longer than the bound of 30s"}},
		{"no recovery, only late answers for 3 s", noRecovery(20_000, 23_000, true), want{valid: Unknown, kind: "no-recovery", note: "for 3.000 s of the 30.000 s judged"}},
		{"no recovery, nothing heard for 1.5 s", noRecovery(20_000, 21_500, false), want{valid: Invalid, kind: "no-recovery"}},
		{"no recovery, nothing heard for 3 s after the deadline", noRecovery(40_500, 43_500, false), want{valid: Invalid, kind: "no-recovery"}},
		{"leader lost, every answer prompt", lost(0, 0), want{valid: Invalid, kind: "leader-lost"}},
		{"leader lost, nothing heard for 3.5 s of 33 s", lost(20_000, 23_500), want{valid: Unknown, kind: "leader-lost", note: "what it saw in time, 29.500 s, is no longer than the bound of 30s"}},
		{"leader lost, nothing heard for 2.5 s of 33 s", lost(20_000, 22_500), want{valid: Invalid, kind: "leader-lost"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b hist
			tt.build(&b)
			checkResult(t, Availability(recovery)(Input{History: b.events(), ObserveInterval: 50 * time.Millisecond}), tt.want)
		})
	}
}

func TestHarnessTimingOf(t *testing.T) {
	var b hist
	b.follow(100, "n1")                                                                                               // a poll answered in 1 ms
	b.add(history.Event{Type: history.Leader, Node: "n2", Sent: ms(100), Time: ms(700)})                              // in 600 ms: late (> 8 × 50 ms)
	b.add(history.Event{Type: history.Leader, Node: "n3", Sent: ms(100), Time: ms(300), Error: "no answer: timeout"}) // not a probe answered
	// A watch of n3 opened at 200 ms: lines made at 300 and 400 ms (at
	// 1e9 + ms), the first delivered at once, the second 100 ms late.
	b.add(history.Event{Type: history.Leader, Node: "n3", Sent: ms(200), Time: ms(300), At: 1e9 + ms(300), Boot: 7})
	b.add(history.Event{Type: history.Leader, Node: "n3", Sent: ms(200), Time: ms(500), At: 1e9 + ms(400), Boot: 7})
	b.fault(1000, 1010, history.Inject, "pause-one", "n2")
	b.fault(2000, 2030, history.Heal, "pause-one", "n2")
	for _, at := range []int64{3000, 3010, 3020, 3500} {
		b.invoke(at, 1, "n1", "k0", "v")
	}
	b.follow(6000, "n1") // 5.5 s after the last prompt record, the line at 500 ms: a silence
	got := HarnessTimingOf(b.events(), 50*time.Millisecond, 100)
	want := HarnessTiming{
		Injections: Timing{Count: 1, MedianMS: 10, MaxMS: 10, Worst: []Took{{What: "pause-one", At: 1, MS: 10}}},
		Heals:      Timing{Count: 1, MedianMS: 30, MaxMS: 30, Worst: []Took{{What: "pause-one", At: 2, MS: 30}}},
		Probes: Timing{Count: 5, MedianMS: 1, MaxMS: 600, Late: 1, Worst: []Took{
			{What: "n2", At: 0.1, MS: 600}, {What: "n3", At: 0.4, MS: 100}, {What: "n1", At: 0.099, MS: 1}, {What: "n1", At: 5.999, MS: 1}, {What: "n3", At: 0.3, MS: 0},
		}},
		Silences:   Timing{Count: 1, MedianMS: 5500, MaxMS: 5500, Worst: []Took{{At: 0.5, MS: 5500}}},
		IssueGaps:  Timing{Count: 3, MedianMS: 10, MaxMS: 480, Worst: []Took{{At: 3.02, MS: 480}, {At: 3, MS: 10}, {At: 3.01, MS: 10}}},
		AskedGapMS: 10,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("harness timing\n%+v\nwant\n%+v", got, want)
	}
}
