package harness_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/harness/record"
)

// Every node a real etcd member: a leader killed, and one cut off from
// the others, are replaced by Raft; each leadership has a term of its
// own, terms rise, and no deposed leader leads on past the bound.
func TestEtcdMembersElectByRaft(t *testing.T) {
	cfg := testConfig(t)
	cfg.Target = "etcd"
	cfg.Nemesis = []string{"kill-leader", "partition-leader"}
	// One of each, at 4 s and 8 s, each healed 2 s later; none so near
	// the end that a slow kill is cut short by the time limit.
	cfg.TimeLimit = 11 * time.Second
	cfg.NemesisInterval = 4 * time.Second
	out := runReal(t, cfg, "etcd", map[string]string{"n1": "starting an etcd server"})
	if out.Report.Valid != checkers.Valid {
		t.Errorf("verdict %v: %+v", out.Report.Valid, out.Report.Checkers)
	}
	h := readHistory(t, out.Dir)
	if l := leaderships(h); len(l) < 3 {
		t.Errorf("leaderships %v: want a first leader and one after each fault", l)
	}
	// The agent asks its member for every belief: it is polled, not
	// watched.
	for _, e := range h {
		if e.At != 0 {
			t.Fatalf("a pushed line from an agent that serves no watch: %+v", e)
		}
	}
}

// Electors on etcd's election recipe against a real three-member etcd:
// an etcd member killed changes nothing the electors see; the leading
// elector cut from every member loses its session, and another wins with
// a higher revision.
func TestEtcdElectionOnRealEtcd(t *testing.T) {
	cfg := testConfig(t)
	cfg.Target = "etcd-election"
	cfg.Nemesis = []string{"kill-service", "partition-service"}
	// Each fault in effect for 4 s: a session lives 2 s past its last
	// keep-alive, and its client checks once a second.
	cfg.TimeLimit = 21 * time.Second
	cfg.NemesisInterval = 8 * time.Second
	out := runReal(t, cfg, "etcd", map[string]string{"etcd1": "starting an etcd server"})
	if out.Report.Valid != checkers.Valid {
		t.Errorf("verdict %v: %+v", out.Report.Valid, out.Report.Checkers)
	}
	if l := leaderships(readHistory(t, out.Dir)); len(l) < 2 {
		t.Errorf("leaderships %v: the leading elector cut from etcd was never replaced", l)
	}
}

// The elector that never watches its session, cut from etcd, leads on
// after its key is gone and another elector won: splitbrain must say so.
func TestEtcdElectionNaiveIsCaught(t *testing.T) {
	cfg := testConfig(t)
	cfg.Target = "etcd-election-naive"
	cfg.Nemesis = []string{"partition-service"}
	cfg.TimeLimit = 13 * time.Second // cut at 8 s, for 4 s
	// Two leaders to the end: the run waits this long for one.
	cfg.RecoveryTimeout = 3 * time.Second
	cfg.NemesisInterval = 8 * time.Second
	out := runReal(t, cfg, "etcd", nil)
	overlap := out.Report.Checkers["leader-overlap"]
	if out.Report.Valid != checkers.Invalid || overlap.Valid != checkers.Invalid {
		t.Fatalf("verdict %v, leader-overlap %v: want both invalid: %+v", out.Report.Valid, overlap.Valid, overlap.Figures)
	}
}

// A release of etcd that was never made is the user's to fix: one line
// naming it, before anything starts.
func TestEtcdUnknownRelease(t *testing.T) {
	cfg := testConfig(t)
	cfg.TargetDir = "testdata/etcd-unknown-release"
	out, err := record.Run(context.Background(), cfg)
	if !harness.IsBadInput(err) || !strings.Contains(err.Error(), "etcd v3.6.999") {
		t.Fatalf("want bad input naming etcd v3.6.999, got %v", err)
	}
	assertNothingLeft(t, out.Info.ID)
}
