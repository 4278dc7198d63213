package harness

import (
	"strings"
	"testing"
)

// Service faults need a target with services; the run says so before
// anything starts, and takes them for a target that has some.
func TestPrepareServiceFaults(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RepoRoot, cfg.TargetsRoot, cfg.ResultsDir = "..", "../targets", t.TempDir()
	cfg.Nemesis = []string{"kill", "service"}
	_, err := prepare(cfg)
	if !IsBadInput(err) || !strings.Contains(err.Error(), "raft has no service containers") {
		t.Fatalf("raft with service faults: %v", err)
	}
	cfg.Target = "lease"
	r, err := prepare(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(r.faults); got != 5 {
		t.Errorf("%d faults, want kill's 2 and service's 3", got)
	}
	if img := r.serviceImage(r.manifest.Services[0]); img != "splitbrain/lease/store:latest" {
		t.Errorf("service image %s", img)
	}
}
