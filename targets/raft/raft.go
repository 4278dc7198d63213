// Package raft is Raft leader election as a deterministic state machine, free of I/O and wall time.
//
// It implements only the election half of Raft (no log): terms, randomized
// election timeouts, one persisted vote per term, heartbeats, pre-vote and
// check-quorum, after the design of go.etcd.io/raft. The caller owns time and
// the network: call Node.Tick at a fixed interval, pass every received
// Message to Node.Step, and send the messages both return. A Node is not safe
// for concurrent use; serialize the calls.
//
// The term of a leader is its fencing token: at most one node is ever leader
// in a given term, and terms only grow.
//
// Choices worth knowing:
//   - A request (MsgPreVote, MsgVote, MsgHeartbeat) with a term lower than
//     ours is answered with a rejection carrying our term, so a deposed
//     leader or a stale candidate learns the new term and steps down. Stale
//     answers are dropped.
//   - Pre-votes never change anyone's term, except that a rejected pre-vote
//     answer carrying a higher term makes the pre-candidate adopt that term
//     (as etcd does): it is behind and cannot win anyway.
//   - A node grants a pre-vote only if it does not believe a leader is alive
//     (it is the leader, or it heard a heartbeat within ElectionTicks ticks).
//     This "lease" applies to pre-votes always, and to real votes only with
//     CheckQuorum, where a vote request from within a lease is ignored
//     without adopting its term.
//
// Config.Flaw builds the same code with one deliberate bug, for the flawed
// targets splitbrain must catch.
package raft

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
)

// Config configures a Node. Zero ElectionTicks and HeartbeatTicks mean the
// defaults.
type Config struct {
	ID             string
	Peers          []string // the OTHER nodes' IDs
	ElectionTicks  int      // base election timeout in ticks (default 10); the real timeout is random in [ElectionTicks, 2*ElectionTicks)
	HeartbeatTicks int      // default 1; must be less than ElectionTicks
	PreVote        bool
	CheckQuorum    bool
	Storage        Storage    // required
	Rand           *rand.Rand // source of the election timeouts, used only by this Node; nil means seeded from a hash of ID
	// Flaw is a deliberate bug, for splitbrain's flawed targets; the zero
	// value is correct Raft.
	Flaw Flaw
}

// Flaw is a deliberate bug. Each breaks one guarantee of Raft in one place
// of this code, so that splitbrain can show it catches exactly that bug in
// a build of the same code.
type Flaw string

// The flaws. Each names the fault that exposes it in targets/README.md.
const (
	NoFlaw Flaw = ""
	// ForgetfulVote keeps the hard state, the term and the vote cast in
	// it, in memory only: a node that restarts comes back at term 0 with no
	// vote, and can vote again in a term it has voted in.
	ForgetfulVote Flaw = "forgetful-vote"
	// SmallQuorum takes half the cluster, rounded down, for a majority (2
	// of 5): two candidates can both win one term, and both sides of a
	// partition can elect a leader.
	SmallQuorum Flaw = "small-quorum"
	// NoCheckQuorum never steps a leader down for want of a quorum, even
	// with CheckQuorum: a leader cut off from the majority leads on.
	NoCheckQuorum Flaw = "no-checkquorum"
)

// Flaws lists every flaw.
var Flaws = []Flaw{ForgetfulVote, SmallQuorum, NoCheckQuorum}

func (c Config) withDefaults() Config {
	if c.ElectionTicks == 0 {
		c.ElectionTicks = 10
	}
	if c.HeartbeatTicks == 0 {
		c.HeartbeatTicks = 1
	}
	return c
}

