package main

import (
	"context"
	"flag"
	"path/filepath"
	"strings"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/harness/record"
	"github.com/splitbrain/splitbrain/harness/suite"
)

// runUsage is the usage of `splitbrain run`.
const runUsage = `  splitbrain run --target raft|--target-dir PATH [--promise P] [--nodes 5] [--time-limit 60s] [--nemesis partition,pause,kill,clock] [--nemesis-interval D] [--faults N]
                 [--rate 100] [--concurrency 10] [--read-share 0.25] [--resource strict|unfenced] [--seed N] [--results DIR]
                 [--stop-on-violation [--stop-on CHECKERS]] [--junit FILE] [--engines FILE [--engine NAME]]
                 [--schedule FILE]  the faults of an explicit schedule (a run's schedule.json), at its times`

// runCmd runs one test and prints its verdict; the exit code is the
// verdict's (verdictCode).
func runCmd(ctx context.Context, args []string) (int, error) {
	cfg := harness.DefaultConfig()
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.StringVar(&cfg.Target, "target", cfg.Target, "target name (a folder of targets/)")
	fs.StringVar(&cfg.TargetDir, "target-dir", "", "a target's folder anywhere, instead of --target")
	fs.StringVar(&cfg.Promise, "promise", "", "judge by this promise instead of the target's own")
	fs.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, "number of nodes")
	fs.DurationVar(&cfg.TimeLimit, "time-limit", cfg.TimeLimit, "how long faults and workload run")
	fs.IntVar(&cfg.Faults, "faults", 0, "end once this many paced faults were struck and healed and the cluster is steady after the last, instead of at --time-limit")
	fs.DurationVar(&cfg.QuietPeriod, "quiet-period", cfg.QuietPeriod, "workload without faults after the final heal")
	nem := fs.String("nemesis", strings.Join(cfg.Nemesis, ","), "comma-separated faults, or none")
	fs.DurationVar(&cfg.NemesisInterval, "nemesis-interval", cfg.NemesisInterval, "a fault every interval, healed half an interval later (default: each fault once the cluster has a settled leader, healed once it reacted)")
	fs.Float64Var(&cfg.Rate, "rate", cfg.Rate, "operations per second across the cluster")
	fs.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "client processes")
	fs.IntVar(&cfg.Keys, "keys", cfg.Keys, "size of the key set")
	fs.Float64Var(&cfg.ReadShare, "read-share", cfg.ReadShare, "share of reads among the operations, 0 to 1")
	fs.DurationVar(&cfg.OpTimeout, "op-timeout", cfg.OpTimeout, "per operation; later it is indeterminate")
	fs.DurationVar(&cfg.ObserveInterval, "observe-interval", cfg.ObserveInterval, "how often each node's belief is polled, or pushed when unchanged")
	fs.DurationVar(&cfg.StartTimeout, "start-timeout", cfg.StartTimeout, "for every node to become healthy")
	res := fs.String("resource", string(cfg.Resource), "strict or unfenced")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the workload and the nemesis schedule")
	fs.StringVar(&cfg.ResultsDir, "results", cfg.ResultsDir, "results folder")
	fs.StringVar(&cfg.Schedule, "schedule", "", "an explicit schedule file (a run's schedule.json): its faults at its times, instead of --nemesis's")
	fs.BoolVar(&cfg.StopOnViolation, "stop-on-violation", false, "end the run at the first violation its history shows as it is written, then heal, tear down and judge the whole history")
	stopOn := fs.String("stop-on", "", "with --stop-on-violation: stop once each of these checkers found one ("+strings.Join(harness.Watched, ", ")+")")
	junit := fs.String("junit", "", "write a JUnit XML report of the run to this file")
	fs.StringVar(&cfg.Engines, "engines", "", "spread the cluster over the Docker Engines this file names (docs/engines.md)")
	fs.StringVar(&cfg.Engine, "engine", "", "with --engines: hold the whole cluster on this engine of the file instead")
	checkFlags(fs, &cfg)
	fs.Lookup("seed").DefValue = "random, kept in run.json"
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	cfg.Nemesis = strings.Split(*nem, ",")
	cfg.Resource = contract.Mode(*res)
	if *stopOn != "" {
		cfg.StopOn = strings.Split(*stopOn, ",")
	}
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	if err := writable(cfg.ResultsDir, *junit); err != nil {
		return 0, err
	}
	root, err := repoRoot()
	if err != nil {
		return 0, err
	}
	cfg.RepoRoot, cfg.TargetsRoot = root, filepath.Join(root, "targets")

	began := time.Now()
	out, err := record.Run(ctx, cfg)
	if *junit != "" {
		rec := suite.Single(cfg, out, err, time.Since(began))
		if jerr := writeJUnit(*junit, rec, cfg.ResultsDir); jerr != nil && err == nil {
			err = jerr
		}
	}
	if harness.IsEnvironment(err) {
		summarize(out) // judged up to the failure, which main then prints
	}
	if err != nil {
		return 0, err
	}
	summarize(out)
	return verdictCode(out.Report), nil
}

// checkFlags are the checker settings shared by run and analyze.
func checkFlags(fs *flag.FlagSet, cfg *harness.Config) {
	fs.DurationVar(&cfg.CheckTimeout, "check-timeout", cfg.CheckTimeout, "linearizability budget; past it the verdict is unknown")
	fs.DurationVar(&cfg.RecoveryTimeout, "recovery-timeout", cfg.RecoveryTimeout, "after the final heal, for exactly one leader")
}
