package nemesis

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// pause-process stops a named process in the containers it aims at, and
// continues the same at heal; on the leader it says so.
func TestPauseProcessStopsANamedProcessAndContinuesIt(t *testing.T) {
	ctx := context.Background()
	c := &services{}
	a, err := catalogue["pause-process-leader"].inject(ctx, c, rand.New(rand.NewPCG(1, 2)))
	if err != nil || !slices.Equal(a.Nodes, []string{"n2"}) || a.What != "stopped etcd in n2 (leader)" {
		t.Fatalf("got %+v, %v", a, err)
	}
	if err := a.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	if want := []string{"stop etcd in n2", "continue etcd in n2"}; !slices.Equal(c.done, want) {
		t.Errorf("done %v, want %v", c.done, want)
	}

	// Among a service's members, one of the names its manifest gives,
	// the same at heal.
	c = &services{services: []string{"zk1", "zk2", "zk3"}}
	a, err = catalogue["pause-process-service"].inject(ctx, c, rand.New(rand.NewPCG(3, 4)))
	if err != nil || len(a.Nodes) != 1 {
		t.Fatalf("got %+v, %v", a, err)
	}
	a.Heal(ctx)
	stopped, _ := strings.CutPrefix(c.done[0], "stop ")
	if c.done[1] != "continue "+stopped || !slices.Contains(c.services, a.Nodes[0]) {
		t.Errorf("done %v on %v", c.done, a.Nodes)
	}
}

// A container whose manifest names no process cannot be struck.
func TestPauseProcessNeedsANamedProcess(t *testing.T) {
	c := &services{services: []string{"store"}}
	c.noProcesses = true
	if _, err := catalogue["pause-process-one"].inject(context.Background(), c, rand.New(rand.NewPCG(1, 2))); err == nil {
		t.Error("struck a node whose manifest names no process")
	}
}

// The three orders of a rolling restart, each drawn: the leader first,
// last, or wherever it falls; every node exactly once.
func TestRollOrders(t *testing.T) {
	nodes := []string{"n1", "n2", "n3", "n4", "n5"}
	seen := map[string]bool{}
	for seed := range uint64(60) {
		order, how := rollOrder(nodes, "n4", rand.New(rand.NewPCG(seed, 1)))
		seen[how] = true
		if !slices.Equal(slices.Sorted(slices.Values(order)), nodes) {
			t.Fatalf("seed %d: order %v is not every node once", seed, order)
		}
		switch how {
		case leaderFirst:
			if order[0] != "n4" {
				t.Fatalf("seed %d: %s, but %v", seed, how, order)
			}
		case leaderLast:
			if order[len(order)-1] != "n4" {
				t.Fatalf("seed %d: %s, but %v", seed, how, order)
			}
		}
	}
	if len(seen) != 3 {
		t.Errorf("drew only %v", seen)
	}
}

// A rolling restart stops each node, starts it and waits for its health
// before the next; the first stop is the strike, the rest its toggles,
// and the heal returns once the last node is healthy.
func TestRestartRollingTakesEachNodeInTurn(t *testing.T) {
	ctx := context.Background()
	c := &services{}
	a, err := catalogue["restart-rolling"].inject(ctx, c, rand.New(rand.NewPCG(1, 2)))
	if err != nil || len(a.Nodes) != 3 {
		t.Fatalf("got %+v, %v", a, err)
	}
	var toggles []string
	for tg := range a.Toggles {
		if tg.Err != nil {
			t.Error(tg.Err)
		}
		toggles = append(toggles, tg.What)
	}
	if err := a.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, n := range a.Nodes {
		want = append(want, "stop "+n, "restart "+n, "healthy "+n)
	}
	if !slices.Equal(c.done, want) {
		t.Errorf("done %v, want %v", c.done, want)
	}
	if len(toggles) != 5 || !strings.HasPrefix(toggles[0], a.Nodes[0]+" started again") || !strings.HasPrefix(toggles[1], a.Nodes[1]+" stopped") {
		t.Errorf("toggles %q", toggles)
	}
}

