package raft

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/splitbrain/splitbrain/targets/election/simnet"
)

// network is a cluster of nodes a, b, c... on simnet's deterministic
// in-memory network, which checks election safety after every Tick and
// Step (a term is a token: one leader per term). The network also checks
// that every node's term and vote are the persisted ones, and that no node
// ever voted twice in a term; a network of flawed nodes only records the
// terms that had two leaders (simnet's Broken), for the flaw tests to
// assert.
type network struct {
	*simnet.Network[Message]
	t      *testing.T
	cfgs   map[string]Config
	stores map[string]*MemoryStorage
	voted  map[string]HardState // per node, the last persisted vote (across restarts)
	boots  uint64               // starts, to give restarted nodes fresh randomness
	seed   uint64
}

func newNetwork(t *testing.T, size int, seed uint64, mod func(*Config)) *network {
	t.Helper()
	nw := &network{t: t, cfgs: map[string]Config{}, stores: map[string]*MemoryStorage{}, voted: map[string]HardState{}, seed: seed}
	var ids []string
	for i := range size {
		ids = append(ids, string(rune('a'+i)))
	}
	for i, id := range ids {
		nw.stores[id] = &MemoryStorage{}
		c := Config{ID: id, Peers: slices.Delete(slices.Clone(ids), i, i+1), Storage: nw.stores[id]}
		if mod != nil {
			mod(&c)
		}
		nw.cfgs[id] = c
	}
	nw.Network = simnet.New(t, ids, nw.start, func(m Message) (string, string) { return m.From, m.To })
	nw.Belief = func(id string) simnet.Belief {
		st := nw.node(id).Status()
		return simnet.Belief{Leader: st.IsLeader(), Lead: st.Lead, Token: st.Term}
	}
	nw.Unsafe = nw.cfgs[ids[0]].Flaw != NoFlaw
	if !nw.Unsafe {
		nw.AfterEach = nw.checkVotes
	}
	return nw
}

// start creates (or re-creates, as after a crash) node id from its storage.
func (nw *network) start(id string) simnet.Machine[Message] {
	nw.t.Helper()
	c := nw.cfgs[id]
	nw.boots++
	c.Rand = rand.New(rand.NewPCG(nw.seed, nw.boots))
	n, err := New(c)
	if err != nil {
		nw.t.Fatalf("New(%s): %v", id, err)
	}
	return n
}

func (nw *network) node(id string) *Node { return nw.Node(id).(*Node) }

func (nw *network) checkVotes() {
	nw.t.Helper()
	for _, id := range nw.IDs() {
		st := nw.node(id).Status()
		if st.IsLeader() && st.Lead != id {
			nw.t.Fatalf("leader %s has Lead %q", id, st.Lead)
		}
		hs, _ := nw.stores[id].Load()
		if st.Term != hs.Term || nw.node(id).vote != hs.Vote {
			nw.t.Fatalf("%s: in memory term %d vote %q, persisted %+v", id, st.Term, nw.node(id).vote, hs)
		}
		if prev := nw.voted[id]; prev.Term == hs.Term && prev.Vote != "" && prev.Vote != hs.Vote {
			nw.t.Fatalf("%s voted twice in term %d: %q and %q", id, hs.Term, prev.Vote, hs.Vote)
		}
		if hs.Term < nw.voted[id].Term {
			nw.t.Fatalf("%s: persisted term went back from %d to %d", id, nw.voted[id].Term, hs.Term)
		}
		if hs.Vote != "" || hs.Term > nw.voted[id].Term {
			nw.voted[id] = hs
		}
	}
}

// waitLeader ticks until exactly one node leads and every live node follows
// it in its term, and returns it and the ticks it took.
func (nw *network) waitLeader(max int) (string, int) {
	nw.t.Helper()
	took := nw.Until(max, func() bool { return nw.Stable() != "" }, "one stable leader")
	return nw.Stable(), took
}

