package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/nemesis"
	"github.com/splitbrain/splitbrain/targets"
	"github.com/splitbrain/splitbrain/workloads/resource"
)

// catalogueCmd runs the rows of the expected-verdicts catalogue and fails
// when a verdict differs. Per row it prints how many runs found a
// violation and the median time to the first one.
func catalogueCmd(ctx context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("catalogue", flag.ContinueOnError)
	file := fs.String("file", "", "the catalogue (default targets/catalogue.yaml)")
	target := fs.String("target", "", "only this target's rows")
	family := fs.String("family", "", "only this family's rows")
	expect := fs.String("expect", "", "only the rows expecting this verdict (valid or invalid)")
	runs := fs.Int("runs", 1, "runs per row, with seeds seed, seed+1, ...")
	seed := fs.Uint64("seed", 0, "first seed of every row instead of its own")
	timeLimit := fs.Duration("time-limit", 0, "time limit of every run instead of its row's")
	resultsDir := fs.String("results", "results", "results folder")
	table := fs.Bool("table", false, "print the catalogue as targets/README.md's table, run nothing")
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	if *expect != "" && *expect != "valid" && *expect != "invalid" {
		return 0, badInput("catalogue: --expect must be valid or invalid, not %q", *expect)
	}
	if *runs < 1 {
		return 0, badInput("catalogue: --runs must be at least 1, not %d", *runs)
	}
	root, all, err := repoTargets()
	if err != nil {
		return 0, err
	}
	path := *file
	if path == "" {
		path = filepath.Join(root, "targets", targets.CatalogueFile)
	}
	cat, err := targets.LoadCatalogue(path, all)
	if err != nil {
		return 0, badInput("catalogue: %v", err)
	}
	if *table {
		fmt.Print(cat.Markdown())
		return exitValid, nil
	}

	// Every run's settings are checked before the first starts: a bad row
	// must not fail an hour in.
	type job struct {
		row targets.Row
		cfg harness.Config
	}
	var jobs []job
	for _, r := range cat.Rows {
		if (*target != "" && r.Target != *target) || (*family != "" && r.Family != *family) || (*expect != "" && r.Expect != *expect) {
			continue
		}
		cfg := rowConfig(cat.Settings(r), r, root, *resultsDir)
		cfg.Seed, cfg.TimeLimit = cmp.Or(*seed, cfg.Seed), cmp.Or(*timeLimit, cfg.TimeLimit)
		if err := cfg.Validate(); err != nil {
			return 0, badInput("catalogue: %s under %s: %v", r.Target, r.Family, err)
		}
		if _, err := nemesis.Expand(cfg.Nemesis); err != nil {
			return 0, badInput("catalogue: %s under %s: %v", r.Target, r.Family, err)
		}
		jobs = append(jobs, job{r, cfg})
	}
	if len(jobs) == 0 {
		return 0, badInput("catalogue: no row for target %q, family %q, expect %q", *target, *family, *expect)
	}

	began := time.Now()
	differ := 0
	fmt.Printf("%-5s %-38s %-10s %-44s %s\n", "", "TARGET", "FAMILY", "EXPECTED", "FOUND")
	for i, j := range jobs {
		rowBegan := time.Now()
		var (
			firsts   []time.Duration
			problems []string
		)
		for k := range *runs {
			cfg := j.cfg
			cfg.Seed += uint64(k)
			cfg.Command = command(cfg)
			fmt.Fprintf(os.Stderr, "catalogue: [%d/%d] %s\n", i+1, len(jobs), cfg.Command)
			out, err := harness.Run(ctx, cfg)
			if err != nil {
				return 0, err
			}
			if out.Info.Interrupted {
				return 0, fmt.Errorf("catalogue: interrupted at %s under %s", j.row.Label(), j.row.Family)
			}
			if at, ok := targets.FirstViolation(out.Report); ok {
				firsts = append(firsts, at)
			}
			if err := j.row.Judge(out.Report); err != nil {
				problems = append(problems, fmt.Sprintf("%v: %s (%s)", err, cfg.Command, out.Dir))
			}
		}
		verdict := "ok"
		if len(problems) > 0 {
			verdict, differ = "DIFF", differ+1
		}
		fmt.Printf("%-5s %-38s %-10s %-44s %s in %s\n", verdict, j.row.Label(), j.row.Family, expected(j.row),
			detection(firsts, *runs), time.Since(rowBegan).Round(time.Second))
		for _, p := range problems {
			fmt.Printf("      %s\n", p)
		}
	}
	fmt.Printf("catalogue: %d rows, %d as expected, %d differ, in %s\n", len(jobs), len(jobs)-differ, differ, time.Since(began).Round(time.Second))
	if differ > 0 {
		return exitInvalid, nil
	}
	return exitValid, nil
}

