package checkers

import (
	"testing"

	"github.com/splitbrain/splitbrain/history"
)

func TestFaults(t *testing.T) {
	var b hist
	b.lead(100, "n1", 1)
	b.add(history.Event{Type: history.Nemesis, F: "kill-leader", Phase: history.Inject, Nodes: []string{"n1"}, Sent: ms(1000), Time: ms(1120)})
	b.silent(1300, "n1")
	b.lead(1400, "n2", 1) // not a new leadership: a lower or equal token is no failover
	b.lead(2500, "n3", 2)
	b.add(history.Event{Type: history.Nemesis, F: "kill-leader", Phase: history.Heal, Nodes: []string{"n1"}, Sent: ms(3000), Time: ms(3200)})
	b.add(history.Event{Type: history.Nemesis, F: "clock-bump", Phase: history.Inject, Nodes: []string{"n2"}, Sent: ms(5000), Time: ms(5001)})
	b.lead(5100, "n3", 2)

	fs := Faults(b.events())
	if len(fs) != 2 {
		t.Fatalf("%d faults, want 2: %+v", len(fs), fs)
	}
	k := fs[0]
	if k.InjectMS != 120 || k.HealMS != 200 || k.Before != "n1" || k.After != "n3" || k.FailoverS != 1.5 {
		t.Errorf("kill: %+v", k)
	}
	c := fs[1]
	if c.Before != "n3" || c.After != "" || c.FailoverS != 0 || c.HealMS != -1 {
		t.Errorf("clock bump without a leader change or heal: %+v", c)
	}
}
