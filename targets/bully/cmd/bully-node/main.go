// Command bully-node runs the bully state machine as a node of the system
// under test, driven by the SDK, with its last epoch kept in a file that
// survives a kill.
//
// Environment, besides the SDK's: BULLY_TICK (default 50ms),
// BULLY_ELECTION_TICKS (default 10), BULLY_ANSWER_TICKS (default 2),
// BULLY_STATE (default /data/bully-epoch.json).
package main

import (
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/targets/bully"
	"github.com/splitbrain/splitbrain/targets/sdk"
)

func main() {
	sdk.Main(func(env sdk.Env, s *sdk.Settings) (*sdk.Node[bully.Message], error) {
		node, err := bully.New(bully.Config{
			ID:            env.Node,
			Peers:         env.PeerIDs(),
			ElectionTicks: s.Int("BULLY_ELECTION_TICKS", 10),
			AnswerTicks:   s.Int("BULLY_ANSWER_TICKS", 2),
			Storage:       &sdk.FileStore[uint64]{Path: s.String("BULLY_STATE", "/data/bully-epoch.json")},
		})
		return &sdk.Node[bully.Message]{
			Machine: machine{node}, Tick: s.Duration("BULLY_TICK", 50*time.Millisecond), Path: "/bully",
			To: func(m bully.Message) string { return m.To },
		}, err
	})
}

// machine is a bully.Node as the SDK sees it: the token is the epoch.
type machine struct{ *bully.Node }

func (m machine) Leadership() contract.Leadership {
	st := m.Status()
	return sdk.Belief(st.IsLeader(), st.Coordinator, st.Epoch)
}
