package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/targets"
)

// imagesUsage is the usage of `splitbrain images`.
const imagesUsage = `  splitbrain images [--target T[,T...]] [--tests] [--without BASE]
                                    make every image a run of the targets builds (without --target, the tests' too) ahead of runs and tests;
                                    --tests the tests' with --target; --without kube-apiserver leaves out the targets on that base`

// imagesCmd makes every image of the repository's targets (the heavy bases
// once per machine, their programs compiled) and, without --target or with --tests, of the
// harness's own tests, so that a CI job can pay for them in a step of its
// own and no run or test waits for them.
func imagesCmd(ctx context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("images", flag.ContinueOnError)
	target := fs.String("target", "", "only these targets' images (comma-separated)")
	tests := fs.Bool("tests", false, "with --target, the images of the harness's tests too")
	without := fs.String("without", "", "leave out the targets with an image on this base ("+strings.Join(targets.BaseFields(), ", ")+")")
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	if *without != "" && !slices.Contains(targets.BaseFields(), *without) {
		return 0, badInput("--without %s: not a base (%s)", *without, strings.Join(targets.BaseFields(), ", "))
	}
	root, all, err := repoTargets()
	if err != nil {
		return 0, err
	}
	if *target != "" {
		all = nil
		for name := range strings.SplitSeq(*target, ",") {
			m, err := targets.Find(filepath.Join(root, "targets"), name)
			if err != nil {
				return 0, badInput("%v", err)
			}
			all = append(all, m)
		}
	}
	if *without != "" {
		all = slices.DeleteFunc(all, func(m targets.Manifest) bool { return m.StandsOn(*without) })
	}
	d, err := harness.ConnectDocker(ctx)
	if err != nil {
		return 0, err
	}
	defer d.Close()
	d.Progress = os.Stdout
	start := time.Now()
	if err := d.Images(ctx, root, all, *target == "" || *tests); err != nil {
		return 0, err
	}
	fmt.Printf("splitbrain: the images of %d targets are on this machine (%.1f s)\n", len(all), time.Since(start).Seconds())
	return exitValid, nil
}
