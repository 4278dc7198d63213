package harness_test

import (
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/harness/harnesstest"
	"github.com/splitbrain/splitbrain/harness/record"
)

// A target's own register, end to end: the workload writes and reads it
// through every node, reads every key on every node at the end, and
// durability finds the writes a store acknowledged and then lost, and
// only those.
func TestOwnDataLostWritesAreNamed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dir  string
		lost bool
	}{
		{"testdata/own-store", false},
		{"testdata/own-store-forgetful", true},
	} {
		cfg := testConfig(t)
		cfg.TargetDir = tc.dir
		cfg.Nemesis = []string{"none"}
		cfg.NemesisInterval = 0
		cfg.TimeLimit = 5 * time.Second
		out, err := record.Run(harnesstest.Context(t), cfg)
		if err != nil {
			t.Fatal(err)
		}
		harnesstest.NothingLeft(t, out.Info.ID)
		d, ok := out.Report.Checkers[checkers.DurabilityName]
		if !ok {
			t.Fatalf("%s: no durability verdict in %v", tc.dir, out.Report.Invalid())
		}
		f := d.Figures
		// Every key read on each of the three nodes at the end.
		if f["writes_ok"] == 0 || f["final_reads"] < float64(3*cfg.Keys) {
			t.Errorf("%s: figures %v: want acknowledged writes and a final read of every key on every node", tc.dir, f)
		}
		switch {
		case !tc.lost && (d.Valid != checkers.Valid || out.Report.Valid != checkers.Valid):
			t.Errorf("%s: durability %s (%s), run %s: want valid", tc.dir, d.Valid, d.Note, out.Report.Valid)
		case tc.lost && (d.Valid != checkers.Invalid || f["lost"] == 0 || d.Violations[0].Kind != "lost-write"):
			t.Errorf("%s: durability %s, figures %v: want lost writes", tc.dir, d.Valid, f)
		case tc.lost && out.Report.Checkers[checkers.ElectionSafetyName].Valid != checkers.Valid:
			t.Errorf("%s: election-safety %s: the loss is the store's, not the election's", tc.dir, out.Report.Checkers[checkers.ElectionSafetyName].Valid)
		}
	}
}
