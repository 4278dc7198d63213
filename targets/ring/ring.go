// Package ring is Chang and Roberts' ring election as a deterministic state machine, free of I/O and wall time.
//
// The nodes form a ring in rank order (election.Compare; the highest
// wraps around to the lowest). A node that misses its leader's heartbeat
// sends ELECTION with its own ID to its successor. A node forwards an
// ELECTION that carries a higher ID than its own, and replaces a lower one
// with its own unless it already takes part; an ELECTION that comes back
// to the node it names has passed every live node, so that node, the
// highest one, has won. It announces ELECTED around the ring and from then
// on sends its heartbeat to every node directly.
//
// Crashed nodes are skipped: every ring message is acknowledged, and one
// not acknowledged within AckTicks goes to the next node instead. A node
// that can reach no other one is a ring of one and elects itself, so both
// sides of a partition elect: leadership is not exclusive.
//
// The fencing token is an epoch, chosen by the winner above the highest
// epoch the ELECTION collected on its way around and taken from the
// winner's own share (election.Members.NextEpoch), and saved before it
// leads: tokens are unique and each node's grow. Of two leaders, the one
// with the higher epoch prevails once they hear of each other.
//
// The caller owns time and the network, as with go.etcd.io/raft: call Tick
// at a fixed interval, pass every received Message to Step, and send the
// messages both return. A Node is not safe for concurrent use.
package ring

import (
	"errors"
	"fmt"
	"slices"

	"github.com/splitbrain/splitbrain/targets/election"
)

// MsgType says what a Message is.
type MsgType string

// The messages of the ring election.
const (
	// MsgElection goes around the ring carrying the highest candidate.
	MsgElection MsgType = "election"
	// MsgElected goes around the ring once, announcing the winner.
	MsgElected MsgType = "elected"
	// MsgAck acknowledges a ring message to its sender.
	MsgAck MsgType = "ack"
	// MsgHeartbeat goes from the leader to every node directly.
	MsgHeartbeat MsgType = "heartbeat"
)

func (t MsgType) valid() bool {
	return t == MsgElection || t == MsgElected || t == MsgAck || t == MsgHeartbeat
}

// Message is what nodes exchange.
type Message struct {
	Type MsgType `json:"type"`
	From string  `json:"from"`
	To   string  `json:"to"`
	// Seq numbers a ring message for its MsgAck, which carries it back.
	Seq uint64 `json:"seq,omitempty"`
	// Candidate is the highest ID an election has passed, or the winner
	// an ELECTED announces.
	Candidate string `json:"candidate,omitempty"`
	// Epoch is the highest epoch an election has collected, or the
	// leader's epoch in ELECTED and heartbeats.
	Epoch uint64 `json:"epoch"`
}

// State is the role a node plays.
type State string

// The roles. A node starts as a follower that knows no leader.
const (
	Follower State = "follower"
	Leader   State = "leader"
)

// Config configures a Node. Zero tick counts mean the defaults.
type Config struct {
	ID    string
	Peers []string // the OTHER nodes' IDs
	// ElectionTicks is how long a node waits for its leader's heartbeat,
	// or for an election it takes part in to end, before it starts an
	// election (default 10).
	ElectionTicks int
	// HeartbeatTicks is how often the leader sends its heartbeat
	// (default 1); less than ElectionTicks.
	HeartbeatTicks int
	// AckTicks is how long a ring message waits for its acknowledgement
	// before it goes to the next node (default 2): a few round trips.
	AckTicks int
	// Storage keeps the last epoch this node claimed; required.
	Storage election.Store
}

func (c Config) withDefaults() Config {
	if c.ElectionTicks == 0 {
		c.ElectionTicks = 10
	}
	if c.HeartbeatTicks == 0 {
		c.HeartbeatTicks = 1
	}
	if c.AckTicks == 0 {
		c.AckTicks = 2
	}
	return c
}

