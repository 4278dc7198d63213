// Command zk-agent is a node of the zookeeper target and its container's
// entrypoint: it runs a ZooKeeper server beside itself, one server of the
// ensemble per node, and serves the node API from the server's own word
// (srvr). The node leads while its server says "Mode: leader", with the
// epoch of its zxid as its token.
//
// The server is configured by package zookeeper (the ZK_* settings of the
// manifest's env), its id the node's number, its peers the other nodes.
// The agent serves once its server is part of an ensemble with a quorum:
// a server that never is never becomes healthy, and its log says why.
package main

import (
	"fmt"
	"log"
	"slices"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/targets/sdk"
	"github.com/splitbrain/splitbrain/targets/zookeeper"
)

// srvrTimeout bounds a reading of the server's state: the server is
// beside the agent, and the observer gives up on an answer after 200 ms.
const srvrTimeout = 150 * time.Millisecond

func main() {
	sdk.AgentMain(func(env sdk.Env, s *sdk.Settings) (*sdk.Agent, error) {
		settings := zookeeper.ReadSettings(s)
		if err := s.Err(); err != nil {
			return nil, err
		}
		servers := append([]string{env.Node}, env.PeerIDs()...)
		slices.Sort(servers)
		if err := zookeeper.Prepare(env.Node, servers, settings); err != nil {
			return nil, err
		}
		a := &agent{node: env.Node, addr: fmt.Sprintf("127.0.0.1:%d", zookeeper.ClientPort)}
		return &sdk.Agent{Server: zookeeper.Command(settings), Elector: a, Ready: a.join, Polled: true}, nil
	})
}

// agent reads its server's state with srvr.
type agent struct {
	node string
	addr string

	said sdk.ChangeLog // the beliefs, each change once
}

func (a *agent) status() (zookeeper.Status, error) {
	answer, err := zookeeper.Ask(a.addr, "srvr", srvrTimeout)
	if err != nil {
		return zookeeper.Status{}, err
	}
	return zookeeper.ParseSrvr(answer)
}

// join waits until the server serves as part of an ensemble.
func (a *agent) join() {
	for {
		if st, err := a.status(); err == nil && st.Serving() {
			log.Printf("%s: the server serves as %s", a.node, st.Mode)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Leadership is the belief at the moment the node API asks, from the
// server's srvr then: a server that stepped down is not believed a leader
// a poll later. A server that does not answer leads nothing the node can
// prove.
func (a *agent) Leadership() contract.Leadership {
	st, err := a.status()
	l := zookeeper.Belief(st)
	state := st.Mode
	switch {
	case err != nil:
		state = "no answer to srvr: " + err.Error()
	case !st.Serving():
		state = "not serving"
	}
	a.said.Printf(state, "%s: %s (zxid 0x%x, epoch %d)", a.node, state, st.Zxid, st.Epoch())
	return l
}
