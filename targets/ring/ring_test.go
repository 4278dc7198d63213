package ring

import (
	"fmt"
	"strings"
	"testing"

	"github.com/splitbrain/splitbrain/targets/election"
	"github.com/splitbrain/splitbrain/targets/election/simnet"
)

// algorithm is ring as simnet's tests of epoch algorithms see it.
var algorithm = simnet.Epochs[Message, *Node]{
	New: func(id string, peers []string, s election.Store) (*Node, error) {
		return New(Config{ID: id, Peers: peers, Storage: s})
	},
	Belief: func(n *Node) simnet.Belief {
		st := n.Status()
		return simnet.Belief{Leader: st.IsLeader(), Lead: st.Leader, Token: st.Epoch}
	},
	Route: func(m Message) (string, string) { return m.From, m.To },
}

// show renders messages compactly: from>to:type[candidate]/epoch#seq.
func show(msgs []Message) string {
	var parts []string
	for _, m := range msgs {
		parts = append(parts, fmt.Sprintf("%s>%s:%s[%s]/%d#%d", m.From, m.To, m.Type, m.Candidate, m.Epoch, m.Seq))
	}
	return strings.Join(parts, " ")
}

func TestHighestNodeWins(t *testing.T) { algorithm.HighestNodeWins(t) }

// Chang-Roberts step by step on the ring n1 -> n2 -> n3 -> n1.
func TestElectionStepByStep(t *testing.T) {
	n2 := algorithm.Start(t, "n2", "n1", "n3")
	// A lower candidacy is replaced by ours; acknowledged either way.
	got := show(simnet.MustStep(t, n2, Message{Type: MsgElection, From: "n1", To: "n2", Seq: 7, Candidate: "n1", Epoch: 4}))
	if got != "n2>n1:ack[]/0#7 n2>n3:election[n2]/4#1" {
		t.Fatalf("lower candidate: %s", got)
	}
	// Taking part already, a second lower candidacy is swallowed.
	if got := show(simnet.MustStep(t, n2, Message{Type: MsgElection, From: "n1", To: "n2", Seq: 8, Candidate: "n1"})); got != "n2>n1:ack[]/0#8" {
		t.Fatalf("second lower candidate: %s", got)
	}
	// A higher one is passed on, with the highest epoch we know.
	if got := show(simnet.MustStep(t, n2, Message{Type: MsgElection, From: "n1", To: "n2", Seq: 9, Candidate: "n3", Epoch: 2})); got != "n2>n1:ack[]/0#9 n2>n3:election[n3]/4#2" {
		t.Fatalf("higher candidate: %s", got)
	}
	// Our own candidacy came around: we won, with our next epoch above 4
	// (ranks n1..n3 are 0..2: n2 owns 1, 4, 7...).
	got = show(simnet.MustStep(t, n2, Message{Type: MsgElection, From: "n1", To: "n2", Seq: 10, Candidate: "n2", Epoch: 5}))
	if got != "n2>n1:ack[]/0#10 n2>n3:elected[n2]/7#3" {
		t.Fatalf("own candidacy back: %s", got)
	}
	if st := n2.Status(); st != (Status{ID: "n2", State: Leader, Leader: "n2", Epoch: 7}) {
		t.Fatalf("status %+v", st)
	}
	// The leader's heartbeat goes to every node directly.
	if got := show(n2.Tick()); !strings.Contains(got, "n2>n1:heartbeat[]/7#0 n2>n3:heartbeat[]/7#0") {
		t.Fatalf("heartbeat: %s", got)
	}

	// A follower takes the announcement and passes it on.
	n3 := algorithm.Start(t, "n3", "n1", "n2")
	if got := show(simnet.MustStep(t, n3, Message{Type: MsgElected, From: "n2", To: "n3", Seq: 3, Candidate: "n2", Epoch: 7})); got != "n3>n2:ack[]/0#3 n3>n1:elected[n2]/7#1" {
		t.Fatalf("elected: %s", got)
	}
	if st := n3.Status(); st != (Status{ID: "n3", State: Follower, Leader: "n2", Epoch: 7}) {
		t.Fatalf("status %+v", st)
	}
}

