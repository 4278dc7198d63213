package suite

import (
	"cmp"
	"context"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/splitbrain/splitbrain/harness/record"
	"github.com/splitbrain/splitbrain/results"
)

// Runner runs a suite's cases.
type Runner struct {
	// Parallel is how many runs at once, at most (at least 1), or Auto:
	// as many as the machine has room for (see Gate). Each run is a
	// cluster of its own: more at once than the machine can carry slow
	// the faults (a restart, a kill) that the verdicts depend on.
	Parallel int
	// CPU measures the machine for Auto; nil reads /proc/stat.
	CPU func() (CPU, error)
	// Places, when set, are the engines of the runs' engines file that
	// each hold whole runs (Config.Engine), and how many at once each
	// takes: a suite spread over several engines by its runs (SpreadRuns).
	// Parallel and CPU then do not apply.
	Places []Place
	// Began and Done are told of each case as it starts and ends, one at
	// a time.
	Began func(Case)
	Done  func(Case, results.Case)
}

// look is how often an Auto runner measures the machine while it waits
// to start a run.
const look = time.Second

// Run runs cases and returns their records in the cases' order. They
// start in the order of Interleave, each once the runner has room for it.
// A run the harness failed is a record with outcome Error, and the suite
// goes on; once ctx is cancelled no case starts, and the records hold
// only the cases that ran.
func (r Runner) Run(ctx context.Context, cases []Case) []results.Case {
	var (
		mu      sync.Mutex
		recs    = make([]*results.Case, len(cases))
		wg      sync.WaitGroup
		at      = make(map[int]int, len(cases)) // a case's index to its place in cases
		running = map[string]int{}              // runs under way on each place, "" for this machine's engine
		place   string                          // where the next run starts
		ended   = make(chan struct{}, len(cases))
		room    = r.room()
		tick    = time.NewTicker(look)
	)
	defer tick.Stop()
	for i, c := range cases {
		at[c.Index] = i
	}
	hasRoom := func() bool {
		mu.Lock()
		defer mu.Unlock()
		var ok bool
		place, ok = room(running)
		return ok
	}
	for _, c := range Interleave(cases) {
		for ctx.Err() == nil && !hasRoom() {
			select {
			case <-ctx.Done():
			case <-ended:
			case <-tick.C:
			}
		}
		if ctx.Err() != nil {
			break
		}
		mu.Lock()
		on := place
		running[on]++
		c.Config.Engine = on
		if r.Began != nil {
			r.Began(c)
		}
		mu.Unlock()
		wg.Go(func() {
			began := time.Now()
			out, err := record.Run(ctx, c.Config)
			rec := Record(c, out, err, time.Since(began))
			mu.Lock()
			running[on]--
			recs[at[c.Index]] = &rec
			if r.Done != nil {
				r.Done(c, rec)
			}
			mu.Unlock()
			ended <- struct{}{}
		})
	}
	wg.Wait()
	var out []results.Case
	for _, rec := range recs {
		if rec != nil {
			out = append(out, *rec)
		}
	}
	return out
}

// room says, given how many runs are under way on each place, where
// another may start now, if anywhere: on the least busy of Places; or
// on this machine's engine ("") while fewer than Parallel run, or for
// Auto as a Gate over this machine's cores says, or a run per core
// where the CPU cannot be read.
func (r Runner) room() func(running map[string]int) (string, bool) {
	if len(r.Places) > 0 {
		return func(running map[string]int) (string, bool) { return leastBusy(r.Places, running) }
	}
	here := func(ok bool) (string, bool) { return "", ok }
	if r.Parallel != Auto {
		n := max(r.Parallel, 1)
		return func(running map[string]int) (string, bool) { return here(running[""] < n) }
	}
	measure := r.CPU
	if measure == nil {
		measure = ReadCPU
	}
	gate := NewGate(runtime.NumCPU())
	return func(running map[string]int) (string, bool) {
		cpu, err := measure()
		if err != nil {
			return here(running[""] < gate.Cores)
		}
		return here(gate.Step(time.Now(), cpu, running[""]))
	}
}

// A Place is an engine that holds whole runs of a suite, and how many
// at once.
type Place struct {
	Engine string
	Runs   int
}

// leastBusy is the place with room for another run that is the least
// busy for its size (runs under way over Runs), the first of equals.
func leastBusy(places []Place, running map[string]int) (string, bool) {
	best := -1
	for i, p := range places {
		if running[p.Engine] >= p.Runs {
			continue
		}
		if best < 0 || running[p.Engine]*places[best].Runs < running[places[best].Engine]*p.Runs {
			best = i
		}
	}
	if best < 0 {
		return "", false
	}
	return places[best].Engine, true
}