func mustNew(t *testing.T, c Config) *Node {
	t.Helper()
	if c.Storage == nil {
		c.Storage = &MemoryStorage{}
	}
	if c.Rand == nil {
		c.Rand = rand.New(rand.NewPCG(1, 2))
	}
	n, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// tickUntil ticks n until it reaches state (at most 2*ElectionTicks, the
// longest timeout) and returns the messages of that tick.
func tickUntil(t *testing.T, n *Node, state State) []Message {
	t.Helper()
	for range 2 * n.electionTicks {
		msgs := n.Tick()
		if n.Status().State == state {
			return msgs
		}
	}
	t.Fatalf("not %v after 2*ElectionTicks: %+v", state, n.Status())
	return nil
}

// one asserts msgs is a single message of the given type, term and verdict.
func one(t *testing.T, msgs []Message, typ MsgType, term uint64, reject bool) {
	t.Helper()
	if len(msgs) != 1 || msgs[0].Type != typ || msgs[0].Term != term || msgs[0].Reject != reject {
		t.Fatalf("got %+v, want one %v term %d reject=%v", msgs, typ, term, reject)
	}
}

func TestSingleNodeElectsItself(t *testing.T) {
	for _, pre := range []bool{false, true} {
		t.Run(fmt.Sprintf("prevote=%v", pre), func(t *testing.T) {
			st := &MemoryStorage{}
			n := mustNew(t, Config{ID: "a", Storage: st, PreVote: pre})
			i := 1
			for ; i < 20 && !n.Status().IsLeader(); i++ {
				if msgs := n.Tick(); len(msgs) != 0 {
					t.Fatalf("single node sent %+v", msgs)
				}
			}
			if want := (Status{ID: "a", State: Leader, Term: 1, Lead: "a"}); n.Status() != want {
				t.Fatalf("after %d ticks status %+v, want %+v", i, n.Status(), want)
			}
			if hs, _ := st.Load(); hs != (HardState{Term: 1, Vote: "a"}) {
				t.Fatalf("persisted %+v", hs)
			}
			n.Tick() // a lone leader stays leader, even with check-quorum
			if !n.Status().IsLeader() {
				t.Fatal("lost leadership")
			}
		})
	}
}

func TestClusterElectsOneLeader(t *testing.T) {
	for _, size := range []int{3, 5} {
		for _, pre := range []bool{false, true} {
			for _, cq := range []bool{false, true} {
				t.Run(fmt.Sprintf("n=%d/prevote=%v/checkquorum=%v", size, pre, cq), func(t *testing.T) {
					seed := uint64(size*10) + uint64(len(t.Name()))
					nw := newNetwork(t, size, seed, func(c *Config) { c.PreVote, c.CheckQuorum = pre, cq })
					// The first timeout fires within 2*ElectionTicks; allow a
					// few split votes.
					l, took := nw.waitLeader(100)
					term := nw.node(l).Status().Term
					t.Logf("leader %s term %d after %d ticks", l, term, took)
					if hs, _ := nw.stores[l].Load(); hs != (HardState{Term: term, Vote: l}) {
						t.Fatalf("leader persisted %+v", hs)
					}
					// A healthy cluster keeps its leader, and its token.
					nw.Ticks(100)
					if got := nw.Stable(); got != l || nw.node(l).Status().Term != term {
						t.Fatalf("leadership changed: %s", nw.Beliefs())
					}
				})
			}
		}
	}
}

// failingStorage fails Save while fail is set.
type failingStorage struct {
	MemoryStorage
	fail bool
}

func (s *failingStorage) Save(hs HardState) error {
	if s.fail {
		return errors.New("disk full")
	}
	return s.MemoryStorage.Save(hs)
}

func TestVotePersistedBeforeGranted(t *testing.T) {
	st := &failingStorage{fail: true}
	n := mustNew(t, Config{ID: "b", Peers: []string{"a", "c"}, Storage: st})
	req := Message{Type: MsgVote, From: "a", To: "b", Term: 1}
	msgs, err := n.Step(req)
	if err == nil || len(msgs) != 0 {
		t.Fatalf("Save failed but got %+v, %v", msgs, err)
	}
	if hs, _ := st.Load(); n.Status().Term != 0 || hs != (HardState{}) {
		t.Fatalf("state changed despite failed Save: %+v %+v", n.Status(), hs)
	}

	st.fail = false
	one(t, simnet.MustStep(t, n, req), MsgVoteResp, 1, false)
	if hs, _ := st.Load(); hs != (HardState{Term: 1, Vote: "a"}) {
		t.Fatalf("persisted %+v", hs)
	}

	// After a restart the node remembers its vote.
	n = mustNew(t, Config{ID: "b", Peers: []string{"a", "c"}, Storage: st})
	if n.Status().Term != 1 {
		t.Fatalf("restarted at %+v", n.Status())
	}
	one(t, simnet.MustStep(t, n, Message{Type: MsgVote, From: "c", To: "b", Term: 1}), MsgVoteResp, 1, true)
	one(t, simnet.MustStep(t, n, req), MsgVoteResp, 1, false) // asking again is fine
}

func TestCampaignNeedsDurableSelfVote(t *testing.T) {
	st := &failingStorage{fail: true}
	n := mustNew(t, Config{ID: "a", Peers: []string{"b", "c"}, Storage: st})
	for range 40 {
		if msgs := n.Tick(); len(msgs) != 0 {
			t.Fatalf("campaigned without a durable vote: %+v", msgs)
		}
	}
	if n.Status().State != Follower || n.Status().Term != 0 {
		t.Fatalf("status %+v", n.Status())
	}
	st.fail = false
	for range 20 {
		if msgs := n.Tick(); len(msgs) > 0 {
			if msgs[0].Type != MsgVote || msgs[0].Term != 1 {
				t.Fatalf("got %+v", msgs)
			}
			return
		}
	}
	t.Fatal("did not campaign once storage recovered")
}

func TestHigherTermStepsDown(t *testing.T) {
	nw := newNetwork(t, 3, 1, nil)
	l, _ := nw.waitLeader(100)
	n := nw.node(l)
	term := n.Status().Term
	other := nw.cfgs[l].Peers[0]

	// A vote request from a later term deposes the leader, which then votes.
	one(t, simnet.MustStep(t, n, Message{Type: MsgVote, From: other, To: l, Term: term + 2}), MsgVoteResp, term+2, false)
	if st := n.Status(); st != (Status{ID: l, State: Follower, Term: term + 2}) {
		t.Fatalf("status %+v", st)
	}
	if hs, _ := nw.stores[l].Load(); hs != (HardState{Term: term + 2, Vote: other}) {
		t.Fatalf("persisted %+v", hs)
	}

	// A heartbeat from a later term makes its sender the known leader.
	one(t, simnet.MustStep(t, n, Message{Type: MsgHeartbeat, From: other, To: l, Term: term + 5}), MsgHeartbeatResp, term+5, false)
	if st := n.Status(); st != (Status{ID: l, State: Follower, Term: term + 5, Lead: other}) {
		t.Fatalf("status %+v", st)
	}
}

func TestLeaderStepsDownOnRejectedHeartbeat(t *testing.T) {
	nw := newNetwork(t, 3, 2, nil)
	l, _ := nw.waitLeader(100)
	term := nw.node(l).Status().Term
	msgs := simnet.MustStep(t, nw.node(l), Message{Type: MsgHeartbeatResp, From: nw.cfgs[l].Peers[0], To: l, Term: term + 1, Reject: true})
	if st := nw.node(l).Status(); len(msgs) != 0 || st.State != Follower || st.Term != term+1 || st.Lead != "" {
		t.Fatalf("status %+v msgs %+v", st, msgs)
	}
}

func TestLowerTermAnsweredWithOurTerm(t *testing.T) {
	st := &MemoryStorage{}
	st.Save(HardState{Term: 5})
	n := mustNew(t, Config{ID: "b", Peers: []string{"a", "c"}, Storage: st})
	one(t, simnet.MustStep(t, n, Message{Type: MsgHeartbeat, From: "a", To: "b", Term: 3}), MsgHeartbeatResp, 5, true)
	one(t, simnet.MustStep(t, n, Message{Type: MsgVote, From: "a", To: "b", Term: 4}), MsgVoteResp, 5, true)
	one(t, simnet.MustStep(t, n, Message{Type: MsgPreVote, From: "a", To: "b", Term: 4}), MsgPreVoteResp, 5, true)
	for _, typ := range []MsgType{MsgVoteResp, MsgPreVoteResp, MsgHeartbeatResp} {
		if msgs := simnet.MustStep(t, n, Message{Type: typ, From: "a", To: "b", Term: 4}); len(msgs) != 0 {
			t.Fatalf("stale %v answered: %+v", typ, msgs)
		}
	}
	if s := n.Status(); s != (Status{ID: "b", Term: 5}) {
		t.Fatalf("status %+v", s)
	}
	// A stale leader learns the term from the rejection and steps down.
	nw := newNetwork(t, 3, 3, nil)
	l, _ := nw.waitLeader(100)
	f := nw.cfgs[l].Peers[0]
	term := nw.node(l).Status().Term
	simnet.MustStep(t, nw.node(f), Message{Type: MsgHeartbeat, From: nw.cfgs[l].Peers[1], To: f, Term: term + 1})
	nw.Tick() // l heartbeats f, f rejects with term+1
	if s := nw.node(l).Status(); s.IsLeader() || s.Term != term+1 {
		t.Fatalf("stale leader %+v", s)
	}
}

func TestIgnoresForeignMessages(t *testing.T) {
	n := mustNew(t, Config{ID: "b", Peers: []string{"a", "c"}})
	simnet.Ignores(t, n, func() uint64 { return n.Status().Term }, 0,
		Message{Type: MsgVote, From: "x", To: "b", Term: 9}, // unknown sender
		Message{Type: MsgVote, From: "a", To: "c", Term: 9}, // not for us
		Message{Type: 0, From: "a", To: "b", Term: 9},       // no type
	)
}

func TestPreVoteDoesNotChangeTerms(t *testing.T) {
	// A receiver grants without adopting the term or persisting anything.
	st := &MemoryStorage{}
	st.Save(HardState{Term: 2})
	b := mustNew(t, Config{ID: "b", Peers: []string{"a", "c"}, Storage: st, PreVote: true})
	one(t, simnet.MustStep(t, b, Message{Type: MsgPreVote, From: "a", To: "b", Term: 3}), MsgPreVoteResp, 3, false)
	if hs, _ := st.Load(); hs != (HardState{Term: 2}) || b.Status().Term != 2 {
		t.Fatalf("pre-vote changed term: %+v %+v", b.Status(), hs)
	}

	// A pre-candidate asks for term+1 but stays in its term until it wins.
	ast := &MemoryStorage{}
	ast.Save(HardState{Term: 2})
	a := mustNew(t, Config{ID: "a", Peers: []string{"b", "c"}, Storage: ast, PreVote: true})
	msgs := tickUntil(t, a, PreCandidate)
	if s := a.Status(); s.State != PreCandidate || s.Term != 2 || len(msgs) != 2 || msgs[0].Type != MsgPreVote || msgs[0].Term != 3 {
		t.Fatalf("status %+v msgs %+v", s, msgs)
	}
	// A rejection at our own term counts, but does not change the term.
	if out := simnet.MustStep(t, a, Message{Type: MsgPreVoteResp, From: "c", To: "a", Term: 2, Reject: true}); len(out) != 0 || a.Status().State != PreCandidate {
		t.Fatalf("after rejection %+v %+v", a.Status(), out)
	}
	// One grant makes a quorum of 3: now the real election starts.
	out := simnet.MustStep(t, a, Message{Type: MsgPreVoteResp, From: "b", To: "a", Term: 3})
	if s := a.Status(); s.State != Candidate || s.Term != 3 || len(out) != 2 || out[0].Type != MsgVote || out[0].Term != 3 {
		t.Fatalf("status %+v msgs %+v", s, out)
	}
	if hs, _ := ast.Load(); hs != (HardState{Term: 3, Vote: "a"}) {
		t.Fatalf("persisted %+v", hs)
	}
}

func TestPreVoteRejectedWithHigherTermAdoptsIt(t *testing.T) {
	a := mustNew(t, Config{ID: "a", Peers: []string{"b", "c"}, PreVote: true})
	tickUntil(t, a, PreCandidate)
	simnet.MustStep(t, a, Message{Type: MsgPreVoteResp, From: "b", To: "a", Term: 7, Reject: true})
	if s := a.Status(); s != (Status{ID: "a", State: Follower, Term: 7}) {
		t.Fatalf("status %+v", s)
	}
}

func TestPreVoteRejectedWhileLeaderAlive(t *testing.T) {
	b := mustNew(t, Config{ID: "b", Peers: []string{"a", "c"}, PreVote: true})
	simnet.MustStep(t, b, Message{Type: MsgHeartbeat, From: "a", To: "b", Term: 1})
	for range 9 { // still within ElectionTicks of the heartbeat
		b.Tick()
	}
	one(t, simnet.MustStep(t, b, Message{Type: MsgPreVote, From: "c", To: "b", Term: 2}), MsgPreVoteResp, 1, true)
	b.Tick() // ElectionTicks without a heartbeat: the lease is over
	one(t, simnet.MustStep(t, b, Message{Type: MsgPreVote, From: "c", To: "b", Term: 2}), MsgPreVoteResp, 2, false)
	if s := b.Status(); s.Term != 1 || s.Lead != "a" {
		t.Fatalf("status %+v", s)
	}
}

func TestCheckQuorumLeaseIgnoresVotes(t *testing.T) {
	b := mustNew(t, Config{ID: "b", Peers: []string{"a", "c"}, CheckQuorum: true})
	simnet.MustStep(t, b, Message{Type: MsgHeartbeat, From: "a", To: "b", Term: 1})
	vote := Message{Type: MsgVote, From: "c", To: "b", Term: 2}
	if msgs := simnet.MustStep(t, b, vote); len(msgs) != 0 || b.Status().Term != 1 {
		t.Fatalf("vote in lease: %+v %+v", msgs, b.Status())
	}
	for range 10 {
		b.Tick()
	}
	one(t, simnet.MustStep(t, b, vote), MsgVoteResp, 2, false)
}

func TestPreVotePartitionedNodeDoesNotDisrupt(t *testing.T) {
	for _, cq := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkquorum=%v", cq), func(t *testing.T) {
			nw := newNetwork(t, 3, 4, func(c *Config) { c.PreVote, c.CheckQuorum = true, cq })
			l, _ := nw.waitLeader(100)
			term := nw.node(l).Status().Term
			f := nw.cfgs[l].Peers[0]
			nw.Isolate(f)
			nw.Ticks(200)
			if s := nw.node(f).Status(); s.Term != term || s.IsLeader() {
				t.Fatalf("isolated node %+v, leader term %d", s, term)
			}
			nw.Heal()
			nw.Ticks(50)
			if nw.Stable() != l || nw.node(l).Status().Term != term {
				t.Fatalf("rejoin disrupted the leader: %s", nw.Beliefs())
			}
		})
	}
	// Without pre-vote the same rejoin deposes the leader: the isolated
	// node's term grew and is adopted by everyone.
	nw := newNetwork(t, 3, 4, nil)
	l, _ := nw.waitLeader(100)
	term := nw.node(l).Status().Term
	f := nw.cfgs[l].Peers[0]
	nw.Isolate(f)
	nw.Ticks(200)
	if nw.node(f).Status().Term <= term {
		t.Fatalf("isolated node without pre-vote kept term: %+v", nw.node(f).Status())
	}
	nw.Heal()
	nw.waitLeader(100)
	if nw.node(l).Status().Term <= term {
		t.Fatal("expected a disruption without pre-vote")
	}
}