// Validate reports the first problem of the configuration as New would see it
// (that is, after defaults are applied).
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.ID == "":
		return errors.New("raft: empty ID")
	case c.ElectionTicks < 1:
		return fmt.Errorf("raft: ElectionTicks must be at least 1, got %d", c.ElectionTicks)
	case c.HeartbeatTicks < 1:
		return fmt.Errorf("raft: HeartbeatTicks must be at least 1, got %d", c.HeartbeatTicks)
	case c.HeartbeatTicks >= c.ElectionTicks:
		return fmt.Errorf("raft: HeartbeatTicks (%d) must be less than ElectionTicks (%d)", c.HeartbeatTicks, c.ElectionTicks)
	case c.Storage == nil:
		return errors.New("raft: nil Storage")
	case c.Flaw != NoFlaw && !slices.Contains(Flaws, c.Flaw):
		return fmt.Errorf("raft: unknown Flaw %q (known: %v)", c.Flaw, Flaws)
	}
	seen := make(map[string]bool, len(c.Peers))
	for _, p := range c.Peers {
		switch {
		case p == "":
			return errors.New("raft: empty peer ID")
		case p == c.ID:
			return fmt.Errorf("raft: ID %q is among Peers (Peers lists the other nodes)", p)
		case seen[p]:
			return fmt.Errorf("raft: duplicate peer %q", p)
		}
		seen[p] = true
	}
	return nil
}

// quorum is the number of nodes, out of a cluster of size, whose agreement
// decides an election: a strict majority, so two quorums always overlap.
// Keep this the only place that computes it.
func quorum(size int, f Flaw) int {
	if f == SmallQuorum {
		return size / 2 // two disjoint halves of an even count, or 2 of 5
	}
	return size/2 + 1
}

// Status is a snapshot of a node's view.
type Status struct {
	ID    string
	State State
	Term  uint64 // while State is Leader, this is the fencing token
	Lead  string // known leader of Term, or ""
}

// IsLeader reports whether the node is leader (of Status.Term).
func (s Status) IsLeader() bool { return s.State == Leader }

// Node is one participant of the election. Create it with New.
type Node struct {
	id             string
	peers          []string
	electionTicks  int
	heartbeatTicks int
	preVote        bool
	checkQuorum    bool
	storage        Storage
	rand           *rand.Rand
	flaw           Flaw

	state State
	term  uint64 // always equal to the persisted term
	vote  string // always equal to the persisted vote
	lead  string

	electionElapsed  int // ticks since the last reset; the leader's check-quorum window
	heartbeatElapsed int
	timeout          int // randomized election timeout of the current round

	votes  map[string]bool // answers in the current (pre-)campaign, true if granted
	active map[string]bool // peers that answered a heartbeat in this check-quorum window
}

// New applies defaults, validates c and starts a follower from the HardState
// in c.Storage.
func New(c Config) (*Node, error) {
	c = c.withDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	hs, err := c.Storage.Load()
	if err != nil {
		return nil, fmt.Errorf("raft: load hard state: %w", err)
	}
	r := c.Rand
	if r == nil {
		h := fnv.New64a()
		h.Write([]byte(c.ID))
		r = rand.New(rand.NewPCG(h.Sum64(), 0))
	}
	n := &Node{
		id:             c.ID,
		peers:          slices.Clone(c.Peers),
		electionTicks:  c.ElectionTicks,
		heartbeatTicks: c.HeartbeatTicks,
		preVote:        c.PreVote,
		checkQuorum:    c.CheckQuorum,
		storage:        c.Storage,
		rand:           r,
		flaw:           c.Flaw,
		term:           hs.Term,
		vote:           hs.Vote,
	}
	n.becomeFollower(hs.Term, "") // same term: cannot fail
	return n, nil
}

// Status returns the node's current view.
func (n *Node) Status() Status {
	return Status{ID: n.id, State: n.state, Term: n.term, Lead: n.lead}
}

func (n *Node) quorum() int { return quorum(len(n.peers)+1, n.flaw) }

