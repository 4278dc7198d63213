package vdsoclock

import (
	"encoding/binary"
	"math/big"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/contract"
)

// skewed is routine.asm's arithmetic, in big integers: the reading the
// routine gives for a true reading of clock id under t.
func skewed(t table, id int32, reading int64) int64 {
	r := t[id]
	d := new(big.Int).Mul(big.NewInt(reading-r.t0), big.NewInt(r.mult))
	d.Rsh(d, 32) // an arithmetic shift, as shrd of the 128-bit product
	return reading + r.base + d.Int64()
}

// at is a set of true readings: a wall clock and monotonic clocks that
// started at some other instant.
func at(wall time.Time) readings {
	now := readings{}
	for _, id := range wallClocks {
		now[id] = wall.UnixNano()
	}
	now[11] += 37e9 // TAI
	for i, id := range monotonicClocks {
		now[id] = int64(5000+i) * 1e9
	}
	return now
}

func TestTableForFollowsSkew(t *testing.T) {
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for _, s := range []contract.Skew{
		{Offset: 12500 * time.Millisecond},
		{Offset: -30 * time.Second},
		{Rate: 2, Since: start.Add(-3 * time.Second).UnixNano()},
		{Rate: 0.25, Since: start.UnixNano()},
		{Offset: time.Second, Rate: 3.7, Since: start.Add(-time.Minute).UnixNano()},
	} {
		now := at(start)
		tab := tableFor(s, now)
		for _, later := range []time.Duration{0, time.Millisecond, 7 * time.Second, time.Hour} {
			wall := start.Add(later)
			// The rate is held to 32 fractional bits: off by a part in 2^32.
			tol := int64(1)
			if s.Since != 0 {
				tol += abs(wall.UnixNano()-s.Since) >> 31
			}
			want := s.Apply(wall).UnixNano()
			if got := skewed(tab, 0, wall.UnixNano()); abs(got-want) > tol {
				t.Errorf("%+v, %s on: realtime %d, want %d (Skew.Apply)", s, later, got, want)
			}
			for _, id := range wallClocks[1:] {
				if got, want := skewed(tab, id, now[id]+int64(later))-(now[id]+int64(later)), want-wall.UnixNano(); abs(got-want) > tol {
					t.Errorf("%+v: clock %d off by %d, realtime by %d", s, id, got, want)
				}
			}
			// A monotonic clock moves by the rate alone, never by a jump.
			for _, id := range monotonicClocks {
				true_ := now[id] + int64(later)
				want := want - wall.UnixNano() - int64(s.Offset)
				if got := skewed(tab, id, true_) - true_; abs(got-want) > tol {
					t.Errorf("%+v, %s on: monotonic clock %d off by %d, want %d", s, later, id, got, want)
				}
			}
		}
	}
}

func TestTableForZero(t *testing.T) {
	if tab := tableFor(contract.Skew{}, at(time.Now())); !tab.zero() {
		t.Fatalf("the zero skew gives %+v", tab)
	}
	if tab := tableFor(contract.Skew{Rate: 1, Since: 5}, at(time.Now())); !tab.zero() {
		t.Fatalf("rate 1 gives %+v", tab)
	}
	tab := tableFor(contract.Skew{Offset: time.Second}, at(time.Now()))
	for id := range int32(numClocks) {
		if (tab[id] != row{}) != (id == 0 || id == 5 || id == 8 || id == 11) {
			t.Errorf("a jump sets clock %d's row to %+v", id, tab[id])
		}
	}
}

