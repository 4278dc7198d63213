package simnet

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/splitbrain/splitbrain/targets/election"
)

// Epochs is an algorithm whose token is an epoch saved before leading
// (bully, ring), as the tests they share start and judge it.
type Epochs[M any, N Machine[M]] struct {
	// New starts node id of a cluster with peers, its epoch kept in s.
	New func(id string, peers []string, s election.Store) (N, error)
	// Belief is what n believes.
	Belief func(n N) Belief
	// Route tells a message's sender and recipient.
	Route func(m M) (from, to string)
}

// Start starts node id with peers and an empty election.MemoryStore, for a
// test that steps one node by hand; it fails the test on an error.
func (e Epochs[M, N]) Start(t testing.TB, id string, peers ...string) N {
	t.Helper()
	n, err := e.New(id, peers, &election.MemoryStore{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Cluster starts n1..nN, each node with its own election.MemoryStore,
// which survives its crashes. Besides the token checks, the network checks
// after every event that each leader saved its epoch before it led.
func (e Epochs[M, N]) Cluster(t testing.TB, size int) *Network[M] {
	all := IDs(size)
	stores := map[string]*election.MemoryStore{}
	for _, id := range all {
		stores[id] = &election.MemoryStore{}
	}
	nw := New(t, all, func(id string) Machine[M] {
		n, err := e.New(id, slices.DeleteFunc(slices.Clone(all), func(p string) bool { return p == id }), stores[id])
		if err != nil {
			t.Fatal(err)
		}
		return n
	}, e.Route)
	nw.Belief = func(id string) Belief { return e.Belief(nw.nodes[id].(N)) }
	nw.AfterEach = func() {
		for _, id := range all {
			if b := nw.Belief(id); b.Leader {
				if saved, _ := stores[id].Load(); saved < b.Token {
					t.Fatalf("%s leads with epoch %d but saved only %d", id, b.Token, saved)
				}
			}
		}
	}
	return nw
}

// HighestNodeWins checks that five nodes settle on n5, which leads on
// with the same epoch while nothing fails.
func (e Epochs[M, N]) HighestNodeWins(t *testing.T) {
	t.Helper()
	c := e.Cluster(t, 5)
	if l := c.Settle(100); l != "n5" {
		t.Fatalf("leader %s: %s", l, c.Beliefs())
	}
	epoch := c.Belief("n5").Token
	c.Ticks(100)
	if c.Stable() != "n5" || c.Belief("n5").Token != epoch {
		t.Fatalf("leadership changed: %s", c.Beliefs())
	}
}

// FailOver settles five nodes and crashes their leader, n5: n4 must take
// over with a higher epoch. It returns the cluster, n5 still down, for the
// test to go on with what its algorithm does when n5 comes back.
func (e Epochs[M, N]) FailOver(t *testing.T) *Network[M] {
	t.Helper()
	c := e.Cluster(t, 5)
	c.Settle(100)
	e5 := c.Belief("n5").Token
	c.Crash("n5")
	if l := c.Settle(100); l != "n4" || c.Belief("n4").Token <= e5 {
		t.Fatalf("after n5 crashed: %s", c.Beliefs())
	}
	return c
}

// BothSidesLead settles five nodes and cuts group off from the others:
// neither algorithm promises exclusive leadership, so each side must elect,
// the two leaders being leaders (in tick order). It returns the cluster,
// still partitioned, for the test to judge the heal.
func (e Epochs[M, N]) BothSidesLead(t *testing.T, group, leaders []string) *Network[M] {
	t.Helper()
	c := e.Cluster(t, 5)
	c.Settle(100)
	c.Partition(group)
	c.Until(100, func() bool { return len(c.Leaders()) == 2 }, "two leaders")
	if ls := c.Leaders(); !slices.Equal(ls, leaders) {
		t.Fatalf("leaders %v", ls)
	}
	return c
}

// Storms runs seeded clusters of one to five nodes through loss, delay,
// reordering, partitions and crash-restarts (Storm), the network checking
// tokens after every event, then ends the faults (Calm) and hands each
// cluster to settled, which judges who leads once they stopped.
func (e Epochs[M, N]) Storms(t *testing.T, settled func(c *Network[M], seed uint64)) {
	t.Helper()
	Seeds(t, 3, func(seed uint64, rng *rand.Rand) int {
		c := e.Cluster(t, 1+rng.IntN(5))
		c.Loss, c.Delay = rng.Float64()*0.3, rng.Float64()*0.3
		c.Storm(rng, 300)
		c.Calm()
		settled(c, seed)
		return c.Tokens()
	})
}
