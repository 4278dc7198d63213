package harness_test

import (
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
)

// The real hashicorp/raft, a node per container: its leader killed, then
// cut off, and each time another node leads in a newer term, the old one
// stepping down within the promised bound.
func TestHashicorpRaftElects(t *testing.T) {
	cfg := testConfig(t)
	cfg.Target = "hashicorp-raft"
	cfg.Nemesis = []string{"kill-leader", "partition-leader"}
	// One of each, at 4 s and 8 s, each healed 2 s later: a follower
	// campaigns 0.5-1 s after its leader went quiet.
	cfg.TimeLimit = 11 * time.Second
	cfg.NemesisInterval = 4 * time.Second
	out := runReal(t, cfg, "", map[string]string{"n1": "hashicorp/raft v1.8.0"})
	if out.Report.Valid != checkers.Valid {
		t.Errorf("verdict %v: %+v", out.Report.Valid, out.Report.Checkers)
	}
	if l := leaderships(readHistory(t, out.Dir)); len(l) < 3 {
		t.Errorf("leaderships %v: want a first leader and one after each fault", l)
	}
}
