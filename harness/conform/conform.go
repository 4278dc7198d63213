// Package conform checks, with no fault, that a target's nodes keep every rule of the node API that the checkers rely on.
package conform

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/results"
)

// Report is what conform found of one target.
type Report struct {
	Target  string
	Nodes   int
	Run     string // the run id the containers were labelled with
	Started time.Time
	Took    time.Duration // from the first image build to the last container removed
	Results []Result      // one per rule, in Rules order
	// Logs is the folder of the containers' logs, kept when a rule
	// failed; "" when every rule held, and the folder was removed.
	Logs string
}

// Holds says whether every rule held.
func (r Report) Holds() bool {
	return !slices.ContainsFunc(r.Results, func(res Result) bool { return res.Verdict != Pass })
}

// Broken counts the rules that failed.
func (r Report) Broken() int {
	n := 0
	for _, res := range r.Results {
		if res.Verdict == Fail {
			n++
		}
	}
	return n
}

// Run starts the target cfg names with its services and no fault, as
// `splitbrain run` would with cfg.Nodes nodes and a strict resource,
// observes it, tears it down and judges every rule. An error is the
// harness's (or bad input, harness.IsBadInput), never the target's: a
// target that breaks a rule has a Result that says so. Nothing is left
// running when Run returns, also after ctx is cancelled.
func Run(ctx context.Context, cfg harness.Config) (Report, error) {
	cfg.Nemesis = nil
	cfg.Resource = contract.Strict // a refusal (fenced-412) needs the fence
	rep := Report{Target: cmp.Or(cfg.Target, filepath.Base(cfg.TargetDir)), Nodes: cfg.Nodes, Started: time.Now().UTC()}
	began := time.Now()
	run, err := harness.New(ctx, cfg)
	if err != nil {
		return rep, err
	}
	m := run.Manifest()
	rep.Target, rep.Run = m.Name, run.ID()
	// The containers' logs go to a folder of their own, kept only when a
	// rule failed.
	dir, err := results.Store{Root: os.TempDir()}.Create(run.ID())
	if err != nil {
		return rep, errors.Join(err, run.Down(ctx))
	}
	obs, err := observeUp(ctx, cfg, run, dir, began)
	err = errors.Join(err, run.Down(ctx))
	rep.Took = time.Since(began)
	if err != nil {
		return rep, errors.Join(err, os.RemoveAll(dir))
	}
	rep.Results = Judge(obs)
	if rep.Holds() {
		return rep, os.RemoveAll(dir)
	}
	rep.Logs = filepath.Join(dir, results.LogsDir)
	return rep, nil
}

// observeUp starts run's cluster in dir and observes it. Cut short by
// ctx, it says so (context.Canceled), whichever step it cut.
func observeUp(ctx context.Context, cfg harness.Config, run *harness.Run, dir string, began time.Time) (Observation, error) {
	if err := run.Up(ctx, dir); err != nil {
		return Observation{}, cmp.Or(ctx.Err(), err)
	}
	m := run.Manifest()
	if cfg.Progress != nil {
		fmt.Fprintf(cfg.Progress, "conform: %s: %d nodes healthy after %.1f s; observing them for up to %s\n",
			m.Name, cfg.Nodes, time.Since(began).Seconds(), m.Reaction+watchFor)
	}
	return observe(ctx, run, m.Reaction, m.OwnData)
}

// Suite is the report as a suite of one case per rule, for a JUnit
// report; when the harness failed (err), every rule is an error.
func Suite(rep Report, err error, command string) results.Suite {
	s := results.Suite{Name: "conform", Total: len(rules), Started: rep.Started}
	for i, r := range rules {
		c := results.Case{
			Index: i, Name: r.name, Row: r.name, Target: rep.Target,
			Expect: "the rule holds", Command: command,
		}
		switch {
		case err != nil:
			c.Outcome, c.Message = results.Error, "not judged: "+err.Error()
		default:
			res := rep.Results[i]
			c.Message, c.Verdict = res.Detail, string(res.Verdict)
			c.Outcome = map[Verdict]string{Pass: results.Pass, Fail: results.Failure, Skip: results.Skipped}[res.Verdict]
		}
		s.Cases = append(s.Cases, c)
	}
	return s
}
