// Package shrink finds, by replays, the smallest explicit schedule that still breaks a target as a run did, and how likely each of its faults makes the break.
package shrink

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/splitbrain/splitbrain/nemesis"
	"github.com/splitbrain/splitbrain/results"
)

// Candidate is a schedule to replay: its faults, on how many nodes, with
// what time limit.
type Candidate struct {
	Faults []nemesis.Timed `json:"faults"`
	Nodes  int             `json:"nodes"`
	Limit  float64         `json:"time_limit_s"`
}

// Key names the candidate in the journal: the same schedule, nodes and
// limit, the same key.
func (c Candidate) Key() string {
	b, _ := json.Marshal(c) // plain data: cannot fail
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// String is the candidate in a progress line: each fault as
// name@at+held when there are few.
func (c Candidate) String() string {
	faults := fmt.Sprintf("%d faults", len(c.Faults))
	if len(c.Faults) <= 3 {
		names := make([]string, len(c.Faults))
		for i, f := range c.Faults {
			names[i] = fmt.Sprintf("%s@%g+%g", f.Fault, f.At, f.For)
		}
		faults += " [" + strings.Join(names, " ") + "]"
	}
	return fmt.Sprintf("%s, %d nodes, %g s", faults, c.Nodes, c.Limit)
}

// Outcome is what one replay found.
type Outcome struct {
	// Violations are its verdict's violations, as "checker/kind".
	Violations []string `json:"violations"`
	// Dir is its run folder; Error why it reached no verdict.
	Dir     string  `json:"dir,omitempty"`
	Error   string  `json:"error,omitempty"`
	Seconds float64 `json:"seconds"`
}

// Runner replays candidates.
type Runner interface {
	// Replay runs c once, as its i-th replay. An error is a replay that
	// did not finish (cut short by ctx): it is not kept, and is run again
	// by a shrink resumed later. A replay that finished without a
	// verdict is an Outcome with its Error.
	Replay(ctx context.Context, c Candidate, i int) (Outcome, error)
}

// Options of a shrink.
type Options struct {
	// Violation is what a replay must show to reproduce: "checker/kind".
	Violation string
	// Runs replays each candidate; it is kept when at least Reproduce of
	// them (a share) show the violation.
	Runs      int
	Reproduce float64
	// Parallel replays at once, at most.
	Parallel int
	// Budget: no replay starts after it (those under way finish). The
	// search leaves the likelihood's replays their time, estimated from
	// the replays' mean.
	Budget time.Duration
	// MinNodes is the fewest nodes the target runs on; MinHold (s) the
	// shortest hold tried; Tail (s) how long a candidate runs on after
	// its last heal before the run's time limit.
	MinNodes int
	MinHold  float64
	Tail     float64
	// Journal keeps the outcomes; Progress hears of each replay.
	Journal  *Journal
	Progress func(Progress)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Progress is the state of a shrink after a replay.
type Progress struct {
	Candidate  int // from 1
	Phase      string
	Tried      Candidate
	Done, Runs int // replays of Tried finished (kept from the journal or run now), and asked
	Reproduced int
	Replayed   bool // false: taken from the journal
	Best       Candidate
	Elapsed    time.Duration
}

func (p Progress) String() string {
	from := ""
	if !p.Replayed {
		from = " (from the journal)"
	}
	return fmt.Sprintf("shrink %s: candidate %d (%s: %s): replay %d/%d%s, reproduced %d; best: %d faults, %d nodes",
		p.Elapsed.Round(time.Second), p.Candidate, p.Phase, p.Tried, p.Done, p.Runs, from, p.Reproduced, len(p.Best.Faults), p.Best.Nodes)
}

// Tally is how often a candidate's replays reproduced.
type Tally struct {
	Runs, Reproduced int
	// Example is a replay that reproduced, if one did.
	Example Outcome
}

// Result of a shrink.
type Result struct {
	// Violation is what the replays had to show, "checker/kind".
	Violation              string
	Original, Best         Candidate
	OriginalTally, BestTal Tally
	// Reproduced: the original schedule reproduced often enough to be
	// shrunk; otherwise Best is the original.
	Reproduced bool
	// Likelihood: the best schedule cut after each of its faults.
	Likelihood  []results.Cut
	Candidates  int
	Replays     int // run now, not taken from the journal
	OutOfBudget bool
}

type search struct {
	ctx      context.Context
	run      Runner
	opt      Options
	start    time.Time
	best     Candidate
	cap      float64 // the original's time limit
	tallies  map[string]Tally
	res      Result
	spent    float64 // seconds of the replays run now
	spentN   int
	outOfBud bool
}

// Shrink replays the target of from, the run's own schedule, with smaller schedules: delta
// debugging over its faults, then shorter holds, then later starts (each
// fault's heal kept; neither for a fault held Until the cluster
// reacted), then fewer nodes, keeping each candidate that
// reproduces the violation in at least Reproduce of Runs replays. Then it
// measures the likelihood over time of the best: the share of replays
// that fail when it is cut after each fault.
func Shrink(ctx context.Context, r Runner, from Candidate, opt Options) (Result, error) {
	switch {
	case opt.Runs < 1:
		return Result{}, fmt.Errorf("runs must be at least 1, not %d", opt.Runs)
	case opt.Reproduce <= 0 || opt.Reproduce > 1:
		return Result{}, fmt.Errorf("the share to reproduce must be in (0, 1], not %g", opt.Reproduce)
	case opt.Parallel < 1:
		return Result{}, fmt.Errorf("parallel must be at least 1, not %d", opt.Parallel)
	case opt.Violation == "":
		return Result{}, fmt.Errorf("no violation to reproduce")
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Journal == nil {
		opt.Journal, _ = OpenJournal("")
	}
	s := &search{ctx: ctx, run: r, opt: opt, start: opt.Now(), cap: from.Limit, tallies: map[string]Tally{}}
	// A fault held until the run's end is held until the original's
	// limit: the same, and something a shorter hold can be tried against.
	from.Faults = slices.Clone(from.Faults)
	for i, f := range from.Faults {
		if f.For == 0 {
			from.Faults[i].For = round(max(from.Limit-f.At, 0.001))
		}
	}
	s.res.Original, s.res.Violation = from, opt.Violation
	first := s.limited(from)
	s.best = first
	s.res.Reproduced = s.test(first, original, false)
	s.res.OriginalTally = s.tallies[first.Key()]
	if s.res.Reproduced {
		s.shrink()
		s.likelihood()
	}
	s.res.Best, s.res.BestTal = s.best, s.tallies[s.best.Key()]
	s.res.OutOfBudget = s.outOfBud
	return s.res, ctx.Err()
}

// shrink runs the phases, each from the best so far.
func (s *search) shrink() {
	s.best.Faults = ddmin(s.best.Faults, func(fs []nemesis.Timed) bool {
		return s.try(Candidate{Faults: fs, Nodes: s.best.Nodes}, "ddmin")
	})
	// A fault held Until the cluster reacted keeps its hold: its For is
	// only what it took once.
	for i := range s.best.Faults {
		for s.best.Faults[i].Until == nil && s.best.Faults[i].For/2 >= s.opt.MinHold {
			c := s.clone()
			c.Faults[i].For = round(c.Faults[i].For / 2)
			if !s.try(c, "shorter hold") {
				break
			}
		}
	}
	for i := range s.best.Faults {
		for s.best.Faults[i].Until == nil && s.best.Faults[i].For/2 >= s.opt.MinHold {
			c := s.clone()
			f := &c.Faults[i]
			half := round(f.For / 2)
			f.At, f.For = round(f.At+half), round(f.For-half)
			if !s.try(c, "later start") {
				break
			}
		}
	}
	for n := s.best.Nodes - 1; n >= max(s.opt.MinNodes, 1); n-- {
		c := s.clone()
		c.Nodes = n
		if !s.try(c, "fewer nodes") {
			break
		}
	}
}

// try tests c, its limit cut to its faults, and keeps it as the best if
// it reproduces.
func (s *search) try(c Candidate, phase string) bool {
	c = s.limited(c)
	if !s.test(c, phase, false) {
		return false
	}
	s.best = c
	return true
}

func (s *search) clone() Candidate {
	c := s.best
	c.Faults = slices.Clone(c.Faults)
	return c
}

// limited cuts c's time limit to Tail after its last heal, never past the
// original's: a replay need not run on for faults it no longer has.
func (s *search) limited(c Candidate) Candidate {
	end := 0.0
	for _, f := range c.Faults {
		end = max(end, f.End())
	}
	c.Limit = min(s.cap, math.Ceil((end+s.opt.Tail)*10)/10)
	return c
}

// likelihood replays the best cut after each of its faults, every run of
// each, while the budget lasts.
func (s *search) likelihood() {
	for k := 0; k <= len(s.best.Faults); k++ {
		c := Candidate{Faults: slices.Clone(s.best.Faults[:k]), Nodes: s.best.Nodes, Limit: s.best.Limit}
		s.test(c, fmt.Sprintf("cut after %d", k), true)
		t := s.tallies[c.Key()]
		cut := results.Cut{After: k, Runs: t.Runs, Failed: t.Reproduced}
		if k > 0 {
			cut.At = c.Faults[k-1].End()
		}
		s.res.Likelihood = append(s.res.Likelihood, cut)
	}
}

// need is how many of the replays must reproduce.
func (s *search) need() int { return int(math.Ceil(s.opt.Reproduce*float64(s.opt.Runs) - 1e-9)) }

// original is the phase of the run's own schedule.
const original = "original"

// reserved is how many cuts of the best the search leaves time for (at
// most half the budget): a shrink that ends with more faults has its
// likelihood cut short by the budget.
const reserved = 3

// late says whether no replay may start now: past the budget, or, in the
// search's phases (reserve), too near it to leave the likelihood its
// replays. The original is always given the whole budget: nothing can be
// shrunk before it is decided.
func (s *search) late(reserve bool) bool {
	left := s.opt.Budget - s.opt.Now().Sub(s.start)
	if reserve && s.spentN > 0 {
		rounds := math.Ceil(float64(s.opt.Runs*min(len(s.best.Faults), reserved)) / float64(s.opt.Parallel))
		left -= min(time.Duration(rounds*s.spent/float64(s.spentN)*float64(time.Second)), s.opt.Budget/2)
	}
	return left <= 0 || s.ctx.Err() != nil
}

// done is a replay that finished, or did not.
type done struct {
	i   int
	o   Outcome
	err error
}

// test replays c until it is decided (all: every run), the journal's
// outcomes first, and says whether it reproduced often enough.
func (s *search) test(c Candidate, phase string, all bool) bool {
	if s.ctx.Err() != nil {
		return false // killed: nothing more is tried
	}
	s.res.Candidates++
	key, need, runs := c.Key(), s.need(), s.opt.Runs
	var t Tally
	add := func(o Outcome) {
		t.Runs++
		if slices.Contains(o.Violations, s.opt.Violation) {
			t.Reproduced++
			if t.Example.Dir == "" {
				t.Example = o
			}
		}
	}
	decided := func() bool { return !all && (t.Reproduced >= need || t.Runs-t.Reproduced > runs-need) }
	known := s.opt.Journal.Known(key)
	var todo []int
	for i := range runs {
		if o, ok := known[i]; ok {
			add(o)
		} else {
			todo = append(todo, i)
		}
	}
	report := func(replayed bool) {
		if s.opt.Progress != nil {
			s.opt.Progress(Progress{Candidate: s.res.Candidates, Phase: phase, Tried: c, Done: t.Runs, Runs: runs,
				Reproduced: t.Reproduced, Replayed: replayed, Best: s.best, Elapsed: s.opt.Now().Sub(s.start)})
		}
	}
	if len(known) > 0 {
		report(false)
	}
	// A replay still under way when the candidate is decided is cut
	// short: it could not change the decision, and holds up the next.
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	finished := make(chan done)
	inflight := 0
	for {
		if decided() {
			cancel()
		}
		for inflight < s.opt.Parallel && len(todo) > 0 && !decided() {
			if s.late(!all && phase != original) {
				break
			}
			i := todo[0]
			todo = todo[1:]
			inflight++
			go func() {
				o, err := s.run.Replay(ctx, c, i)
				finished <- done{i, o, err}
			}()
		}
		if inflight == 0 {
			break
		}
		d := <-finished
		inflight--
		if d.err != nil {
			continue // cut short: not kept, and run again if it is needed
		}
		if err := s.opt.Journal.Add(key, d.i, d.o); err != nil {
			d.o.Error = "journal: " + err.Error()
		}
		s.res.Replays++
		s.spent += d.o.Seconds
		s.spentN++
		add(d.o)
		report(true)
	}
	s.tallies[key] = t
	if t.Runs < runs && !decided() {
		s.outOfBud = true // left undecided, or a cut short of its runs
	}
	return t.Reproduced >= need
}

// round is v to the millisecond, as schedules are written.
func round(v float64) float64 { return math.Round(v*1000) / 1000 }
