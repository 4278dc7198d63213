// Package simnet is a deterministic in-memory network for the tests of the election state machines: fake time, FIFO delivery, and faults (loss, delay, partitions, crashes), with the scenarios the epoch algorithms share.
package simnet

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Machine is a state machine in the style of go.etcd.io/raft: ticks and
// messages in, messages out.
type Machine[M any] interface {
	Tick() []M
	Step(M) ([]M, error)
}

// Network ticks its nodes in a fixed order and delivers their messages
// first in, first out, until the network is quiet. With Rand set it
// shuffles what is in flight at each tick, loses a share Loss of the
// messages and holds back a share Delay to the next tick.
type Network[M any] struct {
	Rand  *rand.Rand
	Loss  float64
	Delay float64
	// AfterEach runs after every tick of a node and every delivered
	// message: where a test checks its own invariants.
	AfterEach func()
	// Belief, if set, tells what a node believes, for Leaders and Stable,
	// and for the token checks made after every event: no token claimed
	// by two nodes, no node's token going back, also across restarts.
	Belief func(id string) Belief
	// Unsafe makes the token checks record what they find (Broken)
	// instead of failing the test: for nodes with a deliberate flaw.
	Unsafe bool

	t      testing.TB
	ids    []string
	start  func(id string) Machine[M]
	route  func(M) (from, to string)
	nodes  map[string]Machine[M]
	down   map[string]bool
	cut    map[[2]string]bool // directed links that lose everything
	queue  []M                // to deliver now
	held   []M                // delayed to the next tick
	owner  map[uint64]string  // token -> the node that led with it
	last   map[string]uint64  // node -> the highest token it led with
	broken map[uint64]bool    // tokens led with by two nodes, or led with after a higher one
}

// Belief is a node's view, as far as the token checks need it.
type Belief struct {
	Leader bool
	Lead   string // the leader it knows (itself while Leader), or ""
	Token  uint64 // the fencing token of Lead's leadership
}

// New starts a node for each of ids with start, which is also how a
// crashed node comes back (from its storage); route tells a message's
// sender and recipient.
func New[M any](t testing.TB, ids []string, start func(id string) Machine[M], route func(M) (from, to string)) *Network[M] {
	nw := &Network[M]{
		t: t, ids: slices.Clone(ids), start: start, route: route,
		nodes: map[string]Machine[M]{}, down: map[string]bool{}, cut: map[[2]string]bool{},
		owner: map[uint64]string{}, last: map[string]uint64{}, broken: map[uint64]bool{},
	}
	for _, id := range ids {
		nw.nodes[id] = start(id)
	}
	return nw
}

// IDs lists the nodes in tick order.
func (nw *Network[M]) IDs() []string { return nw.ids }

// Node is the current incarnation of node id.
func (nw *Network[M]) Node(id string) Machine[M] { return nw.nodes[id] }

// Up reports whether id runs: neither ticked nor reachable while crashed.
func (nw *Network[M]) Up(id string) bool { return !nw.down[id] }

// Crash stops id; it loses whatever it kept in memory.
func (nw *Network[M]) Crash(id string) { nw.down[id] = true }

// Restart starts id again from its storage.
func (nw *Network[M]) Restart(id string) {
	nw.nodes[id] = nw.start(id)
	delete(nw.down, id)
}

// Isolate cuts every link to and from id.
func (nw *Network[M]) Isolate(id string) { nw.Partition([]string{id}) }

// Partition cuts every link between group and the other nodes.
func (nw *Network[M]) Partition(group []string) {
	for _, a := range nw.ids {
		for _, b := range nw.ids {
			if slices.Contains(group, a) != slices.Contains(group, b) {
				nw.cut[[2]string{a, b}] = true
			}
		}
	}
}

// Heal restores every link.
func (nw *Network[M]) Heal() { clear(nw.cut) }

// Send puts m in flight, as if a node had sent it.
func (nw *Network[M]) Send(m M) { nw.queue = append(nw.queue, m) }