// Interleave orders cases to start them, so that runs at once are of
// different systems, targets and families: each real system's runs spread
// evenly over the whole suite, and within a system each target's, every
// target's rows taken from another place in their list. A heavy system's
// cluster (three etcd members and five electors) then shares the machine
// with light ones instead of with its like: four etcd clusters at once on
// 2 cores took 27 s to start and failed to restart a member within its
// deadline. Rows in the same order for every target (none, partition,
// pause...) would otherwise line up: three runs pausing and thawing
// containers at once stalled the Engine past a heal's deadline. No two
// slots wait together for a target's image to be built either.
//
// Spreading by proportion alone rounds: with a quarter of the runs on one
// system, two of them can still fall within four starts. So the spread
// order is only a preference: each start takes the first case left in it
// that clashes with none of the three started before (a target twice, a
// real system more than its share, a third run of one family).
func Interleave(cases []Case) []Case {
	var bySystem []Case
	for _, group := range groups(cases, func(c Case) string { return c.System }) {
		bySystem = append(bySystem, spread(group, func(c Case) string { return c.Target })...)
	}
	return untangle(spread(bySystem, func(c Case) string { return c.System }))
}

// window is how many runs are taken to start side by side: about what
// make catalogue runs at once on 2 cores (see Gate).
const window = 4

// untangle reorders cases, given in their order of preference, so that
// no window of starts clashes where another order avoids it.
func untangle(cases []Case) []Case {
	runsOf := map[string]int{}
	for _, c := range cases {
		runsOf[c.System]++
	}
	left := slices.Clone(cases)
	// Of the cases that do not clash, the most pressed goes first, as a
	// scheduler with cool-downs serves its longest queue: taken in order
	// of preference alone, the last starts were left with one family's
	// runs and nothing to put between them. A case is as pressed as the
	// starts its most crowded kind still needs: its target's runs left
	// a window apart each, its system's at its share, its family's two
	// to a window.
	remaining := map[string]int{}
	count := func(c Case, by int) {
		remaining["target "+c.Target] += by
		remaining["system "+c.System] += by
		remaining["family "+c.Row.Family] += by
	}
	for _, c := range cases {
		count(c, 1)
	}
	pressed := func(c Case) int {
		p := remaining["target "+c.Target] * window
		if c.System != "" {
			p = max(p, remaining["system "+c.System]*window/share(runsOf[c.System], len(cases)))
		}
		if c.Row.Family != "none" {
			p = max(p, remaining["family "+c.Row.Family]*window/ofAFamily)
		}
		return p
	}
	out := make([]Case, 0, len(cases))
	for len(left) > 0 {
		recent := out[max(len(out)-(window-1), 0):]
		// When every case clashes (a suite of two targets), the spread
		// order stands.
		best, most := 0, -1
		for i, c := range left {
			if p := pressed(c); p > most && !clashes(c, recent, runsOf, len(cases)) {
				best, most = i, p
			}
		}
		count(left[best], -1)
		out = append(out, left[best])
		left = slices.Delete(left, best, best+1)
	}
	return out
}

// clashes says whether starting c beside recent would break what
// Interleave keeps: a target twice, a real system beyond its share of the
// window (runsOf of total runs), a family other than none three times.
func clashes(c Case, recent []Case, runsOf map[string]int, total int) bool {
	var system, family int
	for _, r := range recent {
		if r.Target == c.Target {
			return true
		}
		if c.System != "" && r.System == c.System {
			system++
		}
		if c.Row.Family != "none" && r.Row.Family == c.Row.Family {
			family++
		}
	}
	return system+1 > share(runsOf[c.System], total) || family+1 > ofAFamily
}

// ofAFamily is how many runs of one family (but none) a window may start:
// three runs pausing and thawing containers at once stalled the Engine.
const ofAFamily = 2

// share is how many of a window's starts a system with runs of total
// runs may have: its share, rounded up.
func share(runs, total int) int {
	return (window*runs + total - 1) / total
}

// groups splits cases by key, groups and their cases in order of
// appearance.
func groups(cases []Case, key func(Case) string) [][]Case {
	var out [][]Case
	at := map[string]int{}
	for _, c := range cases {
		i, ok := at[key(c)]
		if !ok {
			i = len(out)
			at[key(c)] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], c)
	}
	return out
}

// spread orders cases so that each key's spread evenly over the whole:
// the g-th key's k-th of n falls (k+1/2)/n of the way, its list first
// turned by g places, and keys in their order of appearance where two
// fall together.
func spread(cases []Case, key func(Case) string) []Case {
	type placed struct {
		at    float64 // of the way through
		group int
		c     Case
	}
	var order []placed
	for g, group := range groups(cases, key) {
		for k := range group {
			c := group[(k+g)%len(group)]
			order = append(order, placed{(float64(k) + 0.5) / float64(len(group)), g, c})
		}
	}
	slices.SortFunc(order, func(a, b placed) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.group, b.group))
	})
	out := make([]Case, len(order))
	for i, p := range order {
		out[i] = p.c
	}
	return out
}
