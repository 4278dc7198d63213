package checkers

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/checkers/synth"
	"github.com/splitbrain/splitbrain/contract"
)

// synthInput is what the checkers see of a synthetic run: its promise is
// the overlap bound the run keeps, or exclusive for a pushed run without
// overlap, whose handovers are clean enough for pushed lines to prove it.
func synthInput(r *synth.Run) Input {
	p := contract.Promise{Kind: contract.OverlapBound, Bound: r.Config.Bound}
	if r.Config.Push && r.Config.Overlap == 0 {
		p = contract.Promise{Kind: contract.Exclusive}
	}
	return Input{
		History:         r.History,
		Resource:        r.Resource,
		Promise:         p,
		ObserveInterval: r.Config.Interval,
	}
}

// fuzzRun generates a run from fuzzed numbers, each folded into a range
// that keeps one case to a few thousand events. Half the pushed runs have
// no overlap, and so an exclusive promise.
func fuzzRun(t *testing.T, seed uint64, events, term uint16, nodes, keys, procs, reads, infos, overlap uint8, push bool) *synth.Run {
	t.Helper()
	c := synth.Default()
	c.Seed = seed
	c.Events = 1000 + int(events)%9000
	c.Term = time.Duration(500+int(term)%6000) * time.Millisecond
	c.Nodes = 2 + int(nodes)%6
	c.Keys = 1 + int(keys)%20
	c.Processes = 1 + int(procs)%16
	c.ReadShare = float64(reads%101) / 100
	c.InfoShare = float64(infos%31) / 100
	c.Overlap = time.Duration(overlap%20) * c.Interval // up to Bound - Interval
	if c.Push = push; push && overlap%2 == 0 {
		c.Overlap = 0
	}
	r, err := synth.Generate(c)
	if err != nil {
		t.Fatalf("%+v: %v", c, err)
	}
	return r
}

// FuzzCorrect: a correct run is valid for every checker: no false alarm.
func FuzzCorrect(f *testing.F) {
	f.Add(uint64(1), uint16(5000), uint16(4500), uint8(3), uint8(4), uint8(9), uint8(25), uint8(2), uint8(6), false)
	f.Add(uint64(2), uint16(8000), uint16(500), uint8(0), uint8(0), uint8(15), uint8(50), uint8(20), uint8(19), false)
	f.Add(uint64(3), uint16(3000), uint16(1000), uint8(5), uint8(19), uint8(0), uint8(0), uint8(30), uint8(0), false)
	f.Add(uint64(4), uint16(8500), uint16(2000), uint8(1), uint8(9), uint8(3), uint8(90), uint8(5), uint8(10), false)
	// Pushed: exclusive (even overlap), and overlap-bound.
	f.Add(uint64(5), uint16(5000), uint16(4500), uint8(3), uint8(4), uint8(9), uint8(25), uint8(2), uint8(6), true)
	f.Add(uint64(6), uint16(8000), uint16(500), uint8(0), uint8(0), uint8(15), uint8(50), uint8(20), uint8(0), true)
	f.Add(uint64(7), uint16(8500), uint16(1000), uint8(1), uint8(9), uint8(3), uint8(90), uint8(5), uint8(10), true)
	f.Add(uint64(8), uint16(3000), uint16(2000), uint8(5), uint8(19), uint8(0), uint8(0), uint8(30), uint8(7), true)
	f.Fuzz(func(t *testing.T, seed uint64, events, term uint16, nodes, keys, procs, reads, infos, overlap uint8, push bool) {
		r := fuzzRun(t, seed, events, term, nodes, keys, procs, reads, infos, overlap, push)
		rep := Run(synthInput(r), All(Options{}))
		for name, res := range rep.Checkers {
			if res.Valid != Valid {
				t.Errorf("%s: %v on a correct run (%+v): %s; violations %+v", name, res.Valid, r.Config, res.Note, res.Violations)
			}
		}
	})
}

