package harness_test

import (
	"slices"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/history"
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

// A frozen leader of the seeds' Redis elector wakes still leading beside
// the node that took its expired lock, and steps down within one round
// trip to Redis. The watch it was serving when it froze tells that belief
// the moment it thaws, so a pause of the leader is seen: an overlap that
// begins as the pause is healed. Not every pause: a leader frozen with its
// GET's answer already on the wire steps down before its first sample.
func TestWokenLeaderIsSeen(t *testing.T) {
	cfg := testConfig(t)
	cfg.Target = "redis-lease"
	cfg.Nemesis = []string{"pause-leader"}
	cfg.NemesisInterval = 0
	cfg.TimeLimit = 8 * time.Second
	out := runReal(t, cfg, "redis-server", nil)
	overlap := out.Report.Checkers["leader-overlap"]
	if overlap.Valid != checkers.Invalid {
		t.Fatalf("leader-overlap %v: no woken leader seen beside its successor", overlap.Valid)
	}
	// The pauses in which another node took the lock, and those of them
	// that began an overlap at their heal.
	events := readHistory(t, out.Dir)
	var frozen string
	var struck int64
	pauses, seen := 0, 0
	for _, e := range events {
		switch {
		case e.Type == history.Nemesis && e.Phase == history.Inject && e.Error == "":
			frozen, struck = e.Nodes[0], e.Time
		case e.Type == history.Nemesis && e.Phase == history.Heal && e.Error == "":
			took := slices.ContainsFunc(events, func(o history.Event) bool {
				return o.Type == history.Leader && o.IsLeader && o.Node != frozen && o.Time > struck && o.Time < e.Sent
			})
			if !took {
				continue
			}
			pauses++
			healed := e.Sent
			if slices.ContainsFunc(overlap.Violations, func(v checkers.Violation) bool {
				return v.Time >= healed && v.Time < healed+int64(time.Second)
			}) {
				seen++
			}
		}
	}
	if seen == 0 {
		t.Fatalf("none of the %d pauses in which another node took the lock began an overlap at its heal; overlaps: %+v", pauses, overlap.Violations)
	}
	t.Logf("%d of %d pauses in which another node took the lock began an overlap at their heal", seen, pauses)
}
