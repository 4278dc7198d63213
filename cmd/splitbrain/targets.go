package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/splitbrain/splitbrain/targets"
)

// targetsUsage is the usage of `splitbrain targets`.
const targetsUsage = `  splitbrain targets                list targets and what each promises`

// targetsCmd lists the repository's targets: each one's promise,
// services and description.
func targetsCmd(_ context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("targets", flag.ContinueOnError)
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	_, all, err := repoTargets()
	if err != nil {
		return 0, err
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
	}
	return exitValid, nil
}
