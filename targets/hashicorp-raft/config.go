// Package hashicorpraft runs one node of hashicorp/raft with a durable log and a TCP transport, and reads its leadership as the node API needs it.
package hashicorpraft

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"github.com/splitbrain/splitbrain/targets/sdk"
)

// Config is one node's settings.
type Config struct {
	// ID is the node's name, its raft.ServerID.
	ID string
	// Bind is where the node's raft transport listens (":7071").
	Bind string
	// Servers is every node of the cluster, this one included, with the
	// address of its transport: the configuration the cluster is
	// bootstrapped with.
	Servers []raft.Server
	// Dir holds the log, the stable store (term and vote) and snapshots:
	// what must survive a kill.
	Dir string
	// The library's timing (raft.Config): a follower that heard nothing
	// for HeartbeatTimeout campaigns; a candidate that won nothing within
	// ElectionTimeout campaigns again; a leader that heard from no quorum
	// for LeaderLeaseTimeout steps down; CommitTimeout paces heartbeats of
	// an idle log.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	CommitTimeout      time.Duration
	// Verify makes every write prove the leadership first (VerifyLeader).
	Verify bool
}

// Defaults are hashicorp/raft's own timings (raft.DefaultConfig) halved,
// so that a run sees several failovers a minute.
var Defaults = Config{
	HeartbeatTimeout:   500 * time.Millisecond,
	ElectionTimeout:    500 * time.Millisecond,
	LeaderLeaseTimeout: 250 * time.Millisecond,
	CommitTimeout:      25 * time.Millisecond,
}

// FromEnv reads a node's Config from the harness's environment and the
// manifest's: RAFT_PORT (the transport's port on every node, default
// 7071), RAFT_DIR (default /data/raft), RAFT_HEARTBEAT_TIMEOUT,
// RAFT_ELECTION_TIMEOUT, RAFT_LEADER_LEASE_TIMEOUT, RAFT_COMMIT_TIMEOUT
// (Go durations, Defaults when unset) and RAFT_VERIFY_WRITES ("true":
// every write through VerifyLeader first). The peers are
// SPLITBRAIN_PEERS' hosts with the transport's port.
func FromEnv(env sdk.Env, s *sdk.Settings) (Config, error) {
	c := Config{
		ID:                 env.Node,
		Dir:                s.String("RAFT_DIR", "/data/raft"),
		HeartbeatTimeout:   s.Duration("RAFT_HEARTBEAT_TIMEOUT", Defaults.HeartbeatTimeout),
		ElectionTimeout:    s.Duration("RAFT_ELECTION_TIMEOUT", Defaults.ElectionTimeout),
		LeaderLeaseTimeout: s.Duration("RAFT_LEADER_LEASE_TIMEOUT", Defaults.LeaderLeaseTimeout),
		CommitTimeout:      s.Duration("RAFT_COMMIT_TIMEOUT", Defaults.CommitTimeout),
	}
	port := s.Int("RAFT_PORT", 7071)
	verify := s.String("RAFT_VERIFY_WRITES", "false")
	if err := s.Err(); err != nil {
		return Config{}, err
	}
	switch verify {
	case "true":
		c.Verify = true
	case "false":
	default:
		return Config{}, fmt.Errorf("RAFT_VERIFY_WRITES=%q: want true or false", verify)
	}
	if port < 1 || port > 65535 {
		return Config{}, fmt.Errorf("RAFT_PORT=%d: want a port, 1-65535", port)
	}
	p := strconv.Itoa(port)
	c.Bind = ":" + p
	c.Servers = append(c.Servers, server(env.Node, net.JoinHostPort(env.Node, p)))
	for _, peer := range env.PeerIDs() {
		c.Servers = append(c.Servers, server(peer, net.JoinHostPort(peer, p)))
	}
	return c, c.Validate()
}

func server(id, addr string) raft.Server {
	return raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(id), Address: raft.ServerAddress(addr)}
}

// Validate says what is wrong with c, as the library would at start
// (raft.ValidateConfig: LeaderLeaseTimeout no longer than
// HeartbeatTimeout, ElectionTimeout no shorter), and what it needs
// besides.
func (c Config) Validate() error {
	switch {
	case c.Dir == "":
		return errors.New("hashicorpraft: no data folder")
	case c.Bind == "":
		return errors.New("hashicorpraft: no transport address to bind")
	case !slices.ContainsFunc(c.Servers, func(s raft.Server) bool { return s.ID == raft.ServerID(c.ID) }):
		return fmt.Errorf("hashicorpraft: %s is not among the servers %v", c.ID, c.Servers)
	}
	return raft.ValidateConfig(c.raft())
}

// raft is the library's configuration for c.
func (c Config) raft() *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(c.ID)
	rc.HeartbeatTimeout = c.HeartbeatTimeout
	rc.ElectionTimeout = c.ElectionTimeout
	rc.LeaderLeaseTimeout = c.LeaderLeaseTimeout
	rc.CommitTimeout = c.CommitTimeout
	return rc
}
