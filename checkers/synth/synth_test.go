package synth

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/history"
)

func generate(t *testing.T, c Config) *Run {
	t.Helper()
	r, err := Generate(c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func sized(seed uint64, events int) Config {
	c := Default()
	c.Seed, c.Events = seed, events
	return c
}

// TestWellFormed checks what a recorded run guarantees: time order, Jepsen
// processes, and a resource log a strict resource could have written that
// agrees with the history.
func TestWellFormed(t *testing.T) {
	small := sized(7, 5_000)
	small.Nodes, small.Keys, small.Processes, small.InfoShare = 2, 1, 1, 0.3
	for _, c := range []Config{sized(1, 30_000), small} {
		r := generate(t, c)
		if n := len(r.History); n < c.Events*9/10 || n > c.Events*11/10 {
			t.Errorf("%d events, asked for about %d", n, c.Events)
		}
		checkHistory(t, r.History)
		checkResource(t, r)
	}
}

func checkHistory(t *testing.T, h []history.Event) {
	t.Helper()
	open := map[int]history.Event{}
	retired := map[int]bool{}
	faulted := false
	for i, e := range h {
		switch {
		case e.Index != int64(i):
			t.Fatalf("event %d has index %d", i, e.Index)
		case i > 0 && e.Time < h[i-1].Time:
			t.Fatalf("event %d goes back in time", i)
		case e.Type == history.Leader && !(e.Sent < e.Time):
			t.Fatalf("observation %d: sent %d, answered %d", i, e.Sent, e.Time)
		case retired[e.Process]:
			t.Fatalf("event %d: process %d was retired", i, e.Process)
		}
		switch e.Type {
		case history.Invoke:
			if _, busy := open[e.Process]; busy {
				t.Fatalf("event %d: process %d already has an operation open", i, e.Process)
			}
			open[e.Process] = e
		case history.OK, history.Fail, history.Info:
			inv, ok := open[e.Process]
			if !ok || inv.F != e.F || inv.Key != e.Key || inv.Time >= e.Time {
				t.Fatalf("event %d completes %+v", i, inv)
			}
			delete(open, e.Process)
			retired[e.Process] = e.Type == history.Info
		case history.Nemesis:
			if faulted != (e.Phase == history.Heal) {
				t.Fatalf("event %d: %s with a fault in effect: %v", i, e.Phase, faulted)
			}
			faulted = e.Phase == history.Inject
		}
	}
	if len(open) > 0 || faulted {
		t.Errorf("the run ends with %d operations open, a fault in effect: %v", len(open), faulted)
	}
}

func checkResource(t *testing.T, r *Run) {
	t.Helper()
	highest := map[string]int64{}
	byValue := map[string]history.Decision{}
	for i, d := range r.Resource {
		if d.Seq != int64(i+1) || d.Highest != highest[d.Key] || d.Accepted != (d.Token >= d.Highest) || d.Mode != "strict" {
			t.Fatalf("decision %+v after highest %d", d, highest[d.Key])
		}
		if d.Accepted {
			highest[d.Key] = d.Token
		}
		byValue[d.Value] = d
	}
	for _, e := range r.History {
		d, decided := byValue[e.Value]
		var ok bool
		switch {
		case e.F == history.Read && e.Type == history.OK:
			ok = e.Seq == 0 && e.Value == "" || decided && d.Accepted && d.Seq == e.Seq && d.Token == e.Token && d.Node == e.Node
		case e.F != history.Write || e.Type == history.Invoke || e.Type == history.Info:
			ok = true
		case e.Type == history.OK:
			ok = decided && d.Accepted && d.Seq == e.Seq && d.Token == e.Token && d.Node == e.Node
		case e.Error == contract.ErrFenced:
			ok = decided && !d.Accepted && d.Token == e.Token
		default:
			ok = e.Error == contract.ErrNotLeader && !decided
		}
		if !ok {
			t.Fatalf("event %+v disagrees with the resource (%+v, %v)", e, d, decided)
		}
	}
}

func TestDeterministic(t *testing.T) {
	for _, push := range []bool{false, true} {
		c := sized(3, 5_000)
		c.Push = push
		a, b := generate(t, c), generate(t, c)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("push %v: one seed, two runs", push)
		}
		c.Seed = 4
		if d := generate(t, c); reflect.DeepEqual(a.History, d.History) {
			t.Errorf("push %v: two seeds, one run", push)
		}
	}
}

// TestRealistic: a default run holds what runs under faults hold, and
// every checker finds it correct.
func TestRealistic(t *testing.T) {
	r := generate(t, sized(5, 100_000))
	seen := map[string]int{}
	for _, e := range r.History {
		switch {
		case e.Type == history.Leader && e.Error != "":
			seen["silent poll"]++
		case e.Type == history.Nemesis:
			seen[e.F]++
		case e.Type == history.Fail || e.Type == history.Info:
			seen[e.Error]++
		}
	}
	refused := 0
	for _, d := range r.Resource {
		if !d.Accepted {
			refused++
		}
	}
	seen["refused"] = refused
	for _, what := range []string{"silent poll", "partition", "pause", "not-leader", "fenced", "timeout", "refused"} {
		if seen[what] == 0 {
			t.Errorf("no %s in %v", what, seen)
		}
	}

	in := checkers.Input{
		History: r.History, Resource: r.Resource, ObserveInterval: r.Config.Interval,
		Promise: contract.Promise{Kind: contract.OverlapBound, Bound: r.Config.Bound},
	}
	rep := checkers.Run(in, checkers.All(checkers.Options{}))
	for name, res := range rep.Checkers {
		if res.Valid != checkers.Valid {
			t.Errorf("%s: %v: %s %+v", name, res.Valid, res.Note, res.Violations)
		}
	}
	ov, av := rep.Checkers[checkers.LeaderOverlapName].Figures, rep.Checkers[checkers.AvailabilityName].Figures
	if ov["windows"] == 0 || ov["longest_s"] > r.Config.Bound.Seconds() || av["leaderless_periods"] < 2 {
		t.Errorf("overlap %v, availability %v: want windows within the bound and leaderless gaps", ov, av)
	}
}

func TestInject(t *testing.T) {
	for _, k := range Kinds {
		for seed := range uint64(3) {
			c := sized(seed, 10_000)
			c.Term = 2 * time.Second // leaders enough for each kind to find a place
			if k == ShortOverlap {
				c.Push, c.Overlap = true, 0 // its only runs
			}
			r := generate(t, c)
			p, err := r.Inject(k, rand.New(rand.NewPCG(seed, 9)))
			if err != nil {
				t.Fatalf("%s, seed %d: %v", k, seed, err)
			}
			if p.Kind != k || len(p.Events) == 0 {
				t.Errorf("%s: proof %+v", k, p)
			}
			for _, i := range p.Events {
				if i < 0 || i >= int64(len(r.History)) {
					t.Fatalf("%s: event %d of %d", k, i, len(r.History))
				}
			}
			checkHistory(t, r.History)
			if _, err := r.Inject(k, rand.New(rand.NewPCG(seed, 9))); err == nil {
				t.Errorf("%s: a second injection", k)
			}
		}
	}
	r := generate(t, sized(1, 5_000))
	if _, err := r.Inject("bogus", rand.New(rand.NewPCG(1, 1))); err == nil || errors.Is(err, ErrNoRoom) {
		t.Errorf("an unknown kind: %v", err)
	}
	// ShortOverlap needs pushed lines and an exclusive promise.
	pushed := sized(1, 5_000)
	pushed.Push = true
	for _, c := range []Config{sized(1, 5_000), pushed} {
		if _, err := generate(t, c).Inject(ShortOverlap, rand.New(rand.NewPCG(1, 1))); !errors.Is(err, ErrNoRoom) {
			t.Errorf("short overlap, push %v, overlap %v: %v", c.Push, c.Overlap, err)
		}
	}
}

// TestPushed: in a pushed run every node's lines are one clock's, each
// stream's in order and none sampled while its node was frozen; long
// pauses cut streams; without overlap no window is found and the run keeps
// an exclusive promise, and with it every window is within the bound.
func TestPushed(t *testing.T) {
	for _, gap := range []time.Duration{
		0,                      // overlap
		500 * time.Millisecond, // no overlap
		20 * time.Millisecond,  // no overlap, handovers within milliseconds
	} {
		c := sized(2, 60_000)
		c.Push = true
		if gap > 0 {
			c.Overlap, c.Gap = 0, gap
		}
		overlap := c.Overlap
		r := generate(t, c)
		checkHistory(t, r.History)
		checkResource(t, r)
		// Pauses outlast the observer's patience only after slow elections.
		checkStreams(t, r, gap != 20*time.Millisecond)

		p := contract.Promise{Kind: contract.Exclusive}
		if overlap > 0 {
			p = contract.Promise{Kind: contract.OverlapBound, Bound: c.Bound}
		}
		in := checkers.Input{History: r.History, Resource: r.Resource, ObserveInterval: c.Interval, Promise: p}
		rep := checkers.Run(in, checkers.All(checkers.Options{}))
		for name, res := range rep.Checkers {
			if res.Valid != checkers.Valid {
				t.Errorf("gap %v: %s: %v: %s %+v", gap, name, res.Valid, res.Note, res.Violations)
			}
		}
		ov := rep.Checkers[checkers.LeaderOverlapName].Figures
		if overlap == 0 && ov["windows"] > 0 || overlap > 0 && (ov["windows"] == 0 || ov["longest_s"] > overlap.Seconds()) {
			t.Errorf("gap %v: leader-overlap %v", gap, ov)
		}
		if overlap == 0 {
			checkHandovers(t, r)
		}
		tight := 0 // leaders that stepped down just in time
		for k, f := range r.faults {
			if !f.pause && r.terms[k+1].start-r.terms[k].end == 3*ms {
				tight++
			}
		}
		if gap == 20*time.Millisecond && tight == 0 {
			t.Error("no leader stepped down at the last moment")
		}
	}
}

// checkHandovers checks that in a run without overlap every old leader's
// last line as leader and its successor's first are at least 2 ms apart
// however the checkers date them: each line between the latest request
// of its node's streams and the earliest arrival, on its node's clock.
func checkHandovers(t *testing.T, r *Run) {
	t.Helper()
	type dating struct{ lo, hi int64 }
	clocks := map[string]dating{}
	last := map[int64]history.Event{}  // token -> its leader's last line
	first := map[int64]history.Event{} // token -> its leader's first line
	for _, e := range r.History {
		if e.Type != history.Leader || e.Error != "" {
			continue
		}
		d, ok := clocks[e.Node]
		if !ok {
			d = dating{math.MinInt64, math.MaxInt64}
		}
		clocks[e.Node] = dating{max(d.lo, e.Sent-e.At), min(d.hi, e.Time-e.At)}
		if e.IsLeader {
			if _, ok := first[e.Token]; !ok {
				first[e.Token] = e
			}
			last[e.Token] = e
		}
	}
	for k := range r.faults {
		a, b := last[r.terms[k].token], first[r.terms[k+1].token]
		late, early := a.At+clocks[a.Node].hi, b.At+clocks[b.Node].lo
		if early-late < 2*ms {
			t.Errorf("handover %d: %s's last line as leader (%d) is dated to %d at the latest, %s's first (%d) to %d at the earliest",
				k, a.Node, a.Index, late, b.Node, b.Index, early)
		}
	}
}

// checkStreams checks a pushed run's lines, and that some stream was cut
// if cut.
func checkStreams(t *testing.T, r *Run, cut bool) {
	t.Helper()
	type stream struct {
		node string
		sent int64
	}
	last := map[stream]history.Event{}
	boots := map[string]int64{}
	var silent, lines int
	for _, e := range r.History {
		switch {
		case e.Type != history.Leader:
			continue
		case e.Error != "":
			silent++
			continue
		case e.At <= 0 || e.Boot == 0:
			t.Fatalf("a polled observation in a pushed run: %+v", e)
		}
		lines++
		w := r.watchOf(e.Node)
		if b, ok := boots[e.Node]; ok && b != e.Boot || e.Boot != w.boot {
			t.Fatalf("line %d: boot %d, want %d", e.Index, e.Boot, w.boot)
		}
		boots[e.Node] = e.Boot
		at := w.trueTime(e.At)
		if _, frozen := r.paused(slices.Index(r.names, e.Node), at); frozen || at < e.Sent || at+50*us > e.Time {
			t.Fatalf("line %d sampled at %d (frozen: %v), not between its request and arrival", e.Index, at, frozen)
		}
		k := stream{e.Node, e.Sent}
		if prev, ok := last[k]; ok && prev.At >= e.At {
			t.Fatalf("line %d goes back on its node's clock", e.Index)
		}
		last[k] = e
	}
	if cut && (len(last) <= len(r.names) || silent == 0) || lines < len(r.History)/4 {
		t.Errorf("%d streams, %d silences, %d lines: want many lines, and a stream cut by a long pause: %v", len(last), silent, lines, cut)
	}
}

func TestConfigValidate(t *testing.T) {
	for name, change := range map[string]func(*Config){
		"no events":       func(c *Config) { c.Events = 0 },
		"one node":        func(c *Config) { c.Nodes = 1 },
		"no keys":         func(c *Config) { c.Keys = 0 },
		"no rate":         func(c *Config) { c.Rate = 0 },
		"share above 1":   func(c *Config) { c.ReadShare = 1.5 },
		"short timeout":   func(c *Config) { c.OpTimeout = time.Millisecond },
		"bound too tight": func(c *Config) { c.Bound = c.Overlap },
	} {
		c := Default()
		change(&c)
		if _, err := Generate(c); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