func TestTableBytes(t *testing.T) {
	var tab table
	tab[7] = row{base: -2, t0: 3, mult: 1 << 40}
	b := tab.bytes()
	if len(b) != numClocks*24 {
		t.Fatalf("%d bytes", len(b))
	}
	for i, want := range []int64{-2, 3, 1 << 40} {
		if got := int64(binary.LittleEndian.Uint64(b[7*24+8*i:])); got != want {
			t.Errorf("word %d of row 7 = %d, want %d", i, got, want)
		}
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// A process's monotonic clock, through a timeline of skews: it never steps
// at a change of skew, keeps at a heal what a rate made it gain or lose,
// from then on at the true rate, and a process patched during a rate goes
// on from the kernel's reading, at the rate.
func TestMonotonicKeepsWhatARateGave(t *testing.T) {
	start := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	const mono = 1 // CLOCK_MONOTONIC
	// clocks are the true readings at wall time w, every clock having
	// moved as much as the wall clock since start.
	clocks := func(w time.Time) readings {
		now := at(start)
		for id := range now {
			now[id] += int64(w.Sub(start))
		}
		return now
	}
	// offset is what the process's monotonic clock reads past the kernel's
	// at wall time w, under skew s given it (its table and what it
	// carries).
	type process struct {
		gained int64
		tab    table
	}
	offset := func(p process, w time.Time) time.Duration {
		now := clocks(w)
		return time.Duration(skewed(p.tab.keeping(p.gained), mono, now[mono]) - now[mono])
	}
	var skew contract.Skew
	old, young := process{}, process{}
	// set gives both processes skew s at wall time w, as Clocks.Set does,
	// and checks that neither clock stepped.
	set := func(w time.Time, s contract.Skew) {
		t.Helper()
		now := clocks(w)
		next := tableFor(s, now)
		for _, p := range []*process{&old, &young} {
			before := offset(*p, w)
			p.gained = gainedAt(p.gained, skew, p.tab, s, now)
			p.tab = next
			if after := offset(*p, w); abs(int64(after-before)) > 1 {
				t.Fatalf("%+v at %s: the monotonic clock stepped from %s to %s", s, w.Sub(start), before, after)
			}
		}
		skew = s
	}
	want := func(p process, w time.Time, off time.Duration) {
		t.Helper()
		if got := offset(p, w); abs(int64(got-off)) > 2 {
			t.Errorf("at %s the monotonic clock is %s ahead, want %s", w.Sub(start), got, off)
		}
	}

	fast := contract.Skew{Rate: 3, Since: start.UnixNano()}
	set(start, fast)
	want(old, start.Add(time.Second), 2*time.Second)
	set(start.Add(time.Second), fast) // sent again: the rate goes on
	// Patched 1.5 s into the rate: from the kernel's reading on, at 3x.
	young.gained = -young.tab.monotonicOffset(clocks(start.Add(1500 * time.Millisecond)))
	want(young, start.Add(1500*time.Millisecond), 0)
	want(young, start.Add(2*time.Second), time.Second)
	// A jump while the rate runs does not end it.
	set(start.Add(2*time.Second), contract.Skew{Offset: time.Hour, Rate: 3, Since: fast.Since})
	want(old, start.Add(3*time.Second), 6*time.Second)

	set(start.Add(3*time.Second), contract.Skew{}) // healed: kept, at the true rate
	for _, later := range []time.Duration{3 * time.Second, time.Minute, time.Hour} {
		want(old, start.Add(later), 6*time.Second)
		want(young, start.Add(later), 3*time.Second)
	}
	if old.tab.keeping(old.gained).zero() {
		t.Error("healed, a process that gained keeps the zero table: its gain would be lost")
	}

	// A slow rate takes back at 0.5x: 1 s lost over 2 s.
	slow := contract.Skew{Rate: 0.5, Since: start.Add(time.Hour).UnixNano()}
	set(start.Add(time.Hour), slow)
	want(old, start.Add(time.Hour+2*time.Second), 5*time.Second)
	set(start.Add(time.Hour+2*time.Second), contract.Skew{Offset: -time.Second}) // a jump ends the rate
	want(old, start.Add(2*time.Hour), 5*time.Second)
	want(young, start.Add(2*time.Hour), 2*time.Second)
}