// A ring message nobody acknowledges skips to the next node; when the ring
// comes back to its sender, that node is alone and elects itself.
func TestSkipsSilentNodes(t *testing.T) {
	n1 := algorithm.Start(t, "n1", "n2", "n3")
	var msgs []Message
	for range 10 {
		msgs = n1.Tick()
	}
	if got := show(msgs); got != "n1>n2:election[n1]/0#1" {
		t.Fatalf("election: %s", got)
	}
	n1.Tick()
	if got := show(n1.Tick()); got != "n1>n3:election[n1]/0#2" {
		t.Fatalf("after n2's silence: %s", got)
	}
	// An acknowledged message is not resent.
	simnet.MustStep(t, n1, Message{Type: MsgAck, From: "n3", To: "n1", Seq: 2})
	if got := show(append(n1.Tick(), n1.Tick()...)); got != "" {
		t.Fatalf("resent: %s", got)
	}
	// Nobody answers at all: n1 is a ring of one.
	n1 = algorithm.Start(t, "n1", "n2", "n3")
	for range 14 {
		n1.Tick()
	}
	if st := n1.Status(); !st.IsLeader() || st.Epoch != 3 {
		t.Fatalf("alone: %+v", st)
	}
}

// Of two leaders, the one with the higher epoch prevails; stale
// announcements and heartbeats are ignored.
func TestHigherEpochPrevails(t *testing.T) {
	n1 := algorithm.Start(t, "n1", "n2", "n3")
	simnet.MustStep(t, n1, Message{Type: MsgHeartbeat, From: "n3", To: "n1", Epoch: 5})
	if st := n1.Status(); st.Leader != "n3" || st.Epoch != 5 {
		t.Fatalf("status %+v", st)
	}
	simnet.MustStep(t, n1, Message{Type: MsgHeartbeat, From: "n2", To: "n1", Epoch: 4})
	if got := show(simnet.MustStep(t, n1, Message{Type: MsgElected, From: "n3", To: "n1", Seq: 1, Candidate: "n2", Epoch: 4})); got != "n1>n3:ack[]/0#1" {
		t.Fatalf("stale announcement passed on: %s", got)
	}
	if st := n1.Status(); st.Leader != "n3" {
		t.Fatalf("followed a stale leader: %+v", st)
	}
	simnet.MustStep(t, n1, Message{Type: MsgHeartbeat, From: "n2", To: "n1", Epoch: 7})
	if st := n1.Status(); st.Leader != "n2" || st.Epoch != 7 {
		t.Fatalf("did not follow the newer leader: %+v", st)
	}
}

func TestIgnoresForeignMessages(t *testing.T) {
	n2 := algorithm.Start(t, "n2", "n1", "n3")
	simnet.Ignores(t, n2, n2.Status, Status{ID: "n2", State: Follower},
		Message{Type: MsgHeartbeat, From: "n9", To: "n2", Epoch: 50}, // unknown sender
		Message{Type: MsgHeartbeat, From: "n3", To: "n1", Epoch: 50}, // not for us
		Message{Type: "hello", From: "n3", To: "n2", Epoch: 50},      // unknown type
	)
}

func TestNoLeadershipWithoutDurableEpoch(t *testing.T) {
	n, err := New(Config{ID: "n1", Storage: simnet.FullDisk{}})
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		if n.Tick(); n.Status().IsLeader() {
			t.Fatalf("led without a saved epoch: %+v", n.Status())
		}
	}
	n2, _ := New(Config{ID: "n2", Peers: []string{"n1"}, Storage: simnet.FullDisk{}})
	for range 10 { // n2 misses a leader and puts its candidacy on the ring
		n2.Tick()
	}
	if _, err := n2.Step(Message{Type: MsgElection, From: "n1", To: "n2", Candidate: "n2"}); err == nil || n2.Status().IsLeader() {
		t.Fatalf("step: %v %+v", err, n2.Status())
	}
}

