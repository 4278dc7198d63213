package raft

import (
	"fmt"
	"sync"
)

// State is the role a node plays in the current term.
type State int

// The roles of a node. The zero value is Follower, which is where every node
// starts.
const (
	Follower State = iota
	PreCandidate
	Candidate
	Leader
)

var stateNames = [...]string{"Follower", "PreCandidate", "Candidate", "Leader"}

func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// MsgType says what a Message asks or answers.
type MsgType int

// Message types. They start at 1 so that a message whose type is missing (for
// example absent from JSON) is invalid rather than silently a pre-vote.
const (
	MsgPreVote MsgType = iota + 1
	MsgPreVoteResp
	MsgVote
	MsgVoteResp
	MsgHeartbeat
	MsgHeartbeatResp
)

var msgTypeNames = [...]string{
	MsgPreVote:       "MsgPreVote",
	MsgPreVoteResp:   "MsgPreVoteResp",
	MsgVote:          "MsgVote",
	MsgVoteResp:      "MsgVoteResp",
	MsgHeartbeat:     "MsgHeartbeat",
	MsgHeartbeatResp: "MsgHeartbeatResp",
}

func (t MsgType) valid() bool { return t >= MsgPreVote && t <= MsgHeartbeatResp }

func (t MsgType) String() string {
	if t.valid() {
		return msgTypeNames[t]
	}
	return fmt.Sprintf("MsgType(%d)", int(t))
}

// MarshalText makes message types travel as readable names in JSON.
func (t MsgType) MarshalText() ([]byte, error) {
	if !t.valid() {
		return nil, fmt.Errorf("raft: invalid message type %d", int(t))
	}
	return []byte(msgTypeNames[t]), nil
}

// UnmarshalText accepts the names produced by MarshalText.
func (t *MsgType) UnmarshalText(b []byte) error {
	for i, name := range msgTypeNames {
		if name != "" && name == string(b) {
			*t = MsgType(i)
			return nil
		}
	}
	return fmt.Errorf("raft: unknown message type %q", b)
}

// respType is the answer to a request type; ok is false for answers.
func respType(t MsgType) (MsgType, bool) {
	switch t {
	case MsgPreVote:
		return MsgPreVoteResp, true
	case MsgVote:
		return MsgVoteResp, true
	case MsgHeartbeat:
		return MsgHeartbeatResp, true
	}
	return 0, false
}

// Message is what nodes exchange. Term is the sender's term, except in a
// pre-vote and a granted pre-vote answer, where it is the term the
// pre-candidate would campaign in (its own term + 1).
type Message struct {
	Type   MsgType `json:"type"`
	From   string  `json:"from"`
	To     string  `json:"to"`
	Term   uint64  `json:"term"`
	Reject bool    `json:"reject,omitempty"` // for *Resp
}

// HardState is what must survive a crash: the current term and whom we voted
// for in it ("" if nobody). Losing it would let a node vote twice in a term.
type HardState struct {
	Term uint64 `json:"term"`
	Vote string `json:"vote"`
}

// Storage persists the HardState; Save must be durable before it returns.
type Storage interface {
	Load() (HardState, error)
	Save(HardState) error
}

// MemoryStorage is a Storage that keeps the HardState in memory, for tests and
// for nodes without a disk (which then must not rejoin after losing it). The
// zero value is ready to use and it is safe for concurrent use.
type MemoryStorage struct {
	mu sync.Mutex
	hs HardState
}

// Load returns the last saved HardState.
func (s *MemoryStorage) Load() (HardState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hs, nil
}

// Save replaces the HardState.
func (s *MemoryStorage) Save(hs HardState) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hs = hs
	return nil
}