// Validate reports the first problem of the configuration as New would see
// it (after defaults).
func (c Config) Validate() error {
	c = c.withDefaults()
	if _, err := election.NewMembers(c.ID, c.Peers); err != nil {
		return fmt.Errorf("ring: %w", err)
	}
	switch {
	case c.ElectionTicks < 1 || c.HeartbeatTicks < 1 || c.AckTicks < 1:
		return fmt.Errorf("ring: tick counts must be at least 1, got election %d, heartbeat %d, ack %d",
			c.ElectionTicks, c.HeartbeatTicks, c.AckTicks)
	case c.HeartbeatTicks >= c.ElectionTicks:
		return fmt.Errorf("ring: HeartbeatTicks (%d) must be less than ElectionTicks (%d)", c.HeartbeatTicks, c.ElectionTicks)
	case c.Storage == nil:
		return errors.New("ring: nil Storage")
	}
	return nil
}

// Status is a snapshot of a node's view.
type Status struct {
	ID     string
	State  State
	Leader string // the known leader (ourselves while Leader), or ""
	Epoch  uint64 // the known leader's epoch: while Leader, the fencing token
}

// IsLeader reports whether the node leads.
func (s Status) IsLeader() bool { return s.State == Leader }

// pending is a ring message waiting for its acknowledgement.
type pending struct {
	msg     Message
	elapsed int
}

// Node is one participant. Create it with New.
type Node struct {
	id             string
	members        election.Members
	electionTicks  int
	heartbeatTicks int
	ackTicks       int
	storage        election.Store

	state       State
	lead        string
	epoch       uint64 // the known leader's epoch
	seen        uint64 // the highest epoch known to exist
	participant bool   // an election passed us since the last ELECTED
	elapsed     int    // ticks since the last heartbeat (leader: since it sent one)
	seq         uint64
	unacked     []pending // in Seq order
}

// New applies defaults, validates c and starts a follower that knows the
// epoch it last claimed.
func New(c Config) (*Node, error) {
	c = c.withDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	seen, err := c.Storage.Load()
	if err != nil {
		return nil, fmt.Errorf("ring: load epoch: %w", err)
	}
	members, _ := election.NewMembers(c.ID, c.Peers) // validated above
	return &Node{
		id:             c.ID,
		members:        members,
		electionTicks:  c.ElectionTicks,
		heartbeatTicks: c.HeartbeatTicks,
		ackTicks:       c.AckTicks,
		storage:        c.Storage,
		state:          Follower,
		seen:           seen,
	}, nil
}

// Status returns the node's current view.
func (n *Node) Status() Status {
	return Status{ID: n.id, State: n.state, Leader: n.lead, Epoch: n.epoch}
}

// Tick advances the node's clock by one tick and returns the messages to
// send. A win whose Save fails is abandoned (Tick has no error) and the
// election retried after ElectionTicks.
func (n *Node) Tick() []Message {
	// Ring messages nobody acknowledged in time go to the next node on.
	var msgs, late []Message
	waiting := n.unacked[:0]
	for _, p := range n.unacked {
		if p.elapsed++; p.elapsed < n.ackTicks {
			waiting = append(waiting, p)
		} else {
			late = append(late, p.msg)
		}
	}
	n.unacked = waiting
	for _, m := range late {
		if n.ended(m) {
			continue
		}
		out, _ := n.pass(m, n.members.After(m.To))
		msgs = append(msgs, out...)
	}

	n.elapsed++
	switch {
	case n.state == Leader && n.elapsed >= n.heartbeatTicks:
		n.elapsed = 0
		for _, p := range n.members {
			if p != n.id {
				msgs = append(msgs, Message{Type: MsgHeartbeat, From: n.id, To: p, Epoch: n.epoch})
			}
		}
	case n.state == Follower && n.elapsed >= n.electionTicks:
		out, _ := n.startElection()
		msgs = append(msgs, out...)
	}
	return msgs
}

