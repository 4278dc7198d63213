// Package bully is Garcia-Molina's bully election as a deterministic state machine, free of I/O and wall time.
//
// A node that misses its coordinator holds an election: it sends ELECTION
// to every node that outranks it. A live higher node answers ALIVE and
// holds its own election; a node that hears no ALIVE in time takes over
// and tells everyone with COORDINATOR, which the coordinator then repeats
// as its heartbeat. The highest-ranked node that can be reached wins
// (ranks: election.Compare). A node that hears COORDINATOR from a node it
// outranks bullies it with an election of its own.
//
// The fencing token is an epoch that each new coordinator raises above
// every epoch it has seen, taken from its own share of the epochs
// (election.Members.NextEpoch) and saved before it leads: tokens are
// unique and each node's grow, even across partitions and restarts.
// Leadership is not exclusive: a node cut off from the higher ones takes
// over while they lead on, until the partition heals and the higher node
// bullies it back. A follower that hears a coordinator lead with an epoch
// below one it knows answers with an election, so the coordinator takes a
// new epoch above it rather than write with one the resource would fence.
//
// The caller owns time and the network, as with go.etcd.io/raft: call Tick
// at a fixed interval, pass every received Message to Step, and send the
// messages both return. A Node is not safe for concurrent use.
package bully

import (
	"errors"
	"fmt"

	"github.com/splitbrain/splitbrain/targets/election"
)

// MsgType says what a Message is.
type MsgType string

// The messages of the bully algorithm.
const (
	// MsgElection goes to every higher node: "I hold an election".
	MsgElection MsgType = "election"
	// MsgAlive is a higher node's answer: "I am alive and take over".
	MsgAlive MsgType = "alive"
	// MsgCoordinator goes to every node, from the winner and then every
	// heartbeat: "I lead, with Epoch".
	MsgCoordinator MsgType = "coordinator"
)

func (t MsgType) valid() bool {
	return t == MsgElection || t == MsgAlive || t == MsgCoordinator
}

// Message is what nodes exchange. Epoch is the coordinator's epoch in
// MsgCoordinator, and otherwise the highest epoch the sender knows, so that
// every message spreads it.
type Message struct {
	Type  MsgType `json:"type"`
	From  string  `json:"from"`
	To    string  `json:"to"`
	Epoch uint64  `json:"epoch"`
}

// State is the role a node plays.
type State string

// The roles. A node starts as a follower that knows no coordinator.
const (
	Follower    State = "follower"
	Candidate   State = "candidate" // holds an election, waits for ALIVE
	Coordinator State = "coordinator"
)

// Config configures a Node. Zero tick counts mean the defaults.
type Config struct {
	ID    string
	Peers []string // the OTHER nodes' IDs
	// ElectionTicks is how long a follower waits for its coordinator's
	// word before it holds an election (default 10).
	ElectionTicks int
	// AnswerTicks is how long a candidate waits for ALIVE before it takes
	// over (default 2): a few round trips.
	AnswerTicks int
	// HeartbeatTicks is how often the coordinator repeats COORDINATOR
	// (default 1); less than ElectionTicks.
	HeartbeatTicks int
	// Storage keeps the last epoch this node claimed; required.
	Storage election.Store
}

func (c Config) withDefaults() Config {
	if c.ElectionTicks == 0 {
		c.ElectionTicks = 10
	}
	if c.AnswerTicks == 0 {
		c.AnswerTicks = 2
	}
	if c.HeartbeatTicks == 0 {
		c.HeartbeatTicks = 1
	}
	return c
}

// Validate reports the first problem of the configuration as New would see
// it (after defaults).
func (c Config) Validate() error {
	c = c.withDefaults()
	if _, err := election.NewMembers(c.ID, c.Peers); err != nil {
		return fmt.Errorf("bully: %w", err)
	}
	switch {
	case c.ElectionTicks < 1 || c.AnswerTicks < 1 || c.HeartbeatTicks < 1:
		return fmt.Errorf("bully: tick counts must be at least 1, got election %d, answer %d, heartbeat %d",
			c.ElectionTicks, c.AnswerTicks, c.HeartbeatTicks)
	case c.HeartbeatTicks >= c.ElectionTicks:
		return fmt.Errorf("bully: HeartbeatTicks (%d) must be less than ElectionTicks (%d)", c.HeartbeatTicks, c.ElectionTicks)
	case c.Storage == nil:
		return errors.New("bully: nil Storage")
	}
	return nil
}

// Status is a snapshot of a node's view.
type Status struct {
	ID          string
	State       State
	Coordinator string // the known coordinator (ourselves while Coordinator), or ""
	Epoch       uint64 // the known coordinator's epoch: while Coordinator, the fencing token
}

// IsLeader reports whether the node is the coordinator.
func (s Status) IsLeader() bool { return s.State == Coordinator }

