package harness_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/harness/record"
	"github.com/splitbrain/splitbrain/history"
)

// runReal runs a target of a real system and checks what every such run
// must show: each fault took effect, the real server's own log was saved,
// the version it ran is in run.json (system names it; "" for a library
// compiled into the node, whose log names its version), and nothing is
// left behind.
//
// Each is a run of its own, on a network of its own: they run two at a
// time (go test's -parallel, GOMAXPROCS), once every serial test is done,
// as the catalogue runs several at once.
func runReal(t *testing.T, cfg harness.Config, system string, logs map[string]string) *record.Outcome {
	t.Helper()
	t.Parallel()
	out, err := record.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, out.Info.ID)
	assertFaultsTookEffect(t, out, cfg.Nemesis)
	if system != "" && out.Info.Versions.System[system] == "" {
		t.Errorf("run.json names no %s version: %+v", system, out.Info.Versions)
	}
	for container, line := range logs {
		b, err := os.ReadFile(filepath.Join(out.Dir, "logs", container+".log"))
		if err != nil || !strings.Contains(string(b), line) {
			t.Errorf("%s.log does not say %q (%v)", container, line, err)
		}
	}
	return out
}

// leaderships lists each (node, token) that an observation saw leading,
// in the order first seen.
func leaderships(events []history.Event) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range events {
		if e.Type == history.Leader && e.IsLeader {
			k := fmt.Sprintf("%s@%d", e.Node, e.Token)
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out
}