func TestCheckQuorumIsolatedLeaderStepsDown(t *testing.T) {
	const et = 10
	nw := newNetwork(t, 3, 5, func(c *Config) { c.CheckQuorum = true })
	l, _ := nw.waitLeader(100)
	term := nw.node(l).Status().Term
	nw.Isolate(l)
	i := 1
	for ; nw.node(l).Status().IsLeader(); i++ {
		if i > 2*et {
			t.Fatalf("isolated leader still leads after %d ticks", i)
		}
		nw.Tick()
	}
	if s := nw.node(l).Status(); s != (Status{ID: l, State: Follower, Term: term}) {
		t.Fatalf("status %+v", s)
	}
	t.Logf("stepped down after %d ticks", i-1)
	// Meanwhile the majority elects a new leader in a later term.
	for range 100 {
		nw.Tick()
		if ls := nw.Leaders(); len(ls) == 1 && nw.node(ls[0]).Status().Term > term {
			return
		}
	}
	t.Fatalf("majority elected nobody: %s", nw.Beliefs())
}

func TestWithoutCheckQuorumIsolatedLeaderStays(t *testing.T) {
	nw := newNetwork(t, 3, 5, nil)
	l, _ := nw.waitLeader(100)
	nw.Isolate(l)
	nw.Ticks(200)
	if !nw.node(l).Status().IsLeader() {
		t.Fatalf("leader stepped down without check-quorum: %+v", nw.node(l).Status())
	}
}

