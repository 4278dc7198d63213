package harness_test

import (
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
)

// client-go's leader election against a real kube-apiserver on etcd: the
// leading elector killed, then frozen past the lease, and each time
// another takes the Lease with more transitions behind it, its token
// above the last; the strict resource fences the frozen one's writes.
func TestK8sLeaseOnRealAPIServer(t *testing.T) {
	cfg := testConfig(t)
	cfg.Target = "k8s-lease"
	cfg.Nemesis = []string{"kill-leader", "pause-leader"}
	// Paced by the cluster: each fault healed once another elector took
	// the Lease (3-4 s: the lease, from when each saw it last change), so
	// a killed leader cannot restart in time to take its own Lease back.
	cfg.TimeLimit = 16 * time.Second
	cfg.NemesisInterval = 0
	out := runReal(t, cfg, "kube-apiserver", map[string]string{"apiserver": "Version: v1.37.2", "n1": "client-go leader election on Lease default/splitbrain"})
	if out.Report.Valid != checkers.Valid {
		t.Errorf("verdict %v: %+v", out.Report.Valid, out.Report.Checkers)
	}
	if l := leaderships(readHistory(t, out.Dir)); len(l) < 3 {
		t.Errorf("leaderships %v: want a first leader and one after each fault", l)
	}
}
