// Command zk-elector runs an elector on ZooKeeper's election recipe as a
// node of the system under test, against the target's ZooKeeper service
// cluster (github.com/go-zookeeper/zk): it queues with an ephemeral
// sequential znode under the election's parent, watches the znode just
// before its own (no herd), leads once its znode is the lowest, with the
// znode's czxid as its token, and, while it leads, writes to its znode
// every heartbeat so that ZooKeeper's quorum confirms its session.
// Package zkelection holds the belief; this is the I/O around it.
//
// Environment, besides the SDK's: ZK_SESSION_TIMEOUT (the session timeout
// the client asks for, default 2s; ZooKeeper grants it only within 2 and
// 20 ticks), ZK_ELECTION_PATH (the election's parent znode, default
// /election), ZK_ELECTOR_FLAW ("" for the correct elector, which leads
// only while its session is confirmed within half the timeout; "naive"
// for the one that leads until told its session expired). Every service
// in SPLITBRAIN_SERVICES is a ZooKeeper server's client address.
package main

import (
	"errors"
	"fmt"
	"log"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/targets/sdk"
	zkelection "github.com/splitbrain/splitbrain/targets/zk-election"
)

// retryPause spaces failed attempts: ZooKeeper may be out of reach for a
// while under faults, and a tight loop would only fill the log.
const retryPause = 250 * time.Millisecond

func main() { sdk.AgentMain(build) }

// build makes the node's ZooKeeper client and the elector that queues
// with it.
func build(env sdk.Env, s *sdk.Settings) (*sdk.Agent, error) {
	timeout := s.Duration("ZK_SESSION_TIMEOUT", 2*time.Second)
	parent := s.String("ZK_ELECTION_PATH", "/election")
	flawName := s.String("ZK_ELECTOR_FLAW", "")
	if err := s.Err(); err != nil {
		return nil, err
	}
	flaw, err := zkelection.ParseFlaw(flawName)
	if err != nil {
		return nil, fmt.Errorf("ZK_ELECTOR_FLAW: %w", err)
	}
	// Half the timeout: ZooKeeper keeps a session at least a timeout after
	// it heard a request, less a heartbeat (the request before) and half a
	// tick (a follower passes its sessions on to its leader every tick):
	// with 2 s, 250 ms and a 200 ms tick, the belief ends 650 ms before
	// the session can.
	el, err := zkelection.New(flaw, timeout/2)
	if err != nil {
		return nil, err
	}
	servers := slices.Sorted(maps.Values(env.Services))
	if len(servers) == 0 {
		return nil, errors.New("no ZooKeeper servers in SPLITBRAIN_SERVICES")
	}
	conn, _, err := zk.Connect(servers, timeout, zk.WithLogger(log.New(log.Writer(), "zk: ", log.Flags())))
	if err != nil {
		return nil, err
	}
	n := &node{
		id:        env.Node,
		conn:      conn,
		parent:    parent,
		heartbeat: timeout / 8,
		elector:   el,
	}
	kind := "correct"
	if flaw == zkelection.Naive {
		kind = "naive"
	}
	log.Printf("%s: %s elector on ZooKeeper %v, parent %s, session timeout %v, belief bound %v",
		n.id, kind, servers, parent, timeout, timeout/2)
	return &sdk.Agent{Elector: n, Ready: n.ready, Loop: n.run}, nil
}

// node drives the elector from run's goroutine; the node API reads the
// belief from others.
type node struct {
	id        string
	conn      *zk.Conn
	parent    string
	heartbeat time.Duration

	// failures logs a run of failures once: an outage of ZooKeeper fails
	// every attempt the same way.
	failures sdk.ChangeLog

	mu      sync.Mutex
	elector *zkelection.Elector
}

// Leadership is the elector's belief now, from the client's connection as
// it is now: a watch or a write asks at the moment it needs it.
func (n *node) Leadership() contract.Leadership {
	c := zkelection.Conn{Session: n.conn.SessionID(), Live: n.conn.State() == zk.StateHasSession}
	n.mu.Lock()
	b := n.elector.Belief(time.Now(), c)
	n.mu.Unlock()
	if !b.Leader {
		return sdk.Belief(false, "", 0)
	}
	return sdk.Belief(true, n.id, uint64(b.Token))
}

// ready returns once the election's parent znode exists: then ZooKeeper
// has answered, and the node can queue.
func (n *node) ready() {
	for {
		err := n.makeParent()
		if err == nil {
			return
		}
		n.failed("create "+n.parent, err)
		time.Sleep(retryPause)
	}
}

