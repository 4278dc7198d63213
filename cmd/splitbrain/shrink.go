package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/splitbrain/splitbrain/harness/shrink"
	"github.com/splitbrain/splitbrain/results"
)

// shrinkUsage is the usage of `splitbrain shrink`.
const shrinkUsage = `  splitbrain shrink RUN_DIR [--runs 5] [--reproduce 0.8] [--budget 20m] [--parallel 2] [--violation CHECKER/KIND] [--out DIR]
                                    the smallest schedule that still reproduces the run's violation, by replays`

// shrinkCmd replays a run's target and settings with smaller schedules
// until the smallest that still reproduces its violation, and exits 0
// with the shrunk run folder, or 2 when the run's own schedule did not
// reproduce often enough to shrink.
func shrinkCmd(ctx context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("shrink", flag.ContinueOnError)
	var cfg shrink.Config
	fs.IntVar(&cfg.Runs, "runs", 5, "replays of each candidate schedule")
	fs.Float64Var(&cfg.Reproduce, "reproduce", 0.8, "the share of a candidate's replays that must show the violation for it to be kept")
	fs.IntVar(&cfg.Parallel, "parallel", 2, "replays at once")
	fs.DurationVar(&cfg.Budget, "budget", 20*time.Minute, "no replay starts after it; those under way finish")
	fs.StringVar(&cfg.Violation, "violation", "", "checker/kind to reproduce (default: the run's earliest violation)")
	minHold := fs.Duration("min-hold", 500*time.Millisecond, "the shortest hold of a fault tried")
	tail := fs.Duration("tail", 2*time.Second, "how long a candidate runs on after its last heal, before its time limit")
	fs.StringVar(&cfg.Out, "out", "", "the shrink's folder: its journal, replays and the shrunk run (default: RESULTS/shrink-<run id> beside the run)")
	dir, err := parseWithFile(fs, args, "one run folder, e.g. results/latest")
	if err != nil {
		return 0, err
	}
	switch {
	case cfg.Runs < 1:
		return 0, badInput("shrink: --runs must be at least 1, not %d", cfg.Runs)
	case cfg.Reproduce <= 0 || cfg.Reproduce > 1:
		return 0, badInput("shrink: --reproduce must be a share in (0, 1], not %g", cfg.Reproduce)
	case cfg.Parallel < 1:
		return 0, badInput("shrink: --parallel must be at least 1, not %d", cfg.Parallel)
	case cfg.Budget <= 0:
		return 0, badInput("shrink: --budget must be positive, not %s", cfg.Budget)
	case *minHold <= 0 || *tail < 0:
		return 0, badInput("shrink: --min-hold must be positive and --tail not negative")
	case cfg.Violation != "" && !strings.Contains(cfg.Violation, "/"):
		return 0, badInput("shrink: --violation must be checker/kind, as leader-overlap/overlap, not %q", cfg.Violation)
	}
	cfg.MinHold, cfg.Tail = minHold.Seconds(), tail.Seconds()
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return 0, badInput("shrink: %v", err)
	}
	cfg.RunDir = dir
	if cfg.Out == "" {
		cfg.Out = filepath.Join(filepath.Dir(dir), "shrink-"+filepath.Base(dir))
	}
	if err := writable(cfg.Out, ""); err != nil {
		return 0, err
	}
	root, err := repoRoot()
	if err != nil {
		return 0, err
	}
	cfg.RepoRoot, cfg.TargetsRoot, cfg.Log = root, filepath.Join(root, "targets"), os.Stderr
	res, shrunk, err := shrink.Run(ctx, cfg)
	if errors.Is(err, context.Canceled) {
		fmt.Printf("splitbrain shrink: interrupted after %d replays, each kept in %s: the same command goes on where it stopped\n",
			res.Replays, filepath.Join(cfg.Out, shrink.JournalFile))
		return exitUnknown, nil
	}
	if err != nil {
		return 0, err
	}
	o := res.OriginalTally
	if !res.Reproduced && res.OutOfBudget {
		fmt.Printf("splitbrain shrink: the budget ran out before the run's schedule was decided (%s in %d of %d replays so far): nothing shrunk; the same command goes on from its journal\n",
			res.Violation, o.Reproduced, o.Runs)
		return exitUnknown, nil
	}
	if !res.Reproduced {
		fmt.Printf("splitbrain shrink: the run's schedule reproduced %s in %d of %d replays, below --reproduce %g: nothing to shrink (a lower --reproduce, or more --runs, may do)\n",
			res.Violation, o.Reproduced, o.Runs, cfg.Reproduce)
		return exitUnknown, nil
	}
	b := res.BestTal
	fmt.Printf("splitbrain shrink: %s: %d faults on %d nodes -> %d on %d, reproduced in %d of %d replays (the original in %d of %d); %d candidates, %d replays\n",
		res.Violation, len(res.Original.Faults), res.Original.Nodes, len(res.Best.Faults), res.Best.Nodes, b.Reproduced, b.Runs, o.Reproduced, o.Runs, res.Candidates, res.Replays)
	for _, f := range res.Best.Faults {
		until := ""
		if f.Until != nil {
			until = ", until the cluster reacted"
		}
		fmt.Printf("  %7.3fs %-18s held %.3f s%s\n", f.At, f.Fault, f.For, until)
	}
	for _, c := range res.Likelihood {
		fmt.Printf("  cut after %d faults: %d of %d replays failed\n", c.After, c.Failed, c.Runs)
	}
	if res.OutOfBudget {
		fmt.Println("  stopped at its budget: a smaller schedule may exist (the same command goes on from its journal)")
	}
	s, err := results.ReadShrunk(shrunk)
	if err != nil {
		return 0, err
	}
	fmt.Printf("  replay: %s\n  report: %s\n", s.Command, filepath.Join(shrunk, results.ReportFile))
	return exitValid, nil
}
