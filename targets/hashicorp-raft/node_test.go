package hashicorpraft

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/targets/sdk"
)

// cluster is n nodes of the real library on loopback, each with its
// transport on a port of its own and its stores in a folder of its own.
type cluster struct {
	t     *testing.T
	confs []Config
	nodes []*Node // nil: stopped
	logs  []*syncBuffer
}

func newCluster(t *testing.T, n int) *cluster {
	t.Helper()
	c := &cluster{t: t, nodes: make([]*Node, n), logs: make([]*syncBuffer, n)}
	var servers []raft.Server
	for i, addr := range freeAddrs(t, n) {
		servers = append(servers, server(fmt.Sprintf("n%d", i+1), addr))
	}
	for i, s := range servers {
		conf := Defaults
		conf.ID, conf.Bind, conf.Servers, conf.Dir = string(s.ID), string(s.Address), servers, t.TempDir()
		c.confs = append(c.confs, conf)
		c.start(i)
	}
	t.Cleanup(func() {
		for i := range c.nodes {
			c.stop(i)
		}
	})
	return c
}

func (c *cluster) start(i int) {
	c.t.Helper()
	c.logs[i] = &syncBuffer{}
	n, err := Start(c.confs[i], c.logs[i])
	if err != nil {
		c.t.Fatalf("starting %s: %v", c.confs[i].ID, err)
	}
	c.nodes[i] = n
}

func (c *cluster) stop(i int) {
	if c.nodes[i] == nil {
		return
	}
	if err := c.nodes[i].Close(); err != nil {
		c.t.Errorf("closing %s: %v", c.confs[i].ID, err)
	}
	c.nodes[i] = nil
}

// leader waits until exactly one running node believes it leads, and
// returns its index and belief.
func (c *cluster) leader(within time.Duration) (int, contract.Leadership) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		found, at := 0, -1
		var belief contract.Leadership
		for i, n := range c.nodes {
			if n == nil {
				continue
			}
			if l := n.Leadership(); l.Leader {
				found, at, belief = found+1, i, l
			}
		}
		if found == 1 {
			return at, belief
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatalf("no single leader within %s", within)
	return 0, contract.Leadership{}
}

// freeAddrs are n loopback addresses free now, all different: each
// listener is held until every one is drawn, or the kernel may hand the
// same port out twice (it did, in a cold CI).
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var addrs []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		addrs = append(addrs, l.Addr().String())
	}
	return addrs
}

// syncBuffer is a log that the test reads while raft writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Three nodes bootstrapped alike elect one leader; its token is the term
// it leads in, and the others name it.
func TestOneLeaderWithItsTerm(t *testing.T) {
	c := newCluster(t, 3)
	i, l := c.leader(10 * time.Second)
	if term := c.nodes[i].Raft().CurrentTerm(); l.Token <= 0 || uint64(l.Token) != term {
		t.Fatalf("leader %s claims token %d in term %d", c.confs[i].ID, l.Token, term)
	}
	if l.LeaderID != c.confs[i].ID {
		t.Errorf("leader %s names %q as the leader", c.confs[i].ID, l.LeaderID)
	}
	deadline := time.Now().Add(5 * time.Second)
	for j, n := range c.nodes {
		if j == i {
			continue
		}
		for n.Leadership().LeaderID != c.confs[i].ID && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if f := n.Leadership(); f.Leader || f.Token != 0 || f.LeaderID != c.confs[i].ID {
			t.Errorf("follower %s: %+v, want to follow %s", c.confs[j].ID, f, c.confs[i].ID)
		}
	}
}

// A cluster killed whole and started again finds its state on disk: it
// does not bootstrap again, and its next leader leads in a newer term.
func TestRestartFindsItsState(t *testing.T) {
	c := newCluster(t, 3)
	_, first := c.leader(10 * time.Second)
	for i := range c.nodes {
		c.stop(i)
	}
	for i := range c.nodes {
		c.start(i)
	}
	_, again := c.leader(10 * time.Second)
	if again.Token <= first.Token {
		t.Errorf("leader after the restart claims token %d, the first claimed %d", again.Token, first.Token)
	}
	for i, l := range c.logs {
		if s := l.String(); !strings.Contains(s, "restarting from the state") || strings.Contains(s, "bootstrapped") {
			t.Errorf("%s bootstrapped again:\n%s", c.confs[i].ID, s)
		}
	}
}

