package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/harness/conform"
)

// conformUsage is the usage of `splitbrain conform`.
const conformUsage = `  splitbrain conform --target T|--target-dir PATH [--nodes 3] [--junit FILE]
                                    start a target with no fault and check the node API's rules, one line each;
                                    exit 0 only if every rule holds: the first command a target's author runs`

// conformCmd starts a target with no fault and checks every rule of the
// node API the checkers rely on, a line for each: exit 0 when every rule
// holds, 1 when one does not.
func conformCmd(ctx context.Context, args []string) (int, error) {
	cfg := harness.DefaultConfig()
	cfg.Nodes = 3
	fs := flag.NewFlagSet("conform", flag.ContinueOnError)
	fs.StringVar(&cfg.Target, "target", "", "target name (a folder of targets/)")
	fs.StringVar(&cfg.TargetDir, "target-dir", "", "a target's folder anywhere, instead of --target")
	fs.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, "number of nodes")
	junit := fs.String("junit", "", "write a JUnit XML report, a testcase per rule, to this file")
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	switch {
	case cfg.Target != "" && cfg.TargetDir != "":
		return 0, badInput("conform: give --target or --target-dir, not both")
	case cfg.Nodes < 2:
		return 0, badInput("conform: --nodes must be at least 2, not %d: a follower's refusal is one of the rules", cfg.Nodes)
	}
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	if err := writable(os.TempDir(), *junit); err != nil {
		return 0, err
	}
	root, err := repoRoot()
	if err != nil {
		return 0, err
	}
	cfg.RepoRoot, cfg.TargetsRoot = root, filepath.Join(root, "targets")
	command := "splitbrain conform " + strings.Join(args, " ")

	rep, err := conform.Run(ctx, cfg)
	if *junit != "" && !harness.IsBadInput(err) {
		if jerr := writeJUnit(*junit, conform.Suite(rep, err, command), ""); jerr != nil && err == nil {
			err = jerr
		}
	}
	if errors.Is(err, context.Canceled) {
		fmt.Printf("conform %s: interrupted; nothing it started is left running\n", rep.Target)
		return exitUnknown, nil
	}
	if err != nil {
		return 0, err
	}
	for _, r := range rep.Results {
		fmt.Printf("%-4s  %-16s  %s\n", r.Verdict, r.Rule, r.Detail)
	}
	if rep.Holds() {
		fmt.Printf("conform %s: every rule holds (%d nodes, %.1f s)\n", rep.Target, rep.Nodes, rep.Took.Seconds())
		return exitValid, nil
	}
	fmt.Printf("conform %s: %d of %d rules broken (%d nodes, %.1f s); the containers' logs: %s\n",
		rep.Target, rep.Broken(), len(rep.Results), rep.Nodes, rep.Took.Seconds(), rep.Logs)
	return exitInvalid, nil
}
