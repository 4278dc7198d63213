package suite

import (
	"context"
	"sync"
	"time"

	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/results"
)

// Runner runs a suite's cases.
type Runner struct {
	// Parallel is how many runs at once (at least 1). Each run is a
	// cluster of its own: more at once than the machine can carry slow
	// the faults (a restart, a kill) that the verdicts depend on.
	Parallel int
	// Began and Done are told of each case as it starts and ends, one at
	// a time.
	Began func(Case)
	Done  func(Case, results.Case)
}

// Run runs cases and returns their records in the cases' order. They
// start in the order of Interleave. A run the harness failed is a record
// with outcome Error, and the suite goes on; once ctx is cancelled no
// case starts, and the records hold only the cases that ran.
func (r Runner) Run(ctx context.Context, cases []Case) []results.Case {
	var (
		mu   sync.Mutex
		recs = make([]*results.Case, len(cases))
		next = make(chan Case)
		wg   sync.WaitGroup
		at   = make(map[int]int, len(cases)) // a case's index to its place in cases
	)
	for i, c := range cases {
		at[c.Index] = i
	}
	for range max(r.Parallel, 1) {
		wg.Go(func() {
			for c := range next {
				mu.Lock()
				if r.Began != nil {
					r.Began(c)
				}
				mu.Unlock()
				began := time.Now()
				out, err := harness.Run(ctx, c.Config)
				rec := Record(c, out, err, time.Since(began))
				mu.Lock()
				recs[at[c.Index]] = &rec
				if r.Done != nil {
					r.Done(c, rec)
				}
				mu.Unlock()
			}
		})
	}
	for _, c := range Interleave(cases) {
		if ctx.Err() != nil {
			break
		}
		select {
		case next <- c:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	var out []results.Case
	for _, rec := range recs {
		if rec != nil {
			out = append(out, *rec)
		}
	}
	return out
}

// Interleave orders cases to start them: each target's first case, then
// each target's second, and so on, targets in their order of first
// appearance. Runs at once are then mostly of different targets, so a
// heavy system's cluster (three etcd members and five electors) shares
// the machine with light ones instead of with copies of itself, and no
// two slots wait together for a target's image to be built.
func Interleave(cases []Case) []Case {
	var (
		targets []string
		of      = map[string][]Case{}
	)
	for _, c := range cases {
		if _, ok := of[c.Target]; !ok {
			targets = append(targets, c.Target)
		}
		of[c.Target] = append(of[c.Target], c)
	}
	out := make([]Case, 0, len(cases))
	for round := 0; len(out) < len(cases); round++ {
		for _, t := range targets {
			if round < len(of[t]) {
				out = append(out, of[t][round])
			}
		}
	}
	return out
}