// Tick ticks every live node once, then delivers until the network is quiet.
func (nw *Network[M]) Tick() {
	nw.t.Helper()
	nw.queue = append(nw.queue, nw.held...)
	nw.held = nil
	if nw.Rand != nil {
		nw.Rand.Shuffle(len(nw.queue), func(i, j int) { nw.queue[i], nw.queue[j] = nw.queue[j], nw.queue[i] })
	}
	for _, id := range nw.ids {
		if !nw.down[id] {
			nw.queue = append(nw.queue, nw.nodes[id].Tick()...)
			nw.check()
		}
	}
	nw.Deliver()
}

// Ticks ticks k times.
func (nw *Network[M]) Ticks(k int) {
	nw.t.Helper()
	for range k {
		nw.Tick()
	}
}

// Until ticks until cond holds, at most max times, and returns how many
// ticks it took; it fails the test if cond never held.
func (nw *Network[M]) Until(max int, cond func() bool, what string) int {
	nw.t.Helper()
	for i := 1; i <= max; i++ {
		nw.Tick()
		if cond() {
			return i
		}
	}
	nw.t.Fatalf("not %s within %d ticks", what, max)
	return 0
}

// Deliver delivers what is in flight, and what that causes, until the
// network is quiet.
func (nw *Network[M]) Deliver() {
	nw.t.Helper()
	for steps := 0; len(nw.queue) > 0; steps++ {
		if steps > 100000 {
			nw.t.Fatal("message storm")
		}
		m := nw.queue[0]
		nw.queue = nw.queue[1:]
		from, to := nw.route(m)
		if nw.down[to] || nw.cut[[2]string{from, to}] || nw.nodes[to] == nil {
			continue
		}
		if nw.Rand != nil {
			if nw.Rand.Float64() < nw.Loss {
				continue
			}
			if nw.Rand.Float64() < nw.Delay {
				nw.held = append(nw.held, m)
				continue
			}
		}
		out, err := nw.nodes[to].Step(m)
		if err != nil {
			nw.t.Fatalf("Step(%+v): %v", m, err)
		}
		nw.queue = append(nw.queue, out...)
		nw.check()
	}
}

// Leaders lists the live nodes that believe they lead.
func (nw *Network[M]) Leaders() []string {
	var ls []string
	for _, id := range nw.ids {
		if !nw.down[id] && nw.Belief(id).Leader {
			ls = append(ls, id)
		}
	}
	return ls
}

// Stable returns the one leader that every live node follows with its
// token, or "".
func (nw *Network[M]) Stable() string {
	ls := nw.Leaders()
	if len(ls) != 1 {
		return ""
	}
	lb := nw.Belief(ls[0])
	for _, id := range nw.ids {
		if b := nw.Belief(id); !nw.down[id] && (b.Lead != ls[0] || b.Token != lb.Token) {
			return ""
		}
	}
	return ls[0]
}

// Tokens counts the tokens some node led with so far.
func (nw *Network[M]) Tokens() int { return len(nw.owner) }

// Owner is the node that last led with token, or "".
func (nw *Network[M]) Owner(token uint64) string { return nw.owner[token] }

// Broken reports whether an Unsafe network saw token led with by two
// nodes, or by a node that had led with a higher one.
func (nw *Network[M]) Broken(token uint64) bool { return nw.broken[token] }

func (nw *Network[M]) fail(token uint64, format string, args ...any) {
	nw.t.Helper()
	if !nw.Unsafe {
		nw.t.Fatalf(format, args...)
	}
	nw.broken[token] = true
}

// Storm runs steps ticks under random faults drawn from rng (which also
// shuffles, loses and delays messages as Loss and Delay say): partitions
// into random halves, an isolated node, heals, crashes and restarts.
func (nw *Network[M]) Storm(rng *rand.Rand, steps int) {
	nw.t.Helper()
	nw.Rand = rng
	for range steps {
		switch r := rng.IntN(100); {
		case r < 3:
			nw.Heal()
			nw.Partition(slices.DeleteFunc(slices.Clone(nw.ids), func(string) bool { return rng.IntN(2) == 0 }))
		case r < 5:
			nw.Isolate(nw.ids[rng.IntN(len(nw.ids))])
		case r < 8:
			nw.Heal()
		case r < 10:
			nw.Crash(nw.ids[rng.IntN(len(nw.ids))])
		case r < 14:
			if id := nw.ids[rng.IntN(len(nw.ids))]; nw.down[id] {
				nw.Restart(id)
			}
		}
		nw.Tick()
	}
}

