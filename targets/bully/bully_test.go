package bully

import (
	"fmt"
	"strings"
	"testing"

	"github.com/splitbrain/splitbrain/targets/election"
	"github.com/splitbrain/splitbrain/targets/election/simnet"
)

// algorithm is bully as simnet's tests of epoch algorithms see it.
var algorithm = simnet.Epochs[Message, *Node]{
	New: func(id string, peers []string, s election.Store) (*Node, error) {
		return New(Config{ID: id, Peers: peers, Storage: s})
	},
	Belief: func(n *Node) simnet.Belief {
		st := n.Status()
		return simnet.Belief{Leader: st.IsLeader(), Lead: st.Coordinator, Token: st.Epoch}
	},
	Route: func(m Message) (string, string) { return m.From, m.To },
}

func types(msgs []Message) string {
	var parts []string
	for _, m := range msgs {
		parts = append(parts, fmt.Sprintf("%s>%s:%s/%d", m.From, m.To, m.Type, m.Epoch))
	}
	return strings.Join(parts, " ")
}

func TestHighestNodeWins(t *testing.T) { algorithm.HighestNodeWins(t) }

func TestElectionStepByStep(t *testing.T) {
	n2 := algorithm.Start(t, "n2", "n1", "n3", "n4")
	// A follower that misses its coordinator asks the higher nodes.
	var msgs []Message
	for range 10 {
		msgs = n2.Tick()
	}
	if got := types(msgs); got != "n2>n3:election/0 n2>n4:election/0" || n2.Status().State != Candidate {
		t.Fatalf("after the election timeout: %s, %+v", got, n2.Status())
	}
	// A higher node answers; n2 waits for its COORDINATOR.
	simnet.MustStep(t, n2, Message{Type: MsgAlive, From: "n4", To: "n2"})
	if st := n2.Status(); st.State != Follower || st.Coordinator != "" {
		t.Fatalf("after ALIVE: %+v", st)
	}
	simnet.MustStep(t, n2, Message{Type: MsgCoordinator, From: "n4", To: "n2", Epoch: 4})
	if st := n2.Status(); st != (Status{ID: "n2", State: Follower, Coordinator: "n4", Epoch: 4}) {
		t.Fatalf("after COORDINATOR: %+v", st)
	}

	// Asked by a lower node, n2 answers and holds its own election.
	got := types(simnet.MustStep(t, n2, Message{Type: MsgElection, From: "n1", To: "n2", Epoch: 4}))
	if got != "n2>n1:alive/4 n2>n3:election/4 n2>n4:election/4" {
		t.Fatalf("asked by n1: %s", got)
	}
	// Nobody higher answers within AnswerTicks: n2 takes the next epoch of
	// its own above 4 (ranks n1..n4 are 0..3, so epochs 5, 9, 13... are n2's).
	n2.Tick()
	msgs = n2.Tick()
	if st := n2.Status(); st != (Status{ID: "n2", State: Coordinator, Coordinator: "n2", Epoch: 5}) {
		t.Fatalf("after AnswerTicks: %+v", st)
	}
	if got := types(msgs); got != "n2>n1:coordinator/5 n2>n3:coordinator/5 n2>n4:coordinator/5" {
		t.Fatalf("announcement: %s", got)
	}
	// The coordinator's heartbeat is its announcement, repeated.
	if got := types(n2.Tick()); got != "n2>n1:coordinator/5 n2>n3:coordinator/5 n2>n4:coordinator/5" {
		t.Fatalf("heartbeat: %s", got)
	}
	// Asked again by a lower node that lost it, it just says so.
	if got := types(simnet.MustStep(t, n2, Message{Type: MsgElection, From: "n1", To: "n2", Epoch: 5})); got != "n2>n1:alive/5 n2>n1:coordinator/5" {
		t.Fatalf("coordinator asked: %s", got)
	}
}

func TestTopNodeTakesOverAtOnce(t *testing.T) {
	n3 := algorithm.Start(t, "n3", "n1", "n2")
	var msgs []Message
	for range 10 {
		msgs = n3.Tick()
	}
	// Ranks n1..n3 are 0..2: n3 owns the epochs 2, 5, 8...
	if got := types(msgs); got != "n3>n1:coordinator/2 n3>n2:coordinator/2" {
		t.Fatalf("got %s", got)
	}
}

