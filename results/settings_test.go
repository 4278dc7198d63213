package results

import (
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
)

// The command that repeats a run names its target, faults, limits, resource
// and seed always, and any other setting only where it is not the default.
func TestSettingsCommand(t *testing.T) {
	s := DefaultSettings()
	s.Seed = 7
	base := "splitbrain run --target=raft --nodes=5 --nemesis=partition,pause,kill,clock --time-limit=1m0s --quiet-period=10s --recovery-timeout=30s --resource=strict --seed=7"
	if got := s.Command(); got != base {
		t.Fatalf("defaults:\n got %s\nwant %s", got, base)
	}
	s.TargetDir, s.Promise, s.NemesisInterval = "/my/target", "exclusive", 5*time.Second
	s.Rate, s.ObserveInterval, s.CheckTimeout = 20, 10*time.Millisecond, time.Minute+time.Second
	s.StopOnViolation, s.StopOn = true, []string{checkers.LeaderOverlapName}
	want := `splitbrain run --target-dir=/my/target --promise="exclusive" --nodes=5 --nemesis=partition,pause,kill,clock --nemesis-interval=5s --time-limit=1m0s --quiet-period=10s --recovery-timeout=30s --resource=strict --seed=7 --rate=20 --observe-interval=10ms --check-timeout=1m1s --stop-on-violation --stop-on=leader-overlap`
	if got := s.Command(); got != want {
		t.Fatalf("changed:\n got %s\nwant %s", got, want)
	}
}