func TestRestartedNodeRejoins(t *testing.T) {
	nw := newNetwork(t, 3, 6, func(c *Config) { c.PreVote, c.CheckQuorum = true, true })
	l, _ := nw.waitLeader(100)
	nw.Crash(l)
	l2, _ := nw.waitLeader(100)
	if l2 == l {
		t.Fatal("crashed node still leader")
	}
	nw.Restart(l)
	nw.Ticks(5)
	if nw.Stable() != l2 {
		t.Fatalf("restarted node did not follow: %s", nw.Beliefs())
	}
}

// TestElectionSafetyRandom runs many seeded clusters through loss, delay,
// reordering, partitions and crash-restarts; the network checks after every
// event that no two nodes lead in one term and no node votes twice in a term.
// Once the faults stop, the cluster must settle on one leader.
func TestElectionSafetyRandom(t *testing.T) {
	simnet.Seeds(t, 2, func(seed uint64, rng *rand.Rand) int {
		et := 3 + rng.IntN(8)
		pre, cq := rng.IntN(2) == 0, rng.IntN(2) == 0
		nw := newNetwork(t, 1+rng.IntN(5), seed, func(c *Config) {
			c.ElectionTicks, c.PreVote, c.CheckQuorum = et, pre, cq
		})
		nw.Loss, nw.Delay = rng.Float64()*0.3, rng.Float64()*0.3
		nw.Storm(rng, 300)
		nw.Calm() // and then the cluster must settle
		nw.waitLeader(40 * et)
		return nw.Tokens()
	})
}

