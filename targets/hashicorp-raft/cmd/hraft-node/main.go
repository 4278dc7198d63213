// Command hraft-node runs one node of hashicorp/raft (package
// hashicorpraft) as a node of the system under test: its raft transport
// on its own port beside the node API, its log and term in /data, and the
// node API served from the library's own State.
//
// Environment, besides the SDK's: hashicorpraft.FromEnv's RAFT_*.
package main

import (
	"log"
	"os"
	"runtime/debug"

	hashicorpraft "github.com/splitbrain/splitbrain/targets/hashicorp-raft"
	"github.com/splitbrain/splitbrain/targets/sdk"
)

func main() { sdk.AgentMain(build) }

func build(env sdk.Env, s *sdk.Settings) (*sdk.Agent, error) {
	c, err := hashicorpraft.FromEnv(env, s)
	if err != nil {
		return nil, err
	}
	writes := "plain writes"
	if c.Verify {
		writes = "every write through VerifyLeader"
	}
	log.Printf("%s: hashicorp/raft %s, transport %s, data %s, heartbeat %s, election %s, leader lease %s, commit %s, %s",
		c.ID, raftVersion(), c.Bind, c.Dir, c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout, c.CommitTimeout, writes)
	n, err := hashicorpraft.Start(c, os.Stderr)
	if err != nil {
		return nil, err
	}
	var e sdk.Elector = n
	if c.Verify {
		e = hashicorpraft.Verified{Node: n}
	}
	return &sdk.Agent{Elector: e}, nil
}

// raftVersion is the version of hashicorp/raft this binary was built
// with, for the log: what a run tested.
func raftVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == "github.com/hashicorp/raft" {
				return m.Version
			}
		}
	}
	return "(unknown version)"
}
