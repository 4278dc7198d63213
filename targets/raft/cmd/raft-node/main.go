// Command raft-node runs the raft state machine as a node of the system
// under test, driven by the SDK, with its hard state kept in a file that
// survives a kill.
//
// Environment, besides the SDK's: RAFT_TICK (default 50ms),
// RAFT_ELECTION_TICKS (default 10), RAFT_STATE (default
// /data/raft-state.json), RAFT_SYNC (default true; false saves the hard
// state without fsync, a flaw of storage, not of the algorithm),
// RAFT_FLAW (default none: correct Raft; or one of raft.Flaws, for the
// flawed targets).
package main

import (
	"hash/fnv"
	"math/rand/v2"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/targets/raft"
	"github.com/splitbrain/splitbrain/targets/sdk"
)

func main() {
	sdk.Main(func(env sdk.Env, s *sdk.Settings) (*sdk.Node[raft.Message], error) {
		// Timeouts must differ between nodes and between a node's lives,
		// or a restarted cluster would split its votes the same way again.
		h := fnv.New64a()
		h.Write([]byte(env.Node))
		node, err := raft.New(raft.Config{
			ID:            env.Node,
			Peers:         env.PeerIDs(),
			ElectionTicks: s.Int("RAFT_ELECTION_TICKS", 10),
			PreVote:       true,
			CheckQuorum:   true,
			Storage: &sdk.FileStore[raft.HardState]{
				Path:     s.String("RAFT_STATE", "/data/raft-state.json"),
				Unsynced: s.String("RAFT_SYNC", "true") == "false",
			},
			Rand: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), h.Sum64())),
			Flaw: raft.Flaw(s.String("RAFT_FLAW", "")),
		})
		return &sdk.Node[raft.Message]{
			Machine: machine{node}, Tick: s.Duration("RAFT_TICK", 50*time.Millisecond), Path: "/raft",
			To: func(m raft.Message) string { return m.To },
		}, err
	})
}

// machine is a raft.Node as the SDK sees it: the token is the term.
type machine struct{ *raft.Node }

func (m machine) Leadership() contract.Leadership {
	st := m.Status()
	return sdk.Belief(st.IsLeader(), st.Lead, st.Term)
}