func TestConfigValidate(t *testing.T) {
	st := &MemoryStorage{}
	ok := Config{ID: "a", Peers: []string{"b", "c"}, Storage: st}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"empty ID", func(c *Config) { c.ID = "" }, "empty ID"},
		{"self in peers", func(c *Config) { c.Peers = []string{"b", "a"} }, "among Peers"},
		{"duplicate peer", func(c *Config) { c.Peers = []string{"b", "b"} }, "duplicate peer"},
		{"empty peer", func(c *Config) { c.Peers = []string{""} }, "empty peer"},
		{"election ticks", func(c *Config) { c.ElectionTicks = -1 }, "ElectionTicks must be at least 1"},
		{"heartbeat ticks", func(c *Config) { c.HeartbeatTicks = -1 }, "HeartbeatTicks must be at least 1"},
		{"heartbeat >= election", func(c *Config) { c.ElectionTicks, c.HeartbeatTicks = 5, 5 }, "must be less than"},
		{"default heartbeat >= election", func(c *Config) { c.ElectionTicks = 1 }, "must be less than"},
		{"nil storage", func(c *Config) { c.Storage = nil }, "nil Storage"},
	} {
		c := ok
		c.Peers = slices.Clone(ok.Peers)
		tc.mod(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
		if _, nerr := New(c); nerr == nil {
			t.Errorf("%s: New accepted it", tc.name)
		}
	}
}