// A service's rolling restart takes the members of one service in turn,
// its leader first or last where the manifest's command names it;
// stop-service stops one member and starts it at heal.
func TestServiceDeploys(t *testing.T) {
	ctx := context.Background()
	zk := ServiceCluster{Name: "zk", Members: []string{"zk1", "zk2", "zk3"}}
	for seed := range uint64(12) {
		c := &services{services: zk.Members, clusters: []ServiceCluster{zk}, leader: "zk2"}
		a, err := catalogue["restart-rolling-service"].inject(ctx, c, rand.New(rand.NewPCG(seed, 2)))
		if err != nil {
			t.Fatal(err)
		}
		for range a.Toggles {
		}
		if err := a.Heal(ctx); err != nil {
			t.Fatal(err)
		}
		if got := slices.Sorted(slices.Values(a.Nodes)); !slices.Equal(got, zk.Members) {
			t.Fatalf("rolled %v, want every member of zk", a.Nodes)
		}
		if strings.Contains(a.What, leaderFirst) && a.Nodes[0] != "zk2" || strings.Contains(a.What, leaderLast) && a.Nodes[2] != "zk2" {
			t.Errorf("%q: the service's leader out of its place", a.What)
		}
		if len(c.done) != 9 || c.done[0] != "stop "+a.Nodes[0] || c.done[2] != "healthy "+a.Nodes[0] {
			t.Errorf("done %v", c.done)
		}
	}
	if _, err := catalogue["restart-rolling-service"].inject(ctx, &services{}, rand.New(rand.NewPCG(1, 2))); err == nil {
		t.Error("rolled a target with no services")
	}

	c := &services{services: zk.Members}
	f := catalogue["stop-service"]
	a, err := f.inject(ctx, c, rand.New(rand.NewPCG(1, 2)))
	if err != nil || len(a.Nodes) != 1 || !f.OnServices || f.Family != "service" || f.Kind != Stop {
		t.Fatalf("%+v %v (%+v)", a, err, f)
	}
	a.Heal(ctx)
	if want := []string{"stop " + a.Nodes[0], "restart " + a.Nodes[0]}; !slices.Equal(c.done, want) {
		t.Errorf("done %v, want %v", c.done, want)
	}
}

// stop-leader stops the leader gracefully and starts it at heal.
func TestStopLeaderStopsAndStartsTheLeader(t *testing.T) {
	ctx := context.Background()
	c := &services{}
	a, err := catalogue["stop-leader"].inject(ctx, c, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	a.Heal(ctx)
	if want := []string{"stop n2", "restart n2"}; !slices.Equal(c.done, want) || a.What != "stopped n2 (leader n2)" {
		t.Errorf("done %v (%q), want %v", c.done, a.What, want)
	}
}

// pause-process-gc stops the leader's JVM and lets it run, over and over,
// until its heal, which leaves it running; a node with no JVM refuses it.
func TestPauseProcessGCCollectsOverAndOver(t *testing.T) {
	ctx := context.Background()
	if _, err := catalogue["pause-process-gc"].inject(ctx, &services{}, rand.New(rand.NewPCG(1, 2))); err == nil {
		t.Error("struck a node with no JVM")
	}
	c := &services{procs: []string{"app", JVM}}
	a, err := catalogue["pause-process-gc"].inject(ctx, c, rand.New(rand.NewPCG(1, 2)))
	if err != nil || !strings.HasPrefix(a.What, "n2's JVM in long collections, over and over: collecting ") {
		t.Fatalf("got %+v, %v", a, err)
	}
	time.Sleep(gcPeriod(rand.New(rand.NewPCG(1, 2)), true) + 200*time.Millisecond) // the first collection ends
	if err := a.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	var toggles int
	for range a.Toggles {
		toggles++
	}
	if toggles == 0 || c.done[0] != "stop java in n2" || c.done[len(c.done)-1] != "continue java in n2" {
		t.Errorf("%d toggles; done %v", toggles, c.done)
	}
	for i, d := range c.done {
		if want := map[bool]string{true: "stop java in n2", false: "continue java in n2"}[i%2 == 0]; d != want && i != len(c.done)-1 {
			t.Errorf("step %d: %s, want %s", i, d, want)
		}
	}
}