func TestBulliesALowerCoordinator(t *testing.T) {
	n3 := algorithm.Start(t, "n3", "n1", "n2")
	// n3 hears n2 lead: it takes over, above n2's epoch.
	msgs := simnet.MustStep(t, n3, Message{Type: MsgCoordinator, From: "n2", To: "n3", Epoch: 7})
	if st := n3.Status(); !st.IsLeader() || st.Epoch != 8 {
		t.Fatalf("status %+v, msgs %s", st, types(msgs))
	}
	// The deposed coordinator follows the higher one.
	n2 := algorithm.Start(t, "n2", "n1", "n3")
	simnet.MustStep(t, n2, Message{Type: MsgCoordinator, From: "n1", To: "n2", Epoch: 7}) // n2 bullies n1...
	for range 2 {
		n2.Tick() // ...and, n3 silent, takes over
	}
	if !n2.Status().IsLeader() {
		t.Fatalf("n2 did not take over: %+v", n2.Status())
	}
	simnet.MustStep(t, n2, Message{Type: MsgCoordinator, From: "n3", To: "n2", Epoch: 11})
	if st := n2.Status(); st.IsLeader() || st.Coordinator != "n3" {
		t.Fatalf("n2 did not yield: %+v", st)
	}
}

// A higher node that leads with an epoch below one the follower knows would
// have its writes fenced: the follower makes it take a newer epoch.
func TestStaleCoordinatorTakesNewerEpoch(t *testing.T) {
	n2 := algorithm.Start(t, "n2", "n1", "n3")
	simnet.MustStep(t, n2, Message{Type: MsgCoordinator, From: "n3", To: "n2", Epoch: 9})
	got := types(simnet.MustStep(t, n2, Message{Type: MsgCoordinator, From: "n3", To: "n2", Epoch: 6}))
	if got != "n2>n3:election/9" {
		t.Fatalf("got %s", got)
	}
	n3 := algorithm.Start(t, "n3", "n1", "n2")
	for range 10 {
		n3.Tick() // leads with epoch 2
	}
	simnet.MustStep(t, n3, Message{Type: MsgElection, From: "n2", To: "n3", Epoch: 9})
	if st := n3.Status(); !st.IsLeader() || st.Epoch != 11 {
		t.Fatalf("n3 kept its stale epoch: %+v", st)
	}
}

func TestIgnoresForeignMessages(t *testing.T) {
	n2 := algorithm.Start(t, "n2", "n1", "n3")
	simnet.Ignores(t, n2, n2.Status, Status{ID: "n2", State: Follower},
		Message{Type: MsgCoordinator, From: "n9", To: "n2", Epoch: 50}, // unknown sender
		Message{Type: MsgCoordinator, From: "n3", To: "n1", Epoch: 50}, // not for us
		Message{Type: "hello", From: "n3", To: "n2", Epoch: 50},        // unknown type
		Message{Type: MsgElection, From: "n3", To: "n2", Epoch: 0},     // elections go up
	)
}

func TestNoLeadershipWithoutDurableEpoch(t *testing.T) {
	n, err := New(Config{ID: "n2", Peers: []string{"n1"}, Storage: simnet.FullDisk{}})
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		if msgs := n.Tick(); len(msgs) > 0 || n.Status().IsLeader() {
			t.Fatalf("led without a saved epoch: %s %+v", types(msgs), n.Status())
		}
	}
	if _, err := n.Step(Message{Type: MsgElection, From: "n1", To: "n2"}); err == nil || n.Status().IsLeader() {
		t.Fatalf("step: %v %+v", err, n.Status())
	}
}

func TestFailoverAndRestart(t *testing.T) {
	c := algorithm.FailOver(t)
	// n5 comes back knowing its last epoch, and bullies its way back in
	// with a newer one.
	e4 := c.Belief("n4").Token
	c.Restart("n5")
	if l := c.Settle(100); l != "n5" || c.Belief("n5").Token <= e4 {
		t.Fatalf("after n5 restarted: %s", c.Beliefs())
	}
}

// Bully promises no exclusive leadership: both sides of a partition elect,
// each with an epoch of its own. Healing leaves the highest node in charge
// with an epoch above both.
func TestPartitionedSidesBothLead(t *testing.T) {
	c := algorithm.BothSidesLead(t, []string{"n4", "n5"}, []string{"n3", "n5"})
	e3 := c.Belief("n3").Token
	c.Heal()
	if l := c.Settle(100); l != "n5" || c.Belief("n5").Token <= e3 {
		t.Fatalf("after the heal: %s", c.Beliefs())
	}
}

// TestSafetyRandom runs seeded clusters through loss, delay, reordering,
// partitions and crash-restarts; the network checks tokens after every
// event. Once the faults stop, the highest node must lead everyone.
func TestSafetyRandom(t *testing.T) {
	algorithm.Storms(t, func(c *simnet.Network[Message], seed uint64) {
		if l, all := c.Settle(100), c.IDs(); l != all[len(all)-1] {
			t.Fatalf("seed %d: %s leads, not the highest: %s", seed, l, c.Beliefs())
		}
	})
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
		{func(c *Config) { c.ID = "" }, "empty ID"},
		{func(c *Config) { c.Peers = []string{"n1"} }, "among Peers"},
		{func(c *Config) { c.AnswerTicks = -1 }, "at least 1"},
		{func(c *Config) { c.ElectionTicks, c.HeartbeatTicks = 2, 2 }, "less than"},
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