func TestMessageJSON(t *testing.T) {
	m := Message{Type: MsgPreVoteResp, From: "a", To: "b", Term: 3, Reject: true}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"MsgPreVoteResp","from":"a","to":"b","term":3,"reject":true}`; string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
	var got Message
	if err := json.Unmarshal(b, &got); err != nil || got != m {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	if err := json.Unmarshal([]byte(`{"type":"MsgBogus"}`), &got); err == nil {
		t.Fatal("accepted unknown type")
	}
	if _, err := json.Marshal(Message{}); err == nil {
		t.Fatal("marshalled a message without type")
	}
	if Leader.String() != "Leader" || State(9).String() != "State(9)" || MsgHeartbeat.String() != "MsgHeartbeat" {
		t.Fatal("String")
	}
}

func TestFlawValidate(t *testing.T) {
	for _, f := range Flaws {
		if err := (Config{ID: "a", Storage: &MemoryStorage{}, Flaw: f}).Validate(); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	err := Config{ID: "a", Storage: &MemoryStorage{}, Flaw: "sloppy"}.Validate()
	if err == nil || !strings.Contains(err.Error(), "small-quorum") {
		t.Fatalf("unknown flaw: %v", err)
	}
}

// With the forgetful-vote flaw a restarted node has forgotten the vote it
// cast, and votes again in the same term.
func TestFlawForgetfulVoteVotesTwice(t *testing.T) {
	for _, flaw := range []Flaw{NoFlaw, ForgetfulVote} {
		st := &MemoryStorage{}
		c := Config{ID: "b", Peers: []string{"a", "c"}, Storage: st, Flaw: flaw}
		b := mustNew(t, c)
		one(t, simnet.MustStep(t, b, Message{Type: MsgVote, From: "a", To: "b", Term: 1}), MsgVoteResp, 1, false)
		b = mustNew(t, c) // a restart
		second := simnet.MustStep(t, b, Message{Type: MsgVote, From: "c", To: "b", Term: 1})
		hs, _ := st.Load()
		if flaw == NoFlaw {
			one(t, second, MsgVoteResp, 1, true)
			continue
		}
		one(t, second, MsgVoteResp, 1, false)
		if hs != (HardState{}) {
			t.Fatalf("forgetful node persisted %+v", hs)
		}
	}
}

// In a cluster: a node that missed an election campaigns in the term that
// election decided, and wins it with the vote of a node that restarted and
// forgot it had voted.
func TestFlawForgetfulVoteTwoLeadersInOneTerm(t *testing.T) {
	for _, flaw := range []Flaw{NoFlaw, ForgetfulVote} {
		t.Run(cmp.Or(string(flaw), "correct"), func(t *testing.T) {
			nw := newNetwork(t, 3, 1, func(c *Config) {
				c.PreVote, c.Flaw = true, flaw
				if c.ID == "b" {
					c.ElectionTicks = 50 // a times out first, and b votes for it
				}
			})
			nw.Isolate("c")
			for len(nw.Leaders()) == 0 {
				nw.Tick()
			}
			if st := nw.node("a").Status(); !st.IsLeader() || st.Term != 1 {
				t.Fatalf("a did not win term 1: %s", nw.Beliefs())
			}
			nw.Crash("b")
			nw.Restart("b")
			nw.Heal()
			nw.Isolate("a")
			nw.Ticks(100)
			if flaw == NoFlaw {
				if nw.Broken(1) {
					t.Fatal("correct Raft had two leaders in a term")
				}
				return
			}
			if nw.Owner(1) != "c" || !nw.Broken(1) {
				t.Fatalf("c did not lead term 1 too: %s", nw.Beliefs())
			}
		})
	}
}

// With the small-quorum flaw two candidates of one term both win, each with
// its own vote and one other: 2 of 5.
func TestFlawSmallQuorumTwoLeadersInOneTerm(t *testing.T) {
	ids := []string{"a", "b", "c", "d", "e"}
	for _, flaw := range []Flaw{NoFlaw, SmallQuorum} {
		nodes := map[string]*Node{}
		for i, id := range ids {
			nodes[id] = mustNew(t, Config{ID: id, Peers: slices.Delete(slices.Clone(ids), i, i+1), Flaw: flaw})
		}
		// a and b time out in the same term; c votes for a, d for b.
		for _, pair := range [][2]string{{"a", "c"}, {"b", "d"}} {
			cand, voter := nodes[pair[0]], nodes[pair[1]]
			for _, m := range tickUntil(t, cand, Candidate) {
				if m.To == pair[1] {
					for _, resp := range simnet.MustStep(t, voter, m) {
						simnet.MustStep(t, cand, resp)
					}
				}
			}
		}
		a, b := nodes["a"].Status(), nodes["b"].Status()
		if a.Term != 1 || b.Term != 1 {
			t.Fatalf("%s: terms %d and %d", flaw, a.Term, b.Term)
		}
		if both := a.IsLeader() && b.IsLeader(); both != (flaw == SmallQuorum) {
			t.Fatalf("%s: a %v, b %v", flaw, a.State, b.State)
		}
	}
}

// With the small-quorum flaw both sides of a partition elect, so two
// leaders overlap for as long as the partition lasts.
func TestFlawSmallQuorumBothSidesOfAPartitionLead(t *testing.T) {
	for _, flaw := range []Flaw{NoFlaw, SmallQuorum} {
		t.Run(cmp.Or(string(flaw), "correct"), func(t *testing.T) {
			nw := newNetwork(t, 5, 8, func(c *Config) { c.PreVote, c.CheckQuorum, c.Flaw = true, true, flaw })
			l, _ := nw.waitLeader(100)
			nw.Partition([]string{l, nw.cfgs[l].Peers[0]})
			nw.Ticks(100)
			if got, want := len(nw.Leaders()), map[Flaw]int{NoFlaw: 1, SmallQuorum: 2}[flaw]; got != want {
				t.Fatalf("%d leaders, want %d: %s", got, want, nw.Beliefs())
			}
		})
	}
}

// With the no-checkquorum flaw a leader cut off from everyone leads on,
// while the majority elects another.
func TestFlawNoCheckQuorumIsolatedLeaderLeadsOn(t *testing.T) {
	for _, flaw := range []Flaw{NoFlaw, NoCheckQuorum} {
		t.Run(cmp.Or(string(flaw), "correct"), func(t *testing.T) {
			nw := newNetwork(t, 3, 5, func(c *Config) { c.PreVote, c.CheckQuorum, c.Flaw = true, true, flaw })
			l, _ := nw.waitLeader(100)
			nw.Isolate(l)
			nw.Ticks(200)
			if still := nw.node(l).Status().IsLeader(); still != (flaw == NoCheckQuorum) {
				t.Fatalf("isolated leader still leads: %v", still)
			}
			if ls := nw.Leaders(); len(ls) == 0 || slices.Equal(ls, []string{l}) {
				t.Fatalf("the majority elected nobody: %s", nw.Beliefs())
			}
		})
	}
}