// makeParent creates the parent znode and its ancestors, as persistent
// znodes, where they are missing.
func (n *node) makeParent() error {
	p := ""
	for _, part := range strings.Split(strings.Trim(n.parent, "/"), "/") {
		p += "/" + part
		_, err := n.conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}

// run queues forever: a znode at a time, until its session ends.
func (n *node) run() {
	for {
		znode, st, err := n.enqueue()
		if err != nil {
			n.failed("queue", err)
			time.Sleep(retryPause)
			continue
		}
		n.failures.Reset()
		log.Printf("%s: queued as %s (session %#x, czxid %d)", n.id, znode, st.EphemeralOwner, st.Czxid)
		n.campaign(znode, st)
	}
}

// enqueue returns the node's znode in its current session, and its stat:
// the lowest one the session already has, or a new one. Adopting makes a
// create that took effect but whose answer was lost harmless: left alone,
// it would sit before the node's new znode for as long as the session
// lives, and nobody would lead.
func (n *node) enqueue() (string, *zk.Stat, error) {
	session := n.conn.SessionID()
	if session == 0 || n.conn.State() != zk.StateHasSession {
		return "", nil, errors.New("no session")
	}
	children, _, err := n.conn.Children(n.parent)
	if err != nil {
		return "", nil, err
	}
	for _, name := range zkelection.Mine(children, n.prefix()) {
		p := path.Join(n.parent, name)
		ok, st, err := n.conn.Exists(p)
		if err != nil {
			return "", nil, err
		}
		if ok && st.EphemeralOwner == session {
			return p, st, nil
		}
	}
	p, err := n.conn.Create(path.Join(n.parent, n.prefix()), nil, zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		return "", nil, err
	}
	ok, st, err := n.conn.Exists(p)
	switch {
	case err != nil:
		return "", nil, err
	case !ok:
		return "", nil, fmt.Errorf("%s went with its session", p)
	}
	return p, st, nil
}

// prefix is the start of the names of the node's znodes. The next one
// must not start with another node's (n1- is not a prefix of n10-).
func (n *node) prefix() string { return n.id + "-" }

// campaign waits, znode by znode, until the node's is the lowest, then
// leads. It returns once the znode or its session is gone.
func (n *node) campaign(znode string, st *zk.Stat) {
	name := path.Base(znode)
	for n.conn.SessionID() == st.EphemeralOwner {
		children, _, err := n.conn.Children(n.parent)
		if err != nil {
			n.failed("list the queue", err)
			time.Sleep(retryPause)
			continue
		}
		pred, lowest, ok := zkelection.Place(children, name)
		switch {
		case !ok:
			log.Printf("%s: %s is gone", n.id, znode)
			return
		case lowest:
			n.lead(znode, st)
			return
		}
		// Only the znode just before: when it goes, this node alone looks.
		found, _, deleted, err := n.conn.ExistsW(path.Join(n.parent, pred))
		if err != nil {
			n.failed("watch "+pred, err)
			time.Sleep(retryPause)
			continue
		}
		n.failures.Reset()
		if found {
			// Fires when pred is deleted, or when the session expires
			// (the client ends every watch then).
			<-deleted
		}
	}
	log.Printf("%s: session %#x expired while %s queued", n.id, st.EphemeralOwner, znode)
}

// lead holds the leadership of znode, the lowest, until it or its session
// is gone: every heartbeat it writes to the znode, and each write the
// quorum confirms tells the elector when the session was last heard of.
// A write, not a read or a sync: only a write must reach the quorum's
// leader, which decides when a session expires, while a follower cut off
// from it, or a leader frozen and deposed, goes on answering reads for a
// while.
func (n *node) lead(znode string, st *zk.Stat) {
	session := st.EphemeralOwner
	n.mu.Lock()
	n.elector.Won(session, st.Czxid)
	n.mu.Unlock()
	log.Printf("%s: %s is the lowest: leading with token %d (its czxid) while ZooKeeper confirms session %#x",
		n.id, znode, st.Czxid, session)
	defer func() {
		n.mu.Lock()
		n.elector.Lost()
		n.mu.Unlock()
	}()
	tick := time.NewTicker(n.heartbeat)
	defer tick.Stop()
	for {
		if n.conn.SessionID() != session {
			log.Printf("%s: not leading: session %#x expired", n.id, session)
			return
		}
		sent := time.Now()
		_, err := n.conn.Set(znode, nil, -1)
		switch {
		case err == nil && n.conn.SessionID() == session:
			// Sent in session: the client takes a new one only after the
			// old one was reported expired, and never goes back.
			n.mu.Lock()
			n.elector.Heard(session, sent)
			n.mu.Unlock()
			n.failures.Reset()
		case errors.Is(err, zk.ErrNoNode):
			log.Printf("%s: not leading: %s is gone", n.id, znode)
			return
		case err != nil:
			n.failed("heartbeat", err)
		}
		<-tick.C
	}
}

// failed logs a failed attempt, unless it failed as the last one did.
func (n *node) failed(what string, err error) {
	msg := what + ": " + err.Error()
	n.failures.Printf(msg, "%s: %s", n.id, msg)
}
