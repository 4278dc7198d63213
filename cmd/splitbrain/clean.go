package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/splitbrain/splitbrain/harness"
)

// cleanUsage is the usage of `splitbrain clean`.
const cleanUsage = `  splitbrain clean                  remove every container and network a run left behind`

// cleanCmd removes every container and network splitbrain made that is
// still there, whichever run or test left it.
func cleanCmd(ctx context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("clean", flag.ContinueOnError)
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	d, err := harness.ConnectDocker(ctx)
	if err != nil {
		return 0, err
	}
	defer d.Close()
	n, err := d.Remove(ctx, harness.LabelManaged+"=true")
	fmt.Printf("splitbrain: removed %d containers and %d networks\n", n.Containers, n.Networks)
	if len(n.Stuck) > 0 {
		fmt.Printf("splitbrain: the Docker Engine holds a stale endpoint in networks %s and will not remove them before it restarts; nothing runs in them\n", strings.Join(n.Stuck, ", "))
	}
	if err != nil {
		return 0, err
	}
	return exitValid, nil
}
