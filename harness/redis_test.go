package harness_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/history"
)

// runReal runs a target of a real system and checks what every such run
// must show: each fault took effect, the real server's own log was saved,
// the version it ran is in run.json, and nothing is left behind.
func runReal(t *testing.T, cfg harness.Config, logs map[string]string) *harness.Outcome {
	t.Helper()
	out, err := harness.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	assertNothingLeft(t, out.Info.ID)
	assertFaultsTookEffect(t, out, cfg.Nemesis)
	if out.Info.Versions.System["redis-server"] == "" {
		t.Errorf("run.json names no redis-server version: %+v", out.Info.Versions)
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

// The seeds' Redis elector against a real redis-server in a container that
// persists every write: killed and restarted, or cut off from the leader,
// it still gives one leader at a time and tokens that only grow.
func TestRedisLeaseOnRealRedis(t *testing.T) {
	cfg := testConfig(t)
	cfg.Target = "redis-lease"
	cfg.Nemesis = []string{"kill-service", "partition-service"}
	cfg.TimeLimit = 12 * time.Second
	cfg.NemesisInterval = 3 * time.Second
	out := runReal(t, cfg, map[string]string{"redis": "Ready to accept connections"})
	if out.Report.Valid != checkers.Valid {
		t.Errorf("verdict %v: %+v", out.Report.Valid, out.Report.Checkers)
	}
	if l := leaderships(readHistory(t, out.Dir)); len(l) < 2 {
		t.Errorf("leaderships %v: the faults made no failover", l)
	}
}

// Real Redis servers and three real Sentinels: the primary cut from the
// Sentinels is failed over, a replica leads with the epoch that promoted
// it, and the old primary, never told, leads on beside it (the overlap
// Jepsen found) while the strict resource fences its writes.
func TestRedisSentinelFailsOver(t *testing.T) {
	cfg := testConfig(t)
	cfg.Target = "redis-sentinel"
	cfg.Nemesis = []string{"partition-service"}
	cfg.TimeLimit = 10 * time.Second
	cfg.NemesisInterval = 8 * time.Second
	out := runReal(t, cfg, map[string]string{
		"n1":        "Ready to accept connections",
		"sentinel1": "+monitor master mymaster",
	})
	if out.Report.Valid != checkers.Valid {
		t.Errorf("verdict %v: %+v", out.Report.Valid, out.Report.Checkers)
	}
	l := leaderships(readHistory(t, out.Dir))
	if len(l) < 2 || l[0] != "n1@1" {
		t.Fatalf("leaderships %v: want n1 with epoch 1, then a promoted replica", l)
	}
	if overlap := out.Report.Checkers["leader-overlap"]; overlap.Figures["windows"] == 0 {
		t.Errorf("no two primaries at once: %+v", overlap.Figures)
	}
}
