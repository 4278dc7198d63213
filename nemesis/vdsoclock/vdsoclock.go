// Package vdsoclock skews the clocks of every process in a PID namespace by patching their vDSOs through ptrace.
//
// It runs in a sidecar that shares one node's PID namespace
// (docker run --pid container:<node> --network container:<node>
// --cap-add SYS_PTRACE), so a target is reached whatever it is written in: a
// static Go binary (whose runtime reads both its wall and its monotonic clock
// through the vDSO's clock_gettime), a glibc program, a JVM. No process is
// changed on disk, nothing is asked of the image, and no other container's
// clock (nor the host's) moves: a ptrace write to the vDSO's read-only page
// makes that process's own private copy.
//
// A process is patched once: its threads are stopped, an mmap is injected to
// get a page in it, the page gets routine.asm (which asks the kernel by a raw
// syscall and adds the skew its data block holds for the clock), and the start
// of each vDSO clock function is overwritten by a jump there. Later changes of
// the skew only rewrite the data block. Healing writes a zero block and puts
// the vDSO's bytes back; the page stays mapped, harmless, in case a thread is
// still inside it. A process whose monotonic clocks gained (or lost) time
// under a rate keeps that offset, at the true rate, until it ends: a
// monotonic clock never steps, and a machine's oscillator put right does not
// give back what it ran ahead. Such a process keeps its patch and a block
// that holds its offset alone. A restarted process gets a fresh vDSO.
//
// What a process reads moves; the kernel's timers do not. A wait until an
// absolute monotonic time computed from a skewed read (sem_clockwait,
// pthread_cond_timedwait, clock_nanosleep with TIMER_ABSTIME: Python's and
// the JVM's timed waits) lasts the skew longer, or ends at once, which no
// real machine does; a wait for a duration (Go's runtime) is untouched. So
// the kept offset stretches (or, behind, voids) every such wait for the
// rest of the process's life: a Python Event.wait(1) returned at once,
// over and over, after a rate of 0.56x (targets/patroni-k8s/README.md,
// the clock row). A defect of this package's, not yet fixed: until it is,
// a target whose nodes wait so says waits: absolute in its manifest, and
// the harness strikes no rate at its nodes.
package vdsoclock

//go:generate ./gen.sh

import (
	"encoding/binary"
	"math"
	"math/big"
	"slices"

	"github.com/splitbrain/splitbrain/contract"
)

// Port is the TCP port the sidecar serves Handler on, inside the node's
// network namespace (the packet-filter sidecar has 7979).
const Port = 7978

// The clock ids routine.asm skews: each has a row in the data block. Ids past
// numClocks and negative ones (a pid's or thread's CPU clock) pass through.
const numClocks = 16

// Linux's clock ids (linux/time.h), by which clock they follow.
var (
	wallClocks      = []int32{0, 5, 8, 11}   // REALTIME, REALTIME_COARSE, REALTIME_ALARM, TAI
	monotonicClocks = []int32{1, 4, 6, 7, 9} // MONOTONIC, MONOTONIC_RAW, MONOTONIC_COARSE, BOOTTIME, BOOTTIME_ALARM
)

// row is one clock's skew in the data block: a reading true becomes
// true + base + ((true - t0) * mult) >> 32.
type row struct {
	base, t0, mult int64
}

// table is the data block's rows, by clock id.
type table [numClocks]row

// zero reports whether t skews no clock.
func (t table) zero() bool { return t == table{} }

// bytes is t as routine.asm reads it.
func (t table) bytes() []byte {
	b := make([]byte, 0, numClocks*24)
	for _, r := range t {
		b = binary.LittleEndian.AppendUint64(b, uint64(r.base))
		b = binary.LittleEndian.AppendUint64(b, uint64(r.t0))
		b = binary.LittleEndian.AppendUint64(b, uint64(r.mult))
	}
	return b
}

// readings is what the clocks read at one instant: by clock id, in
// nanoseconds, with the wall clock's (unix) at id 0.
type readings map[int32]int64

// tableFor is the data block for skew s. A wall clock is skewed as the SDK's
// clock is (contract.Skew.Apply). A monotonic clock is moved only by a rate:
// a machine whose oscillator runs fast runs fast on every clock, while a
// jump or a strobe is a change of the wall clock alone (a step of NTP's, a
// person's date command), which the kernel never makes to a monotonic
// clock. now holds the true readings at one instant, so that each clock's
// t0 is the instant s.Since in that clock's own terms. The zero skew gives
// the zero table.
func tableFor(s contract.Skew, now readings) table {
	var t table
	for _, id := range wallClocks {
		t[id].base = int64(s.Offset)
	}
	rate, since := rateOf(s)
	if rate == 0 {
		return t
	}
	mult := int64(math.Round((rate - 1) * (1 << 32)))
	ago := now[0] - since // how long ago, in true time, the rate began
	for _, id := range append(slices.Clone(wallClocks), monotonicClocks...) {
		t[id].t0 = now[id] - ago
		t[id].mult = mult
	}
	return t
}

// monotonicOffset is how far ahead of the kernel's (behind, if negative)
// the monotonic clocks read under t at the true readings now: the rows of
// every monotonic clock hold the same offset, their t0 being one instant.
func (t table) monotonicOffset(now readings) int64 {
	id := monotonicClocks[0]
	r := t[id]
	return r.base + scaled(now[id]-r.t0, r.mult)
}

// keeping is t for a process that carries offset gained on its monotonic
// clocks from rates that have ended.
func (t table) keeping(gained int64) table {
	for _, id := range monotonicClocks {
		t[id].base += gained
	}
	return t
}

// scaled is (d * mult) >> 32 as routine.asm computes it: a 128-bit product
// shifted arithmetically.
func scaled(d, mult int64) int64 {
	p := new(big.Int).Mul(big.NewInt(d), big.NewInt(mult))
	return p.Rsh(p, 32).Int64()
}

// rateOf is the rate s runs the clocks at and since when; zero for none.
// A skew that keeps the rate in force (a new offset, the same skew sent
// again) does not end it.
func rateOf(s contract.Skew) (rate float64, since int64) {
	if s.Rate == 0 || s.Rate == 1 || s.Since == 0 {
		return 0, 0
	}
	return s.Rate, s.Since
}

// gainedAt is what a process carries on its monotonic clocks once the skew
// in force goes from skew from (its table t, kept on top of gained) to
// skew to, at the true readings now: what it carried, plus what from's
// rate added, if to ends that rate. The clock reads the same just before
// and just after: it never steps.
func gainedAt(gained int64, from contract.Skew, t table, to contract.Skew, now readings) int64 {
	fromRate, fromSince := rateOf(from)
	toRate, toSince := rateOf(to)
	if fromRate == toRate && fromSince == toSince {
		return gained
	}
	return gained + t.monotonicOffset(now)
}
