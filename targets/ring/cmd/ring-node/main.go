// Command ring-node runs the ring state machine as a node of the system
// under test, driven by the SDK, with its last epoch kept in a file that
// survives a kill.
//
// Environment, besides the SDK's: RING_TICK (default 50ms),
// RING_ELECTION_TICKS (default 10), RING_ACK_TICKS (default 2), RING_STATE
// (default /data/ring-epoch.json).
package main

import (
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/targets/ring"
	"github.com/splitbrain/splitbrain/targets/sdk"
)

func main() {
	sdk.Main(func(env sdk.Env, s *sdk.Settings) (*sdk.Node[ring.Message], error) {
		node, err := ring.New(ring.Config{
			ID:            env.Node,
			Peers:         env.PeerIDs(),
			ElectionTicks: s.Int("RING_ELECTION_TICKS", 10),
			AckTicks:      s.Int("RING_ACK_TICKS", 2),
			Storage:       &sdk.FileStore[uint64]{Path: s.String("RING_STATE", "/data/ring-epoch.json")},
		})
		return &sdk.Node[ring.Message]{
			Machine: machine{node}, Tick: s.Duration("RING_TICK", 50*time.Millisecond), Path: "/ring",
			To: func(m ring.Message) string { return m.To },
		}, err
	})
}

// machine is a ring.Node as the SDK sees it: the token is the epoch.
type machine struct{ *ring.Node }

func (m machine) Leadership() contract.Leadership {
	st := m.Status()
	return sdk.Belief(st.IsLeader(), st.Leader, st.Epoch)
}
