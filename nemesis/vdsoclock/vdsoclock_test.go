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
