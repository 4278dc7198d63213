package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/harness/engines"
)

// enginesUsage is the usage of `splitbrain engines`.
const enginesUsage = `  splitbrain engines FILE [--start N]
                                    reach the Docker Engines FILE names and join them in a swarm, one line each;
                                    --start N first starts N engines in containers of this one and writes FILE`

// enginesCmd checks an engines file's engines and joins them in one
// swarm, ahead of runs spread over them (docs/engines.md).
func enginesCmd(ctx context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("engines", flag.ContinueOnError)
	start := fs.Int("start", 0, "start this many engines in containers of this machine first, and write FILE")
	path, err := parseWithFile(fs, args, "an engines file (docs/engines.md)")
	if err != nil {
		return 0, err
	}
	if *start < 0 || *start > 9 {
		return 0, badInput("engines: --start %d: want 1 to 9", *start)
	}
	if *start > 0 {
		if err := startEngines(ctx, path, *start); err != nil {
			return 0, err
		}
	}
	e, err := connectEngines(ctx, path)
	if err != nil {
		return 0, err
	}
	defer e.Close()
	if err := e.Join(ctx); err != nil {
		return 0, badInput("%v", err)
	}
	for i, en := range e.File.Engines {
		role := "worker"
		if i == 0 {
			role = "manager"
		}
		fmt.Printf("%-10s %-28s engine %-10s %s\n", en.Name, en.Host, e.Engine(en.Name).EngineVersion(ctx), role)
	}
	return exitValid, nil
}

// joinEngines reaches the engines of the file at path and joins them in
// one swarm, and returns the file and each engine's cores, in its
// order; what stops it is bad input.
func joinEngines(ctx context.Context, path string) (engines.File, []int, error) {
	e, err := connectEngines(ctx, path)
	if err != nil {
		return engines.File{}, nil, err
	}
	defer e.Close()
	if err := e.Join(ctx); err != nil {
		return engines.File{}, nil, badInput("%v", err)
	}
	cores, err := e.Cores(ctx)
	if err != nil {
		return engines.File{}, nil, badInput("%v", err)
	}
	return e.File, cores, nil
}

// connectEngines reaches every engine of the engines file at path; a file
// that does not read, or an engine that cannot be reached, is bad input:
// nothing has started.
func connectEngines(ctx context.Context, path string) (*harness.Engines, error) {
	f, err := engines.Load(path)
	if err != nil {
		return nil, badInput("%v", err)
	}
	e, err := harness.ConnectEngines(ctx, f)
	if err != nil {
		return nil, badInput("%v", err)
	}
	return e, nil
}

// startEngines starts n engines in containers and writes their file at
// path. `splitbrain clean` removes them.
func startEngines(ctx context.Context, path string, n int) error {
	d, err := harness.ConnectDocker(ctx)
	if err != nil {
		return err
	}
	defer d.Close()
	f, err := d.StartEngines(ctx, "engines-"+strconv.FormatInt(time.Now().Unix(), 36), n)
	if err != nil {
		return err
	}
	b, err := yaml.Marshal(f)
	if err != nil {
		return err
	}
	head := "# Docker Engines in containers of this machine, started by `splitbrain engines --start`;\n# `splitbrain clean` removes them.\n"
	return os.WriteFile(path, append([]byte(head), b...), 0o644)
}
