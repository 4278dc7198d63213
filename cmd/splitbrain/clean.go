package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/splitbrain/splitbrain/harness"
)

// cleanUsage is the usage of `splitbrain clean`.
const cleanUsage = `  splitbrain clean [--orphans] [--engines FILE]
                                    remove every container and network of splitbrain's; with --orphans only those whose process is gone;
                                    with --engines, on every engine FILE names, and end the swarm splitbrain made of them`

// cleanCmd removes every container and network splitbrain made that is
// still there, whichever run or test left it.
func cleanCmd(ctx context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("clean", flag.ContinueOnError)
	orphans := fs.Bool("orphans", false, "only what processes that are gone left behind: make test's first step")
	enginesFile := fs.String("engines", "", "clean the engines this file names (docs/engines.md) instead of this machine's")
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	if *enginesFile != "" {
		if *orphans {
			return 0, badInput("clean: --orphans is of this machine's Engine only, not with --engines")
		}
		return cleanEngines(ctx, *enginesFile)
	}
	d, err := harness.ConnectDocker(ctx)
	if err != nil {
		return 0, err
	}
	defer d.Close()
	remove := func(ctx context.Context) (harness.Removed, error) { return d.Remove(ctx, harness.LabelManaged+"=true") }
	if *orphans {
		remove = d.RemoveOrphans
	}
	n, err := remove(ctx)
	sayRemoved(n)
	if err != nil {
		return 0, err
	}
	return exitValid, nil
}

// cleanEngines removes what is ours from every engine of the engines
// file at path, then ends the swarm if splitbrain made it.
func cleanEngines(ctx context.Context, path string) (int, error) {
	e, err := connectEngines(ctx, path)
	if err != nil {
		return 0, err
	}
	defer e.Close()
	n, err := e.Remove(ctx, harness.LabelManaged+"=true")
	sayRemoved(n)
	if err != nil {
		return 0, err
	}
	if err := e.Leave(ctx); err != nil {
		return 0, err
	}
	return exitValid, nil
}

// sayRemoved says what a clean removed, and what the Engine would not.
func sayRemoved(n harness.Removed) {
	fmt.Printf("splitbrain: removed %d containers and %d networks\n", n.Containers, n.Networks)
	if len(n.Stuck) > 0 {
		fmt.Printf("splitbrain: the Docker Engine holds a stale endpoint in networks %s and will not remove them before it restarts; nothing runs in them\n", strings.Join(n.Stuck, ", "))
	}
}
