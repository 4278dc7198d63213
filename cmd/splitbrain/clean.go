package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/splitbrain/splitbrain/harness"
)

// cleanUsage is the usage of `splitbrain clean`.
const cleanUsage = `  splitbrain clean [--orphans]      remove every container and network of splitbrain's; with --orphans only those whose process is gone`

// cleanCmd removes every container and network splitbrain made that is
// still there, whichever run or test left it.
func cleanCmd(ctx context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("clean", flag.ContinueOnError)
	orphans := fs.Bool("orphans", false, "only what processes that are gone left behind: make test's first step")
	if err := parse(fs, args); err != nil {
		return 0, err
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
	fmt.Printf("splitbrain: removed %d containers and %d networks\n", n.Containers, n.Networks)
	if len(n.Stuck) > 0 {
		fmt.Printf("splitbrain: the Docker Engine holds a stale endpoint in networks %s and will not remove them before it restarts; nothing runs in them\n", strings.Join(n.Stuck, ", "))
	}
	if err != nil {
		return 0, err
	}
	return exitValid, nil
}