// alsoInvalid names another checker that rightly objects to kind k under
// promise p: the fenced model of linearizable refuses an acknowledged stale
// write too, and a forged token out of order with the register's; and
// under an exclusive promise a follower that claims the leader's token
// is a second leader for an instant.
func alsoInvalid(k synth.Kind, p contract.Promise) string {
	switch {
	case k == synth.StaleAccepted, k == synth.ForgedToken:
		return LinearizableName
	case k == synth.DuplicateToken && p.Kind == contract.Exclusive:
		return LeaderOverlapName
	}
	return ""
}

// finder names the checker that must find a violation of kind k.
func finder(k synth.Kind) string {
	switch k {
	case synth.DuplicateToken, synth.TokenRegressed:
		return ElectionSafetyName
	case synth.StaleAccepted, synth.ForgedToken:
		return StaleTokenName
	case synth.LongOverlap, synth.ShortOverlap:
		return LeaderOverlapName
	case synth.StaleRead:
		return LinearizableName
	case synth.NoRecovery:
		return AvailabilityName
	}
	return ""
}

// FuzzInject: one injected violation makes its checker invalid, with the
// injected events and seqs among the evidence, and no other checker objects.
// ShortOverlap is always planted in a pushed run with an exclusive promise,
// the only runs with room for it.
func FuzzInject(f *testing.F) {
	// Per kind: two polled runs, then two pushed, the first with an
	// exclusive promise (even overlap), the second with an overlap bound.
	for k := range synth.Kinds {
		f.Add(uint64(k+1), uint8(k), uint16(6000), uint16(1500), uint8(3), uint8(4), uint8(9), uint8(25), uint8(2), uint8(6), false)
		f.Add(uint64(k+11), uint8(k), uint16(8500), uint16(3000), uint8(1), uint8(17), uint8(3), uint8(50), uint8(10), uint8(15), false)
		f.Add(uint64(k+21), uint8(k), uint16(6000), uint16(1500), uint8(3), uint8(4), uint8(9), uint8(25), uint8(2), uint8(6), true)
		f.Add(uint64(k+31), uint8(k), uint16(8500), uint16(3000), uint8(1), uint8(17), uint8(3), uint8(50), uint8(10), uint8(15), true)
	}
	f.Fuzz(func(t *testing.T, seed uint64, kind uint8, events, term uint16, nodes, keys, procs, reads, infos, overlap uint8, push bool) {
		k := synth.Kinds[int(kind)%len(synth.Kinds)]
		if k == synth.ShortOverlap {
			push, overlap = true, overlap&^1
		}
		r := fuzzRun(t, seed, events, term, nodes, keys, procs, reads, infos, overlap, push)
		p, err := r.Inject(k, rand.New(rand.NewPCG(seed, uint64(kind))))
		if errors.Is(err, synth.ErrNoRoom) {
			t.Skip(err)
		}
		if err != nil {
			t.Fatal(err)
		}
		in := synthInput(r)
		rep := Run(in, All(Options{}))
		res, ok := rep.Checkers[finder(k)]
		if !ok {
			t.Fatalf("no checker %q", finder(k))
		}
		if res.Valid != Invalid {
			t.Fatalf("%s injected at %+v: %s is %v: %s", k, p, finder(k), res.Valid, res.Note)
		}
		cites := func(v Violation) bool { return subset(p.Events, v.Events) && subset(p.Seqs, v.Seqs) }
		if !slices.ContainsFunc(res.Violations, cites) {
			t.Errorf("%s injected at %+v: no violation cites it: %+v", k, p, res.Violations)
		}
		for name, other := range rep.Checkers {
			if name != finder(k) && name != alsoInvalid(k, in.Promise) && other.Valid != Valid {
				t.Errorf("%s injected at %+v: %s is %v too: %s; violations %+v", k, p, name, other.Valid, other.Note, other.Violations)
			}
		}
	})
}

func subset(xs, of []int64) bool {
	for _, x := range xs {
		if !slices.Contains(of, x) {
			return false
		}
	}
	return true
}