func TestFailoverAndRestart(t *testing.T) {
	c := algorithm.FailOver(t)
	// Chang-Roberts elects only when a leader is missed: n5 comes back as
	// a follower of n4, and keeps its saved epoch for its next win.
	c.Restart("n5")
	c.Ticks(5)
	if l := c.Stable(); l != "n4" {
		t.Fatalf("after n5 restarted: %s", c.Beliefs())
	}
	c.Crash("n4")
	if l := c.Settle(100); l != "n5" {
		t.Fatalf("after n4 crashed: %s", c.Beliefs())
	}
}

// Ring promises no exclusive leadership: both sides of a partition elect,
// each with an epoch of its own. After the heal the higher epoch prevails.
func TestPartitionedSidesBothLead(t *testing.T) {
	c := algorithm.BothSidesLead(t, []string{"n1", "n2"}, []string{"n2", "n5"})
	e2 := c.Belief("n2").Token
	c.Heal()
	if l := c.Settle(100); l != "n2" || c.Belief("n2").Token != e2 {
		t.Fatalf("after the heal: %s", c.Beliefs())
	}
}

// TestSafetyRandom runs seeded clusters through loss, delay, reordering,
// partitions and crash-restarts; the network checks tokens after every
// event. Once the faults stop, one leader must lead everyone.
func TestSafetyRandom(t *testing.T) {
	algorithm.Storms(t, func(c *simnet.Network[Message], _ uint64) { c.Settle(200) })
}

func TestConfigValidate(t *testing.T) {
	ok := Config{ID: "n1", Peers: []string{"n2"}, Storage: &election.MemoryStore{}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Peers = []string{"n2", "n2"} }, "duplicate peer"},
		{func(c *Config) { c.AckTicks = -1 }, "at least 1"},
		{func(c *Config) { c.ElectionTicks, c.HeartbeatTicks = 2, 3 }, "less than"},
		{func(c *Config) { c.Storage = nil }, "nil Storage"},
	} {
		c := ok
		tc.mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
		if _, err := New(c); err == nil {
			t.Errorf("New accepted %+v", c)
		}
	}
}

// A ring message whose ack is late is sent on to the next node as well,
// so copies of ELECTIONs and ELECTEDs go around a slow network. A copy of
// an election that has ended must not win or travel again: each such win
// is a new epoch sent around the ring, to be copied in turn. Step by step:
// the copy of an election already won is acknowledged and nothing more,
// and a late ELECTION of an ended election is not resent.
func TestCopiesOfEndedElections(t *testing.T) {
	n2 := algorithm.Start(t, "n2", "n1", "n3")
	for range 10 {
		n2.Tick()
	}
	simnet.MustStep(t, n2, Message{Type: MsgElection, From: "n1", To: "n2", Seq: 1, Candidate: "n2"})
	if !n2.Status().IsLeader() {
		t.Fatalf("n2 did not win: %+v", n2.Status())
	}
	won := n2.Status()
	if got := show(simnet.MustStep(t, n2, Message{Type: MsgElection, From: "n1", To: "n2", Seq: 2, Candidate: "n2"})); got != "n2>n1:ack[]/0#2" || n2.Status() != won {
		t.Fatalf("a copy of the won election: %s, %+v", got, n2.Status())
	}

	n1 := algorithm.Start(t, "n1", "n2", "n3")
	simnet.MustStep(t, n1, Message{Type: MsgElection, From: "n3", To: "n1", Seq: 1, Candidate: "n3", Epoch: 2})
	simnet.MustStep(t, n1, Message{Type: MsgElected, From: "n3", To: "n1", Seq: 2, Candidate: "n3", Epoch: 5})
	// Neither is acknowledged: after AckTicks only the ELECTED, still
	// current, goes on to the node after n2.
	n1.Tick()
	if got := show(n1.Tick()); got != "n1>n3:elected[n3]/5#3" {
		t.Fatalf("late messages resent: %s", got)
	}
}
