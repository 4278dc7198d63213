package harness_test

import (
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
)

// Curator's LeaderLatch, in Java, against a real three-server ZooKeeper:
// a server killed moves the latch's client to another; the leading node
// cut from every server is SUSPENDED and gives up leading, its session
// expires, and another node's latch leads with a higher token.
func TestCuratorLatchOnRealZooKeeper(t *testing.T) {
	cfg := testConfig(t)
	cfg.Target = "curator-latch"
	cfg.Nemesis = []string{"kill-service", "partition-service"}
	// Each fault in effect for 4 s: a session lives 2 s past the last
	// word from its client.
	cfg.TimeLimit = 21 * time.Second
	cfg.NemesisInterval = 8 * time.Second
	out := runReal(t, cfg, "libcurator-recipes-java", map[string]string{"n1": "n1: connection CONNECTED"})
	if out.Report.Valid != checkers.Valid {
		t.Errorf("verdict %v: %+v", out.Report.Valid, out.Report.Checkers)
	}
	if l := leaderships(readHistory(t, out.Dir)); len(l) < 2 {
		t.Errorf("leaderships %v: the leading latch cut from ZooKeeper was never replaced", l)
	}
}