// hashicorp/raft#108's bound: a leader that can reach no quorum believes
// it leads until LeaderLeaseTimeout has passed without one, and no longer.
// A write through VerifyLeader is made while a quorum answers and refused
// once the leader stepped down. (Not while it still believes: VerifyLeader
// counts any heartbeat answer that arrives after it was asked, and one
// sent before the cut may still be on its way.)
func TestCutOffLeaderStepsDownAfterItsLease(t *testing.T) {
	c := newCluster(t, 3)
	i, l := c.leader(10 * time.Second)
	leader := Verified{c.nodes[i]}
	ctx := context.Background()
	if err := leader.WriteLocal(ctx, "k", "v"); err != nil {
		t.Fatalf("the leader's verified write: %v", err)
	}
	for j := range c.nodes {
		if j != i {
			if err := (Verified{c.nodes[j]}).WriteLocal(ctx, "k", "v"); !errors.Is(err, sdk.ErrNotLeader) {
				t.Errorf("follower %s's verified write: %v, want not-leader", c.confs[j].ID, err)
			}
		}
	}

	for j := range c.nodes {
		if j != i {
			c.stop(j)
		}
	}
	cut := time.Now()
	lease := c.confs[i].LeaderLeaseTimeout
	for leader.Leadership().Leader {
		if time.Since(cut) > 4*lease {
			t.Fatalf("the cut-off leader still leads %s after the cut (LeaderLeaseTimeout %s)", time.Since(cut), lease)
		}
		time.Sleep(time.Millisecond)
	}
	t.Logf("term %d: the cut-off leader stepped down %s after the cut (LeaderLeaseTimeout %s)", l.Token, time.Since(cut).Round(time.Millisecond), lease)
	if err := leader.WriteLocal(ctx, "k", "v"); !errors.Is(err, sdk.ErrNotLeader) {
		t.Errorf("the deposed leader's verified write: %v, want not-leader", err)
	}
}

func TestFromEnv(t *testing.T) {
	env := sdk.Env{Node: "n2", Peers: []string{"n1:7070", "n3:7070"}}
	t.Setenv("RAFT_PORT", "8300")
	t.Setenv("RAFT_LEADER_LEASE_TIMEOUT", "100ms")
	c, err := FromEnv(env, &sdk.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for _, s := range c.Servers {
		addrs = append(addrs, fmt.Sprintf("%s@%s", s.ID, s.Address))
	}
	if got := strings.Join(addrs, " "); got != "n2@n2:8300 n1@n1:8300 n3@n3:8300" {
		t.Errorf("servers %s", got)
	}
	if c.Bind != ":8300" || c.LeaderLeaseTimeout != 100*time.Millisecond || c.HeartbeatTimeout != Defaults.HeartbeatTimeout || c.Verify {
		t.Errorf("config %+v", c)
	}

	for _, bad := range []struct{ key, value, want string }{
		{"RAFT_LEADER_LEASE_TIMEOUT", "1s", "cannot be larger than heartbeat timeout"},
		{"RAFT_ELECTION_TIMEOUT", "100ms", "must be equal or greater than Heartbeat Timeout"},
		{"RAFT_HEARTBEAT_TIMEOUT", "soon", "RAFT_HEARTBEAT_TIMEOUT"},
		{"RAFT_VERIFY_WRITES", "yes", "RAFT_VERIFY_WRITES"},
		{"RAFT_PORT", "0", "RAFT_PORT"},
	} {
		t.Run(bad.key, func(t *testing.T) {
			t.Setenv(bad.key, bad.value)
			if _, err := FromEnv(env, &sdk.Settings{}); err == nil || !strings.Contains(err.Error(), bad.want) {
				t.Errorf("%s=%s: %v, want an error saying %q", bad.key, bad.value, err, bad.want)
			}
		})
	}
	t.Setenv("RAFT_VERIFY_WRITES", "true")
	if c, err := FromEnv(env, &sdk.Settings{}); err != nil || !c.Verify {
		t.Errorf("RAFT_VERIFY_WRITES=true: %+v, %v", c, err)
	}
}
