package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/targets"
)

// targetsUsage is the usage of `splitbrain targets`.
const targetsUsage = `  splitbrain targets                list targets, what each promises and the versions it runs`

// targetsCmd lists the repository's targets: each one's promise,
// services and description, then the versions of the real systems it
// runs: the bases its images stand on, and the Go modules its programs
// were built with, read from its images when they are on this machine.
func targetsCmd(ctx context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("targets", flag.ContinueOnError)
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	_, all, err := repoTargets()
	if err != nil {
		return 0, err
	}
	// Without an Engine the modules are unknown; the rest still lists.
	d, noEngine := harness.ConnectDocker(ctx)
	if noEngine == nil {
		defer d.Close()
	}
	fmt.Printf("%-22s %-20s %-10s %s\n", "TARGET", "PROMISE", "SERVICES", "DESCRIPTION")
	for _, m := range all {
		services := make([]string, len(m.Services))
		for i, s := range m.Services {
			services[i] = s.Name
			switch {
			case s.Beside == targets.BesideNodes:
				services[i] += "×node"
			case s.Beside != "":
				services[i] += "×n1-n" + s.Beside
			case s.Members > 1:
				services[i] += fmt.Sprintf("×%d", s.Members)
			}
		}
		fmt.Printf("%-22s %-20s %-10s %s\n", m.Name, m.Promise, cmp.Or(strings.Join(services, ","), "-"), m.Description)
		versions := m.Bases()
		var modules []string
		built, err := false, noEngine
		if noEngine == nil {
			modules, built, err = d.ImageModules(ctx, m)
		}
		switch {
		case err != nil:
			versions = append(versions, "Go modules unknown: "+err.Error())
		case !built:
			versions = append(versions, "Go modules unknown until its images are made (splitbrain images --target "+m.Name+")")
		default:
			versions = append(versions, modules...)
		}
		if len(versions) > 0 {
			fmt.Printf("%-22s versions: %s\n", "", strings.Join(versions, "; "))
		}
	}
	return exitValid, nil
}
