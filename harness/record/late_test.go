package record

import (
	"testing"

	"github.com/splitbrain/splitbrain/checkers"
)

// A slow heal is late unless it is a kill's, a service's kill among them,
// which starts processes again.
func TestLateFaults(t *testing.T) {
	notes := lateFaults([]checkers.FaultEffect{
		{Fault: "kill-leader", At: 1e9, InjectMS: 10, HealMS: 4000},
		{Fault: "kill-service", At: 2e9, InjectMS: 10, HealMS: 4000},
		{Fault: "pause-service", At: 3e9, InjectMS: 10, HealMS: 4000},
		{Fault: "partition-ring", At: 4e9, InjectMS: 2500, HealMS: 10},
	})
	want := "2 of 4 faults took effect or were healed late, more than 1s after they were begun, so they hit the cluster later than planned: " +
		"pause-service at 3.0 s (healed after 4.0 s); partition-ring at 4.0 s (in effect after 2.5 s)"
	if len(notes) != 1 || notes[0] != want {
		t.Errorf("notes %q,\nwant %q", notes, want)
	}
}
