package harness

import (
	"strings"
	"testing"

	"github.com/splitbrain/splitbrain/nemesis"
	"github.com/splitbrain/splitbrain/nemesis/netfilter"
)

// A packet fault whose mechanism the kernel lacks is bad input naming the
// fault and the mechanism; otherwise the note says what each fault uses
// and whether the kernel has netem.
func TestPacketNote(t *testing.T) {
	faults, err := nemesis.Expand([]string{"packet"})
	if err != nil {
		t.Fatal(err)
	}
	note, err := packetNote(netfilter.Probed{}, faults[0])
	if err != nil || !strings.Contains(note, "no netem") || !strings.Contains(note, "packet-delay by "+string(nemesis.MechQueue)) {
		t.Errorf("every mechanism: %q, %v", note, err)
	}
	if note, _ := packetNote(netfilter.Probed{Netem: true}, faults[0]); !strings.Contains(note, "has netem") {
		t.Errorf("with netem: %q", note)
	}
	_, err = packetNote(netfilter.Probed{Delay: "queue 7979: bind: no such file or directory"}, faults[0])
	if !IsBadInput(err) || !strings.Contains(err.Error(), "--nemesis packet-delay: this kernel lacks "+string(nemesis.MechQueue)) {
		t.Errorf("no NFQUEUE: %v", err)
	}
	loss, _ := nemesis.Expand([]string{"packet-loss"})
	if _, err := packetNote(netfilter.Probed{Delay: "missing"}, loss[0]); err != nil {
		t.Errorf("a loss refused for want of a queue: %v", err)
	}
}
