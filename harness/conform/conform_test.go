package conform_test

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/harness/conform"
)

// A real target keeps every rule, and each fixture breaks its own rule
// alone, in real containers, three nodes each, all at once. Nothing is
// left running, and a target that broke a rule leaves its nodes' logs.
func TestConformNamesTheBrokenRule(t *testing.T) {
	if testing.Short() {
		t.Skip("starts containers")
	}
	ctx := context.Background()
	docker, err := harness.ConnectDocker(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { docker.Close() })
	for _, tc := range []struct {
		target, dir string
		broken      []string
		skipped     []string
	}{
		{target: "raft"},
		{dir: "testdata/string-token", broken: []string{"leader-shape"}}, // in Python
		{dir: "testdata/follower-200", broken: []string{"follower-409"}},
		{dir: "testdata/swallow-412", broken: []string{"fenced-412"}},
		{dir: "testdata/token-back", broken: []string{"tokens-monotonic"}},
		{dir: "testdata/no-leader", broken: []string{"one-leader"}, skipped: []string{"leader-write", "fenced-412"}},
	} {
		t.Run(cmp.Or(tc.target, filepath.Base(tc.dir)), func(t *testing.T) {
			t.Parallel()
			cfg := harness.DefaultConfig()
			cfg.RepoRoot, cfg.TargetsRoot = "../..", "../../targets"
			cfg.Target, cfg.TargetDir = tc.target, tc.dir
			cfg.Nodes, cfg.Progress = 3, nil
			rep, err := conform.Run(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if left, err := docker.Remove(ctx, harness.LabelRun+"="+rep.Run); err != nil || left.Containers+left.Networks > 0 {
				t.Errorf("run %s left %d containers and %d networks behind (%v)", rep.Run, left.Containers, left.Networks, err)
			}
			var broken, skipped, lines []string
			for _, r := range rep.Results {
				lines = append(lines, string(r.Verdict)+" "+r.Rule+" "+r.Detail)
				switch r.Verdict {
				case conform.Fail:
					broken = append(broken, r.Rule)
				case conform.Skip:
					skipped = append(skipped, r.Rule)
				}
			}
			if !slices.Equal(broken, tc.broken) || !slices.Equal(skipped, tc.skipped) {
				t.Errorf("broke %v and skipped %v, want %v and %v:\n%s", broken, skipped, tc.broken, tc.skipped, strings.Join(lines, "\n"))
			}
			if rep.Holds() {
				if rep.Logs != "" {
					t.Errorf("every rule held, but the logs are kept in %s", rep.Logs)
				}
				return
			}
			t.Cleanup(func() { os.RemoveAll(filepath.Dir(rep.Logs)) })
			if _, err := os.Stat(filepath.Join(rep.Logs, "n1.log")); err != nil {
				t.Errorf("a rule broke, but n1's log is not kept: %v", err)
			}
		})
	}
}