// Node is one participant. Create it with New.
type Node struct {
	id             string
	members        election.Members
	higher         []string
	electionTicks  int
	answerTicks    int
	heartbeatTicks int
	storage        election.Store

	state   State
	lead    string
	epoch   uint64 // the known coordinator's epoch
	seen    uint64 // the highest epoch known to exist
	elapsed int    // ticks since the last reset of the current role's timer
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
		return nil, fmt.Errorf("bully: load epoch: %w", err)
	}
	members, _ := election.NewMembers(c.ID, c.Peers) // validated above
	return &Node{
		id:             c.ID,
		members:        members,
		higher:         members.Above(c.ID),
		electionTicks:  c.ElectionTicks,
		answerTicks:    c.AnswerTicks,
		heartbeatTicks: c.HeartbeatTicks,
		storage:        c.Storage,
		state:          Follower,
		seen:           seen,
	}, nil
}

// Status returns the node's current view.
func (n *Node) Status() Status {
	return Status{ID: n.id, State: n.state, Coordinator: n.lead, Epoch: n.epoch}
}

// Tick advances the node's clock by one tick and returns the messages to
// send. A takeover whose Save fails is abandoned (Tick has no error) and
// retried at the next election.
func (n *Node) Tick() []Message {
	n.elapsed++
	var msgs []Message
	switch {
	case n.state == Coordinator && n.elapsed >= n.heartbeatTicks:
		n.elapsed = 0
		msgs = n.broadcast(MsgCoordinator, n.epoch)
	case n.state == Candidate && n.elapsed >= n.answerTicks:
		msgs, _ = n.takeOver() // nobody higher answered
	case n.state == Follower && n.elapsed >= n.electionTicks:
		msgs, _ = n.holdElection()
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
	lower := election.Compare(m.From, n.id) < 0
	switch m.Type {
	case MsgElection:
		if !lower {
			return nil, nil // elections go up, never down
		}
		alive := n.msg(MsgAlive, m.From, n.seen)
		if n.state == Coordinator && n.epoch == n.seen {
			// Still the rightful coordinator: the asker just lost us.
			return []Message{alive, n.msg(MsgCoordinator, m.From, n.epoch)}, nil
		}
		if n.state == Candidate {
			return []Message{alive}, nil
		}
		msgs, err := n.holdElection()
		if err != nil {
			return nil, err
		}
		return append([]Message{alive}, msgs...), nil

	case MsgAlive:
		if n.state == Candidate && !lower {
			// A higher node takes over; wait for its COORDINATOR, and
			// hold a new election if it never comes.
			n.becomeFollower("", 0)
		}

	case MsgCoordinator:
		switch {
		case lower && n.state == Coordinator && n.epoch == n.seen:
			return []Message{n.msg(MsgCoordinator, m.From, n.epoch)}, nil
		case lower && n.state == Candidate:
		case lower:
			return n.holdElection() // bully it
		case m.Epoch < n.seen:
			// Its writes would be fenced: make it take a newer epoch.
			return []Message{n.msg(MsgElection, m.From, n.seen)}, nil
		default:
			n.becomeFollower(m.From, m.Epoch)
		}
	}
	return nil, nil
}

func (n *Node) becomeFollower(lead string, epoch uint64) {
	n.state, n.lead, n.epoch, n.elapsed = Follower, lead, epoch, 0
}

// holdElection asks every higher node, or takes over if there is none.
func (n *Node) holdElection() ([]Message, error) {
	if len(n.higher) == 0 {
		return n.takeOver()
	}
	n.state, n.lead, n.epoch, n.elapsed = Candidate, "", 0, 0
	msgs := make([]Message, 0, len(n.higher))
	for _, p := range n.higher {
		msgs = append(msgs, n.msg(MsgElection, p, n.seen))
	}
	return msgs, nil
}

// takeOver claims the next epoch of ours, durably, and announces it.
func (n *Node) takeOver() ([]Message, error) {
	e := n.members.NextEpoch(n.id, n.seen)
	if err := n.storage.Save(e); err != nil {
		n.becomeFollower("", 0)
		return nil, fmt.Errorf("bully: save epoch: %w", err)
	}
	n.state, n.lead, n.epoch, n.seen, n.elapsed = Coordinator, n.id, e, e, 0
	return n.broadcast(MsgCoordinator, e), nil
}

func (n *Node) broadcast(t MsgType, epoch uint64) []Message {
	msgs := make([]Message, 0, len(n.members)-1)
	for _, p := range n.members {
		if p != n.id {
			msgs = append(msgs, n.msg(t, p, epoch))
		}
	}
	return msgs
}

func (n *Node) msg(t MsgType, to string, epoch uint64) Message {
	return Message{Type: t, From: n.id, To: to, Epoch: epoch}
}
