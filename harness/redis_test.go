package harness_test

import (
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
)

// The seeds' Redis elector against a real redis-server in a container that
// persists every write: killed and restarted, or cut off from the leader,
// it still gives one leader at a time and tokens that only grow.
func TestRedisLeaseOnRealRedis(t *testing.T) {
	cfg := testConfig(t)
	cfg.Target = "redis-lease"
	cfg.Nemesis = []string{"kill-service", "partition-service"}
	cfg.TimeLimit = 12 * time.Second
	cfg.NemesisInterval = 3 * time.Second
	out := runReal(t, cfg, "redis-server", map[string]string{"redis": "Ready to accept connections"})
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
	out := runReal(t, cfg, "redis-server", map[string]string{
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
