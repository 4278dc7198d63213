package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/splitbrain/splitbrain/results"
)

// pruneUsage is the usage of `splitbrain prune`.
const pruneUsage = `  splitbrain prune [--keep N] [--older-than D] [--results DIR]
                                    remove stored runs beyond the newest N, or older than D`

// pruneCmd bounds a results folder: the newest runs are kept, the run
// latest points to always.
func pruneCmd(_ context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("prune", flag.ContinueOnError)
	keep := fs.Int("keep", 0, "keep the newest N runs (0: no bound by count)")
	olderThan := fs.Duration("older-than", 0, "remove runs started longer ago than this, e.g. 720h (0: no bound by age)")
	dir := fs.String("results", "results", "results folder")
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	if *keep < 0 || *olderThan < 0 || (*keep == 0 && *olderThan == 0) {
		return 0, badInput("prune: give --keep N (at least 1) or --older-than D (positive), or both")
	}
	if st, err := os.Stat(*dir); err != nil || !st.IsDir() {
		return 0, badInput("prune: %s is not a results folder", *dir)
	}
	removed, err := results.Store{Root: *dir}.Prune(*keep, *olderThan, time.Now())
	fmt.Printf("splitbrain: removed %d runs from %s\n", len(removed), *dir)
	if err != nil {
		return 0, err
	}
	return exitValid, nil
}
