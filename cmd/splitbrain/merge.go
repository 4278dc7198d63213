package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/splitbrain/splitbrain/harness/suite"
	"github.com/splitbrain/splitbrain/results"
)

// mergeUsage is the usage of `splitbrain merge`.
const mergeUsage = `  splitbrain merge --results DIR [--junit FILE] SHARD_DIR...
                                    join the results folders of a suite's shards into one`

// mergeCmd joins the results folders of a suite's shards: their runs in
// one folder, one suite.json and JUnit report as if one runner had run the
// whole suite, and the summary table.
func mergeCmd(_ context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("merge", flag.ContinueOnError)
	out := fs.String("results", "", "the results folder to merge into")
	junit := fs.String("junit", "", "write the merged JUnit XML report to this file")
	dirs, err := parseArgs(fs, args)
	if err != nil {
		return 0, err
	}
	if *out == "" || len(dirs) == 0 {
		return 0, badInput("merge: give --results DIR and the shards' results folders")
	}
	var shards []results.Suite
	for _, d := range dirs {
		s, err := results.ReadSuite(d)
		if err != nil {
			return 0, storeError("merge", d+" holds no suite's record", err)
		}
		shards = append(shards, s)
	}
	merged, err := results.MergeSuites(shards)
	if err != nil {
		return 0, badInput("merge: %v", err)
	}
	merged = suite.Settle(merged)
	if err := writable(*out, *junit); err != nil {
		return 0, err
	}
	for i, s := range shards {
		for _, c := range s.Cases {
			if c.Run == "" {
				continue
			}
			if err := results.CopyRun(dirs[i], *out, c.Run); err != nil {
				return 0, fmt.Errorf("merge: %v", err)
			}
		}
	}
	if err := writeSuite(*out, *junit, merged); err != nil {
		return 0, err
	}
	if err := results.WriteIndex(results.Store{Root: *out}); err != nil {
		return 0, err
	}
	fmt.Print(suite.Summary(merged))
	return suiteCode(merged), nil
}
