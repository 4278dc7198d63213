package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/splitbrain/splitbrain/harness/suite"
	"github.com/splitbrain/splitbrain/results"
)

// suiteUsage is the usage of `splitbrain suite`.
const suiteUsage = `  splitbrain suite FILE [--shard I/N] [--parallel N|auto] [--stop-on-violation] [--junit FILE] [--results DIR] [--engines FILE]
                   [--target T] [--family F] [--expect valid|invalid] [--runs N] [--seed N] [--time-limit D] [--table]
                                    run a suite (targets/catalogue.yaml is one); exit 0 only if every run reached its verdict`

// suiteCmd runs a suite file's runs, a line for each as it ends, then a
// summary table; it exits 0 only when every run reached the verdict it had
// to, 1 when one reached another, 2 when one reached none (unknown, or
// the harness failed).
func suiteCmd(ctx context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("suite", flag.ContinueOnError)
	var (
		f            suite.Filter
		o            suite.Options
		junit, shard string
	)
	fs.StringVar(&f.Target, "target", "", "only this target's runs")
	fs.StringVar(&f.Family, "family", "", "only the rows of this nemesis family")
	fs.StringVar(&f.Expect, "expect", "", "only the rows expecting this verdict (valid or invalid)")
	fs.StringVar(&f.Bug, "bug", "", "only the rows of this bug, in a track record (targets/bugs.yaml)")
	fs.IntVar(&o.Runs, "runs", 0, "runs per row, with seeds seed, seed+1, ... (default: the row's)")
	fs.Uint64Var(&o.Seed, "seed", 0, "first seed of every row instead of its own")
	fs.DurationVar(&o.TimeLimit, "time-limit", 0, "time limit of every run instead of its row's")
	fs.BoolVar(&o.StopOnViolation, "stop-on-violation", false, "end each run at the violation it must find (a valid row: at any) instead of at its time limit")
	fs.StringVar(&o.ResultsDir, "results", "results", "results folder; the suite's record is its suite.json")
	fs.StringVar(&junit, "junit", "", "write a JUnit XML report to this file")
	fs.StringVar(&shard, "shard", "", "I/N: run only every N-th run from the I-th, one of N CI runners")
	fs.StringVar(&o.Engines, "engines", "", "spread the runs over the Docker Engines this file names, each whole on one (docs/engines.md); a suite of spread: containers spreads each run")
	parallelArg := fs.String("parallel", "1", "runs at once (on each engine, with --engines), or auto: another run only while the machine has a core to spare (with --engines: as many on each as its cores)")
	table := fs.Bool("table", false, "print the suite's table, run nothing: a track record's as docs/bugs.md shows it, any other's as targets/README.md (its rows must name families)")
	file, err := parseWithFile(fs, args, "a suite file, e.g. targets/catalogue.yaml")
	if err != nil {
		return 0, err
	}
	if f.Expect != "" && f.Expect != "valid" && f.Expect != "invalid" {
		return 0, badInput("suite: --expect must be valid or invalid, not %q", f.Expect)
	}
	if o.Runs < 0 {
		return 0, badInput("suite: --runs must be at least 1")
	}
	parallel, err := suite.ParseParallel(*parallelArg)
	if err != nil {
		return 0, badInput("suite: %v", err)
	}
	root, all, err := repoTargets()
	if err != nil {
		return 0, err
	}
	s, err := suite.Load(file, all)
	if err != nil {
		return 0, badInput("suite: %v", err)
	}
	if *table {
		fmt.Print(s.Table())
		return exitValid, nil
	}
	o.RepoRoot = root
	cases, err := s.Cases(f, o)
	if err != nil {
		return 0, badInput("suite: %v", err)
	}
	rec := results.Suite{Name: suiteName(file), File: file, Total: len(cases), Started: time.Now().UTC()}
	if shard != "" {
		i, n, err := suite.ParseShard(shard)
		if err != nil {
			return 0, badInput("suite: %v", err)
		}
		cases, rec.Shard = suite.Shard(cases, i, n), shard
	}
	if err := writable(o.ResultsDir, junit); err != nil {
		return 0, err
	}
	var places []suite.Place
	if o.Engines != "" {
		// Joined once, before runs at once would each join them.
		if o.Engines, err = filepath.Abs(o.Engines); err != nil {
			return 0, badInput("suite: --engines: %v", err)
		}
		f, cores, err := joinEngines(ctx, o.Engines)
		if err != nil {
			return 0, err
		}
		if s.Spread == suite.SpreadRuns {
			for i, en := range f.Engines {
				places = append(places, suite.Place{Engine: en.Name, Runs: cmp.Or(parallel, cores[i])}) // Auto is 0
			}
		}
	}

	began, done := time.Now(), 0
	r := suite.Runner{
		Places:   places,
		Parallel: parallel,
		Began: func(c suite.Case) {
			fmt.Fprintf(os.Stderr, "suite: [%d/%d] %s\n", c.Index+1, rec.Total, c.Config.Command())
		},
		Done: func(c suite.Case, rc results.Case) {
			done++
			fmt.Println(caseLine(done, len(cases), rc, o.ResultsDir))
		},
	}
	rec.Cases = r.Run(ctx, cases)
	if ctx.Err() == nil { // an interrupted row's misses are not yet too many
		rec = suite.Settle(rec)
	}
	if err := writeSuite(o.ResultsDir, junit, rec); err != nil {
		return 0, err
	}
	fmt.Print(suite.Summary(rec))
	fmt.Printf("suite %s: %d runs in %s\n", rec.Name, len(rec.Cases), time.Since(began).Round(time.Second))
	if ctx.Err() != nil {
		fmt.Printf("suite %s: interrupted, %d of its %d runs not run\n", rec.Name, len(cases)-len(rec.Cases), len(cases))
		return exitUnknown, nil
	}
	return suiteCode(rec), nil
}

// caseLine is the line a run gets as it ends.
func caseLine(done, of int, c results.Case, root string) string {
	mark := map[string]string{results.Pass: "ok", results.Failure: "FAIL", results.Error: "ERROR"}[c.Outcome]
	found := c.Verdict
	if c.FirstViolation != nil {
		found += fmt.Sprintf(", first violation at %.1f s", *c.FirstViolation)
	}
	if c.StoppedEarly {
		found += ", stopped there"
	}
	line := fmt.Sprintf("[%d/%d] %-5s %s: %s in %.0f s", done, of, mark, c.Name, found, c.Seconds)
	if c.Message != "" {
		line += "\n      " + c.Message
	}
	if c.Outcome != results.Pass && c.Run != "" {
		line += "\n      " + c.Report(root)
	}
	return line
}

// suiteCode is the exit code of a suite: failures are invalid verdicts
// where another was expected (or a valid one where a violation was);
// errors are runs that proved nothing either way.
func suiteCode(s results.Suite) int {
	code := exitValid
	for _, c := range s.Cases {
		switch c.Outcome {
		case results.Failure:
			return exitInvalid
		case results.Error:
			code = exitUnknown
		}
	}
	return code
}

// writeSuite leaves the suite's record in its results folder and, when
// asked, its JUnit report.
func writeSuite(root, junit string, s results.Suite) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	if err := results.WriteSuite(root, s); err != nil {
		return err
	}
	if junit == "" {
		return nil
	}
	return writeJUnit(junit, s, root)
}

func suiteName(file string) string {
	return strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
}