// Step processes one received message and returns the messages to send. It
// fails only if saving a new epoch fails; the node then does not lead and
// nothing must be sent. Messages not for this node, from unknown nodes or
// of unknown type are ignored.
func (n *Node) Step(m Message) ([]Message, error) {
	if m.To != n.id || !m.Type.valid() || m.From == n.id || n.members.Rank(m.From) < 0 {
		return nil, nil
	}
	n.seen = max(n.seen, m.Epoch)
	switch m.Type {
	case MsgAck:
		n.unacked = slices.DeleteFunc(n.unacked, func(p pending) bool { return p.msg.Seq == m.Seq && p.msg.To == m.From })
		return nil, nil
	case MsgHeartbeat:
		if m.Epoch == n.seen {
			n.follow(m.From, m.Epoch)
		}
		// A heartbeat with an older epoch comes from a leader that has
		// been superseded; the newer leader's heartbeat will reach it.
		return nil, nil
	}
	ack := Message{Type: MsgAck, From: n.id, To: m.From, Seq: m.Seq}
	out, err := n.handle(m)
	if err != nil {
		return nil, err
	}
	return append([]Message{ack}, out...), nil
}

// handle acts on an ELECTION or ELECTED that reached us, from a peer or,
// when nobody else could be reached, from ourselves.
func (n *Node) handle(m Message) ([]Message, error) {
	next := n.members.After(n.id)
	if m.Type == MsgElected {
		if m.Candidate == n.id || m.Epoch < n.seen {
			// Our own announcement came around, or a stale one: it ends here.
			return nil, nil
		}
		n.participant = false
		n.follow(m.Candidate, m.Epoch)
		return n.pass(Message{Type: MsgElected, Candidate: m.Candidate, Epoch: m.Epoch}, next)
	}
	switch c := election.Compare(m.Candidate, n.id); {
	case c == 0 && !n.participant:
		// A copy of an ELECTION of ours that has already ended (we won,
		// or followed an ELECTED since): a ring message is sent again when
		// its ack is late, so copies arrive. Winning on each would claim
		// a new epoch each time and send it around the ring, where it is
		// copied again when acks are late: on a loaded network, a storm.
		return nil, nil
	case c == 0:
		// Our ELECTION came around: no live node outranks us.
		return n.win()
	case c > 0:
		n.participant = true
		return n.pass(Message{Type: MsgElection, Candidate: m.Candidate, Epoch: n.seen}, next)
	case n.participant:
		return nil, nil // our own, or a higher, candidacy is already on its way
	default:
		n.participant = true
		return n.pass(Message{Type: MsgElection, Candidate: n.id, Epoch: n.seen}, next)
	}
}

// ended reports whether a ring message whose ack is late is no longer
// worth passing on: an ELECTION once we have stopped taking part in it (it
// was decided), an ELECTED older than an epoch we know.
func (n *Node) ended(m Message) bool {
	if m.Type == MsgElection {
		return !n.participant
	}
	return m.Epoch < n.seen
}

func (n *Node) follow(lead string, epoch uint64) {
	n.state, n.lead, n.epoch, n.elapsed = Follower, lead, epoch, 0
}

// startElection puts our own candidacy on the ring.
func (n *Node) startElection() ([]Message, error) {
	n.state, n.lead, n.epoch, n.elapsed = Follower, "", 0, 0
	n.participant = true
	return n.pass(Message{Type: MsgElection, Candidate: n.id, Epoch: n.seen}, n.members.After(n.id))
}

// win claims the next epoch of ours above every epoch the election
// collected, durably, and announces it around the ring.
func (n *Node) win() ([]Message, error) {
	e := n.members.NextEpoch(n.id, n.seen)
	if err := n.storage.Save(e); err != nil {
		return nil, fmt.Errorf("ring: save epoch: %w", err)
	}
	n.state, n.lead, n.epoch, n.seen, n.elapsed = Leader, n.id, e, e, 0
	n.participant = false
	return n.pass(Message{Type: MsgElected, Candidate: n.id, Epoch: e}, n.members.After(n.id))
}

// pass sends a ring message to the node to, which has to acknowledge it.
// When the ring has come back to us, nobody else could be reached: we are
// a ring of one, and an election elects us.
func (n *Node) pass(m Message, to string) ([]Message, error) {
	if to == n.id {
		if m.Type == MsgElection {
			return n.win()
		}
		return nil, nil
	}
	n.seq++
	m.From, m.To, m.Seq = n.id, to, n.seq
	n.unacked = append(n.unacked, pending{msg: m})
	return []Message{m}, nil
}
