package hashicorpraft

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/targets/sdk"
)

const (
	// transportTimeout bounds a dial and an RPC of the transport: a peer
	// cut off costs its replication goroutine no longer than this before
	// it backs off and tries again, so a healed cut is noticed soon.
	transportTimeout = time.Second
	// maxPool is the connections kept open to each peer.
	maxPool = 3
	// segmentSize is the size of a log segment, which raft-wal allocates
	// whole when it opens one (64 MiB by default). The log holds no more
	// than each leader's no-op and the configuration: five nodes of a run
	// need not take 320 MiB of the machine's disk.
	segmentSize = 1 << 20
)

// Node is one running node of hashicorp/raft. Its Leadership is the
// node's belief, read from the library when asked.
type Node struct {
	id    string
	raft  *raft.Raft
	trans *gatedTransport
	log   *wal.WAL
	meta  *metadb.BoltMetaDB
}

// Start opens the node's stores in c.Dir, bootstraps the cluster with
// every server in c.Servers unless the stores hold a state already (a
// restart must not bootstrap again), and starts raft. Every node
// bootstraps with the same configuration, which hashicorp/raft allows:
// none can then elect a leader without a quorum of the others.
func Start(c Config, logs io.Writer) (*Node, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	lg := hclog.New(&hclog.LoggerOptions{Name: c.ID, Level: hclog.Info, Output: logs})
	rc := c.raft()
	rc.Logger = lg
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, err
	}
	// raft-wal keeps both the log and the stable store (term, vote),
	// fsyncing each append: a node killed keeps what it promised. Its
	// metadata store is ours to close: WAL.Close leaves it open (v0.4.0),
	// and with it the file lock a node started again would wait on.
	meta := &metadb.BoltMetaDB{}
	w, err := wal.Open(c.Dir, wal.WithMetaStore(meta), wal.WithSegmentSize(segmentSize), wal.WithLogger(lg.Named("wal")))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("opening the log in %s: %w", c.Dir, err), meta.Close())
	}
	n := &Node{id: c.ID, log: w, meta: meta}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(c.Dir, 2, lg.Named("snapshots"))
	if err != nil {
		return nil, n.fail(err)
	}
	advertise, err := advertised(c)
	if err != nil {
		return nil, n.fail(err)
	}
	tcp, err := raft.NewTCPTransportWithLogger(c.Bind, advertise, maxPool, transportTimeout, lg.Named("transport"))
	if err != nil {
		return nil, n.fail(err)
	}
	n.trans = &gatedTransport{NetworkTransport: tcp}
	existing, err := raft.HasExistingState(w, w, snaps)
	if err != nil {
		return nil, n.fail(err)
	}
	if !existing {
		if err := raft.BootstrapCluster(rc, w, w, snaps, n.trans, raft.Configuration{Servers: c.Servers}); err != nil {
			return nil, n.fail(fmt.Errorf("bootstrapping: %w", err))
		}
		lg.Info("bootstrapped", "servers", len(c.Servers))
	} else {
		lg.Info("restarting from the state in " + c.Dir)
	}
	n.raft, err = raft.NewRaft(rc, nothing{}, w, w, snaps, n.trans)
	if err != nil {
		return nil, n.fail(err)
	}
	return n, nil
}

// advertised is the address the node's transport gives its peers: its own
// entry in the configuration, resolved (the transport wants an IP).
func advertised(c Config) (net.Addr, error) {
	for _, s := range c.Servers {
		if s.ID == raft.ServerID(c.ID) {
			return net.ResolveTCPAddr("tcp", string(s.Address))
		}
	}
	return nil, fmt.Errorf("%s is not among the servers", c.ID)
}

// fail closes what Start opened and returns err.
func (n *Node) fail(err error) error {
	if n.trans != nil {
		n.trans.Close()
	}
	return errors.Join(err, n.log.Close(), n.meta.Close())
}