// rowConfig is a run of row r with settings s.
func rowConfig(s targets.RunSettings, r targets.Row, root, resultsDir string) harness.Config {
	cfg := harness.DefaultConfig()
	cfg.RepoRoot, cfg.TargetsRoot, cfg.ResultsDir = root, filepath.Join(root, "targets"), resultsDir
	cfg.Target, cfg.Promise, cfg.Nemesis = r.Target, r.Promise, r.Faults()
	cfg.Progress = nil
	cfg.Nodes = cmp.Or(s.Nodes, cfg.Nodes)
	cfg.TimeLimit = cmp.Or(s.TimeLimit, cfg.TimeLimit)
	cfg.NemesisInterval = cmp.Or(s.NemesisInterval, cfg.NemesisInterval)
	cfg.QuietPeriod = cmp.Or(s.QuietPeriod, cfg.QuietPeriod)
	cfg.RecoveryTimeout = cmp.Or(s.RecoveryTimeout, cfg.RecoveryTimeout)
	cfg.Seed = cmp.Or(s.Seed, cfg.Seed)
	cfg.Resource = cmp.Or(resource.Mode(s.Resource), cfg.Resource)
	return cfg
}

// command is the `splitbrain run` that repeats one run of a row.
func command(c harness.Config) string {
	parts := []string{"splitbrain run", "--target=" + c.Target}
	if c.Promise != "" {
		parts = append(parts, fmt.Sprintf("--promise=%q", c.Promise))
	}
	parts = append(parts,
		fmt.Sprintf("--nodes=%d", c.Nodes),
		"--nemesis="+strings.Join(c.Nemesis, ","))
	if c.NemesisInterval > 0 {
		parts = append(parts, "--nemesis-interval="+c.NemesisInterval.String())
	}
	parts = append(parts,
		"--time-limit="+c.TimeLimit.String(),
		"--quiet-period="+c.QuietPeriod.String(),
		"--recovery-timeout="+c.RecoveryTimeout.String(),
		"--resource="+string(c.Resource),
		fmt.Sprintf("--seed=%d", c.Seed))
	return strings.Join(parts, " ")
}

func expected(r targets.Row) string {
	if r.Expect == "valid" {
		return "valid"
	}
	return "invalid by " + strings.Join(r.By, ", ")
}

// detection says in how many runs a violation was found and, when any,
// the median time from the start of the run to the first one.
func detection(firsts []time.Duration, runs int) string {
	if len(firsts) == 0 {
		return fmt.Sprintf("no violation in %d/%d runs", runs, runs)
	}
	slices.Sort(firsts)
	median := firsts[len(firsts)/2]
	if len(firsts)%2 == 0 {
		median = (firsts[len(firsts)/2-1] + median) / 2
	}
	s := fmt.Sprintf("violation in %d/%d runs, first after %.1f s", len(firsts), runs, median.Seconds())
	if len(firsts) == 1 {
		return s
	}
	each := make([]string, len(firsts))
	for i, f := range firsts {
		each[i] = fmt.Sprintf("%.1f", f.Seconds())
	}
	return s + " (median of " + strings.Join(each, ", ") + ")"
}