// Tick advances the node's clock by one tick and returns the messages to send.
// A campaign whose Save fails is abandoned silently (Tick has no error) and
// retried at the next election timeout.
func (n *Node) Tick() []Message {
	n.electionElapsed++
	if n.state == Leader {
		return n.tickLeader()
	}
	if n.electionElapsed >= n.timeout {
		msgs, _ := n.campaign(n.preVote)
		return msgs
	}
	return nil
}

func (n *Node) tickLeader() []Message {
	if n.electionElapsed >= n.electionTicks {
		n.electionElapsed = 0
		// A leader that cannot reach a quorum may already have been replaced;
		// stepping down stops it from handing out a stale token forever.
		if n.checkQuorum && n.flaw != NoCheckQuorum && len(n.active)+1 < n.quorum() {
			n.becomeFollower(n.term, "")
			return nil
		}
		clear(n.active)
	}
	n.heartbeatElapsed++
	if n.heartbeatElapsed < n.heartbeatTicks {
		return nil
	}
	n.heartbeatElapsed = 0
	return n.broadcast(MsgHeartbeat, n.term)
}

// Step processes one received message and returns the messages to send. It
// fails only if Storage.Save fails; the node's state is then unchanged (in
// particular no vote was granted) and nothing must be sent. Messages not
// addressed to this node, from unknown nodes or of unknown type are ignored.
func (n *Node) Step(m Message) ([]Message, error) {
	if m.To != n.id || !m.Type.valid() || !slices.Contains(n.peers, m.From) {
		return nil, nil
	}
	switch {
	case m.Term > n.term:
		switch {
		case m.Type == MsgPreVote || (m.Type == MsgPreVoteResp && !m.Reject):
			// Pre-votes are hypothetical; adopting their term would make them
			// as disruptive as the real elections they are meant to avoid.
		case m.Type == MsgVote && n.checkQuorum && n.inLease():
			// We believe the leader is alive, so this candidate is most likely
			// a node coming back from a partition. Ignore it entirely; if it
			// really is ahead, the leader learns its term through a rejected
			// heartbeat and steps down.
			return nil, nil
		default:
			lead := ""
			if m.Type == MsgHeartbeat {
				lead = m.From
			}
			if err := n.becomeFollower(m.Term, lead); err != nil {
				return nil, err
			}
		}
	case m.Term < n.term:
		// Tell a stale requester our term so it catches up instead of
		// campaigning or leading in the past. Stale answers are useless.
		if rt, ok := respType(m.Type); ok {
			return []Message{n.reply(m, rt, n.term, true)}, nil
		}
		return nil, nil
	}

	// Here m.Term == n.term, or m is a pre-vote (answer) for n.term+1 or more.
	switch m.Type {
	case MsgPreVote:
		if n.inLease() {
			return []Message{n.reply(m, MsgPreVoteResp, n.term, true)}, nil
		}
		return []Message{n.reply(m, MsgPreVoteResp, m.Term, false)}, nil

	case MsgVote:
		// Like etcd, also refuse while we know a leader of this term even if
		// we never voted: that leader needs no competitor.
		if n.vote != m.From && (n.vote != "" || n.lead != "") {
			return []Message{n.reply(m, MsgVoteResp, n.term, true)}, nil
		}
		if n.vote != m.From {
			// The vote must be durable before anyone hears of it, or a
			// crash and restart could let us vote again in this term.
			if err := n.persist(n.term, m.From); err != nil {
				return nil, err
			}
		}
		// Having voted, give the candidate a full timeout to win (and stop
		// a pre-campaign of ours from competing with it).
		n.becomeFollower(n.term, "")
		return []Message{n.reply(m, MsgVoteResp, n.term, false)}, nil

	case MsgHeartbeat:
		if n.state == Leader {
			return nil, nil // two leaders in one term: impossible, ignore
		}
		n.becomeFollower(n.term, m.From)
		return []Message{n.reply(m, MsgHeartbeatResp, n.term, false)}, nil

	case MsgHeartbeatResp:
		if n.state == Leader && !m.Reject {
			n.active[m.From] = true
		}

	case MsgPreVoteResp:
		// Grants carry the term we campaign for, rejections the voter's term.
		want := n.term + 1
		if m.Reject {
			want = n.term
		}
		if n.state == PreCandidate && m.Term == want {
			return n.poll(m.From, !m.Reject)
		}

	case MsgVoteResp:
		if n.state == Candidate {
			return n.poll(m.From, !m.Reject)
		}
	}
	return nil, nil
}