// Calm ends every fault: it heals, stops loss and delay, restarts the
// crashed nodes and delivers what was held back.
func (nw *Network[M]) Calm() {
	nw.t.Helper()
	nw.Heal()
	nw.Loss, nw.Delay = 0, 0
	for _, id := range nw.ids {
		if nw.down[id] {
			nw.Restart(id)
		}
	}
	nw.Ticks(2)
}

// Beliefs describes every node, for failure messages.
func (nw *Network[M]) Beliefs() string {
	var b strings.Builder
	for _, id := range nw.ids {
		fmt.Fprintf(&b, "%s %+v up=%v; ", id, nw.Belief(id), !nw.down[id])
	}
	return b.String()
}

func (nw *Network[M]) check() {
	nw.t.Helper()
	if nw.Belief != nil {
		for _, id := range nw.ids {
			b := nw.Belief(id)
			if !b.Leader {
				continue
			}
			if o, ok := nw.owner[b.Token]; ok && o != id {
				nw.fail(b.Token, "token %d claimed by %s and %s", b.Token, o, id)
			}
			if b.Token < nw.last[id] {
				nw.fail(b.Token, "%s leads with token %d after %d", id, b.Token, nw.last[id])
			}
			nw.owner[b.Token], nw.last[id] = id, b.Token
		}
	}
	if nw.AfterEach != nil {
		nw.AfterEach()
	}
}

// Settle ticks until one leader leads every live node, at most max times,
// and returns it; it fails the test otherwise.
func (nw *Network[M]) Settle(max int) string {
	nw.t.Helper()
	nw.Until(max, func() bool { return nw.Stable() != "" }, "settled on one leader")
	return nw.Stable()
}

// IDs names a cluster of size nodes as the harness does: n1..nN.
func IDs(size int) []string {
	ids := make([]string, size)
	for i := range ids {
		ids[i] = fmt.Sprintf("n%d", i+1)
	}
	return ids
}

// Seeds runs trial once per seed, 200 seeds (20 with -short), each with
// its own rng, and sums the tokens the trials report having seen led
// with: if they average fewer than min per seed, the faults were too weak
// to test anything and the test fails.
func Seeds(t *testing.T, min int, trial func(seed uint64, rng *rand.Rand) (tokens int)) {
	t.Helper()
	seeds := 200
	if testing.Short() {
		seeds = 20
	}
	tokens := 0
	for seed := range uint64(seeds) {
		tokens += trial(seed, rand.New(rand.NewPCG(seed, 0x5eed)))
	}
	t.Logf("%d seeds, %d tokens led with", seeds, tokens)
	if tokens < min*seeds {
		t.Fatalf("only %d tokens led with over %d seeds: the faults are too weak to test anything", tokens, seeds)
	}
}

// FullDisk is an election.Store whose Save always fails.
type FullDisk struct{}

// Load finds nothing saved.
func (FullDisk) Load() (uint64, error) { return 0, nil }

// Save fails.
func (FullDisk) Save(uint64) error { return errors.New("disk full") }

// MustStep steps n with m and fails the test on an error.
func MustStep[M any](t testing.TB, n Machine[M], m M) []M {
	t.Helper()
	out, err := n.Step(m)
	if err != nil {
		t.Fatalf("Step(%+v): %v", m, err)
	}
	return out
}

// Ignores steps n with each of msgs, none of them n's to act on (from an
// unknown sender, for another node, of an unknown type): n must send
// nothing and its status must stay want.
func Ignores[M any, S comparable](t testing.TB, n Machine[M], status func() S, want S, msgs ...M) {
	t.Helper()
	for _, m := range msgs {
		if out := MustStep(t, n, m); len(out) != 0 || status() != want {
			t.Fatalf("%+v: sent %+v, status %+v", m, out, status())
		}
	}
}
