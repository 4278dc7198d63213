package harness_test

import (
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
)

// Every node a real ZooKeeper server of one ensemble: a leader killed, cut
// off and frozen is each time replaced through ZooKeeper's own election,
// every leadership has an epoch of its own, and no deposed leader leads on
// past the bound.
func TestZooKeeperEnsembleElects(t *testing.T) {
	cfg := testConfig(t)
	cfg.Target = "zookeeper"
	cfg.Nemesis = []string{"kill-leader", "partition-leader", "pause-leader"}
	cfg.TimeLimit = 16 * time.Second
	cfg.NemesisInterval = 4 * time.Second
	out := runReal(t, cfg, "libzookeeper-java", map[string]string{"n1": "QuorumPeerMain"})
	if out.Report.Valid != checkers.Valid {
		t.Errorf("verdict %v: %+v", out.Report.Valid, out.Report.Checkers)
	}
	if l := leaderships(readHistory(t, out.Dir)); len(l) < 3 {
		t.Errorf("leaderships %v: want a first leader and one after most faults", l)
	}
}