// Close shuts raft down and closes its transport and stores. The stores
// are closed only once no heartbeat is being handled: the library handles
// one on the transport's goroutine, not raft's, so Shutdown does not wait
// for it, and a term it saves into a closed store panics.
func (n *Node) Close() error {
	err := errors.Join(n.raft.Shutdown().Error(), n.trans.Close())
	n.trans.drain()
	return errors.Join(err, n.log.Close(), n.meta.Close())
}

// gatedTransport is the TCP transport with a gate on the heartbeat
// handler, which drain closes after waiting for the heartbeats in hand.
// It embeds the transport itself, not the interface, so that raft still
// finds its optional parts (pre-vote, Close).
type gatedTransport struct {
	*raft.NetworkTransport
	mu     sync.RWMutex
	closed bool
}

func (g *gatedTransport) SetHeartbeatHandler(handle func(raft.RPC)) {
	g.NetworkTransport.SetHeartbeatHandler(func(rpc raft.RPC) {
		g.mu.RLock()
		defer g.mu.RUnlock()
		if g.closed {
			return // never answered: the peer's RPC times out, as against a node that is gone
		}
		handle(rpc)
	})
}

// drain waits for the heartbeats being handled and lets no other through.
func (g *gatedTransport) drain() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
}

// Raft is the library's node.
func (n *Node) Raft() *raft.Raft { return n.raft }

// Leadership is the node's belief, now: leader while raft.State() says
// Leader, the token the term it leads in.
//
// It is read from State() when asked, not from LeaderCh, which keeps only
// the latest of transitions its reader missed (a loss and a win in between
// look like no change), nor from an Observer, whose observations are
// dropped when the observer is slow. State and the term are two atomics,
// read apart: a leader that hears of a newer term sets its state to
// Follower first and its term next, so a term read on both sides of the
// state, the same both times, is the term the state was held in.
func (n *Node) Leadership() contract.Leadership {
	leader, term := Leading(n.raft)
	if leader {
		return sdk.Belief(true, n.id, term)
	}
	_, id := n.raft.LeaderWithID()
	return sdk.Belief(false, string(id), 0)
}

// State is what Leading reads of a node: *raft.Raft.
type State interface {
	State() raft.RaftState
	CurrentTerm() uint64
}

// Leading says whether r leads, and in which term. The term is read
// before and after the state and must not have moved in between; a term
// that moved is read again (it moves once per election, so a few tries
// always settle), and a node that never settles is taken for no leader.
func Leading(r State) (bool, uint64) {
	for range 3 {
		before := r.CurrentTerm()
		state := r.State()
		if after := r.CurrentTerm(); after == before {
			return state == raft.Leader, after
		}
	}
	return false, 0
}

// Verified is a Node whose writes prove the leadership first: a write is
// made only once VerifyLeader has heard from a quorum that the node still
// leads, so a leader deposed unawares (cut off, frozen) refuses it.
type Verified struct{ *Node }

// WriteLocal is sdk.LocalWriter: VerifyLeader, before the resource is
// written. A verification that the leadership was lost, or that the node
// never led, is sdk.ErrNotLeader.
func (v Verified) WriteLocal(ctx context.Context, _, _ string) error {
	f := v.raft.VerifyLeader()
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return sdk.ErrNotLeader
		}
		return err
	case <-ctx.Done():
		return fmt.Errorf("VerifyLeader: %w", ctx.Err())
	}
}

// nothing is the node's state machine. The cluster replicates no data of
// its own (the writes go to the resource): its log holds the leaders'
// no-ops and the configuration.
type nothing struct{}

func (nothing) Apply(*raft.Log) any                  { return nil }
func (nothing) Snapshot() (raft.FSMSnapshot, error)  { return nothing{}, nil }
func (nothing) Restore(r io.ReadCloser) error        { return r.Close() }
func (nothing) Persist(sink raft.SnapshotSink) error { return sink.Close() }
func (nothing) Release()                             {}
