// Command raft-node runs the raft state machine as a node of the system
// under test, driven by the SDK: ticks from a timer, messages over HTTP,
// the node API, and the hard state kept in a file that survives a kill.
//
// Environment, besides the SDK's: RAFT_TICK (default 50ms),
// RAFT_ELECTION_TICKS (default 10), RAFT_STATE (default
// /data/raft-state.json), RAFT_FLAW (default none: correct Raft; or one of
// raft.Flaws, for the flawed targets).
package main

import (
	"hash/fnv"
	"log"
	"math/rand/v2"
	"time"

	"github.com/splitbrain/splitbrain/targets/raft"
	"github.com/splitbrain/splitbrain/targets/sdk"
)

func main() {
	env, err := sdk.EnvFromOS()
	if err != nil {
		log.Fatal(err)
	}
	var s sdk.Settings
	tick := s.Duration("RAFT_TICK", 50*time.Millisecond)
	electionTicks := s.Int("RAFT_ELECTION_TICKS", 10)
	state := s.String("RAFT_STATE", "/data/raft-state.json")
	flaw := raft.Flaw(s.String("RAFT_FLAW", ""))
	if err := s.Err(); err != nil {
		log.Fatal(err)
	}
	// Timeouts must differ between nodes and between a node's lives, or
	// a restarted cluster would split its votes the same way again.
	h := fnv.New64a()
	h.Write([]byte(env.Node))
	node, err := raft.New(raft.Config{
		ID:            env.Node,
		Peers:         env.PeerIDs(),
		ElectionTicks: electionTicks,
		PreVote:       true,
		CheckQuorum:   true,
		Storage:       &sdk.FileStore[raft.HardState]{Path: state},
		Rand:          rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), h.Sum64())),
		Flaw:          flaw,
	})
	if err != nil {
		log.Fatal(err)
	}
	n := sdk.Node[raft.Message]{
		Env: env, Machine: machine{node}, Tick: tick, Path: "/raft",
		To: func(m raft.Message) string { return m.To },
	}
	log.Fatal(n.Run())
}

// machine is a raft.Node as the SDK sees it: the token is the term.
type machine struct{ *raft.Node }

func (m machine) Leadership() sdk.Leadership {
	st := m.Status()
	return sdk.Belief(st.IsLeader(), st.Lead, st.Term)
}
