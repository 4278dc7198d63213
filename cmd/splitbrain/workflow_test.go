package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The nightly workflows a team copies call only splitbrain's documented
// commands, with flags that exist: each command line found in them parses
// up to a --help put at its end. What the commands do is tested with real
// containers by TestSuiteShardsMergeAsOne, TestRunWritesJUnit and
// TestSuiteBadInput.
func TestWorkflowsCallRealFlags(t *testing.T) {
	ciVars := strings.NewReplacer(
		"${{ matrix.shard }}", "1", "$CI_NODE_INDEX", "1", "$CI_NODE_TOTAL", "4",
		`"$SUITE"`, "../../targets/catalogue.yaml", "shards/*", "shards", "runs-*", "runs-1",
	)
	invocation := regexp.MustCompile(`\./bin/splitbrain (.*)$`)
	for _, file := range []string{"../../.github/workflows/nightly.yml", "../../ci/gitlab-nightly.yml"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var found []string
		for _, line := range strings.Split(string(b), "\n") {
			m := invocation.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			args := strings.Fields(ciVars.Replace(m[1]))
			found = append(found, args[0])
			if !slices.Contains([]string{"suite", "merge", "prune", "run"}, args[0]) {
				t.Errorf("%s calls splitbrain %s, not one of the nightly commands", file, args[0])
			}
			var code int
			out := captureStdout(t, func() { code = run(append(args, "--help")) })
			if code != exitValid || !strings.HasPrefix(out, "usage: splitbrain "+args[0]) {
				t.Errorf("%s: splitbrain %s: a flag that does not parse (exit %d)", file, strings.Join(args, " "), code)
			}
		}
		if !slices.Contains(found, "suite") || !slices.Contains(found, "merge") {
			t.Errorf("%s runs %v: want a suite and a merge", file, found)
		}
	}
}
