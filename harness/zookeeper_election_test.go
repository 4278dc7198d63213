package harness_test

import (
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
)

// Electors on ZooKeeper's election recipe against a real three-server
// ZooKeeper: a server killed moves its clients to another, in the same
// sessions; the leading elector cut from every server stops believing
// before its session expires, and the next in the queue leads with a
// higher czxid.
func TestZkElectionOnRealZooKeeper(t *testing.T) {
	cfg := testConfig(t)
	cfg.Target = "zk-election"
	cfg.Nemesis = []string{"kill-service", "partition-service"}
	// Each fault in effect for 3 s: a session expires 2 s after ZooKeeper
	// last heard of it, and the next elector is told at once.
	cfg.TimeLimit = 16 * time.Second
	cfg.NemesisInterval = 6 * time.Second
	out := runReal(t, cfg, "libzookeeper-java", map[string]string{
		"n1":  "correct elector on ZooKeeper",
		"zk1": "Reading configuration from: /data/zoo.cfg",
	})
	if out.Report.Valid != checkers.Valid {
		t.Errorf("verdict %v: %+v", out.Report.Valid, out.Report.Checkers)
	}
	if l := leaderships(readHistory(t, out.Dir)); len(l) < 2 {
		t.Errorf("leaderships %v: the leading elector cut from ZooKeeper was never replaced", l)
	}
}

// The elector that believes until told its session expired, cut from
// ZooKeeper, cannot be told: it leads on after its znode is gone and the
// next elector leads, until the cut heals. splitbrain must say so.
func TestZkElectionNaiveIsCaught(t *testing.T) {
	cfg := testConfig(t)
	cfg.Target = "zk-election-naive"
	cfg.Nemesis = []string{"partition-service"}
	cfg.TimeLimit = 10 * time.Second // cut at 6 s, for 3 s
	cfg.RecoveryTimeout = 3 * time.Second
	cfg.NemesisInterval = 6 * time.Second
	out := runReal(t, cfg, "libzookeeper-java", nil)
	overlap := out.Report.Checkers["leader-overlap"]
	if out.Report.Valid != checkers.Invalid || overlap.Valid != checkers.Invalid {
		t.Fatalf("verdict %v, leader-overlap %v: want both invalid: %+v", out.Report.Valid, overlap.Valid, overlap.Figures)
	}
}