// inLease reports whether we believe a leader is alive: we are it, or we
// heard from it within the (non-randomized) election timeout.
func (n *Node) inLease() bool {
	return n.state == Leader || (n.lead != "" && n.electionElapsed < n.electionTicks)
}

// persist saves the HardState and adopts it only once it is durable.
func (n *Node) persist(term uint64, vote string) error {
	if n.flaw != ForgetfulVote {
		if err := n.storage.Save(HardState{Term: term, Vote: vote}); err != nil {
			return fmt.Errorf("raft: save hard state: %w", err)
		}
	}
	n.term, n.vote = term, vote
	return nil
}

// becomeFollower moves to term (persisting it if new, which clears the vote)
// and restarts the election timer. It can fail only if term is new.
func (n *Node) becomeFollower(term uint64, lead string) error {
	if term != n.term {
		if err := n.persist(term, ""); err != nil {
			return err
		}
	}
	n.state = Follower
	n.lead = lead
	n.resetTimer()
	return nil
}

func (n *Node) resetTimer() {
	n.electionElapsed = 0
	// Random timeouts make split votes unlikely to repeat.
	n.timeout = n.electionTicks + n.rand.IntN(n.electionTicks)
}

// campaign starts a pre-vote round (pre) or a real election for term+1.
func (n *Node) campaign(pre bool) ([]Message, error) {
	n.resetTimer()
	typ := MsgPreVote
	if pre {
		n.state = PreCandidate
	} else {
		// Persist the new term and our self-vote before asking anyone.
		if err := n.persist(n.term+1, n.id); err != nil {
			return nil, err
		}
		n.state = Candidate
		typ = MsgVote
	}
	n.lead = ""
	n.votes = map[string]bool{n.id: true}
	if n.granted() >= n.quorum() { // a single node needs nobody else
		return n.won()
	}
	if pre {
		return n.broadcast(typ, n.term+1), nil
	}
	return n.broadcast(typ, n.term), nil
}

// poll records a peer's first answer in this campaign and acts on the outcome.
func (n *Node) poll(from string, granted bool) ([]Message, error) {
	if _, seen := n.votes[from]; !seen {
		n.votes[from] = granted
	}
	switch {
	case n.granted() >= n.quorum():
		return n.won()
	case len(n.votes)-n.granted() >= n.quorum():
		// Lost: wait as a follower for the winner or our next timeout.
		n.becomeFollower(n.term, "")
	}
	return nil, nil
}

func (n *Node) granted() int {
	c := 0
	for _, ok := range n.votes {
		if ok {
			c++
		}
	}
	return c
}

// won advances a pre-candidate to a real election and a candidate to leader.
func (n *Node) won() ([]Message, error) {
	if n.state == PreCandidate {
		return n.campaign(false)
	}
	n.state = Leader
	n.lead = n.id
	n.electionElapsed = 0
	n.heartbeatElapsed = 0
	n.active = map[string]bool{}
	// Announce ourselves at once so the others stop campaigning.
	return n.broadcast(MsgHeartbeat, n.term), nil
}

func (n *Node) broadcast(t MsgType, term uint64) []Message {
	msgs := make([]Message, 0, len(n.peers))
	for _, p := range n.peers {
		msgs = append(msgs, Message{Type: t, From: n.id, To: p, Term: term})
	}
	return msgs
}

func (n *Node) reply(m Message, t MsgType, term uint64, reject bool) Message {
	return Message{Type: t, From: n.id, To: m.From, Term: term, Reject: reject}
}
