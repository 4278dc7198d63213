package nemesis

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// A packet fault impairs every link of the nodes it draws, to every node,
// service member and the resource, named by both ends between nodes,
// within its range, and its heal clears it.
func TestPacketFaultsImpairEveryLinkOfTheirNodes(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"packet-loss", "packet-delay", "packet-slow"} {
		for seed := range uint64(200) {
			c := &services{services: []string{"store"}}
			a, err := catalogue[name].inject(ctx, c, rand.New(rand.NewPCG(seed, aimStream)))
			if err != nil || len(a.Nodes) == 0 {
				t.Fatalf("%s: %+v %v", name, a, err)
			}
			for _, n := range c.Nodes() {
				want := slices.DeleteFunc([]string{"n1", "n2", "n3", "store", GrudgeResource}, func(o string) bool { return o == n })
				if !slices.Contains(a.Nodes, n) {
					want = a.Nodes
				}
				if got := c.impaired[n].All; !slices.Equal(sortedSet(got), sortedSet(want)) {
					t.Fatalf("%s seed %d hit %v: %s's links %v, want %v", name, seed, a.Nodes, n, got, want)
				}
			}
			if h := c.how; h.LossPercent < 0 || h.LossPercent > maxLoss || h.Delay > maxDelay || h.Jitter > h.Delay/2 ||
				(h.Rate != 0 && (h.Rate < minRate || h.Rate > maxRate)) || (h.LossPercent == 0 && h.Delay < minDelay && h.Rate == 0) {
				t.Fatalf("%s seed %d: %+v out of range", name, seed, h)
			}
			if err := a.Heal(ctx); err != nil || c.impaired != nil || c.how != (Impairment{}) {
				t.Fatalf("%s: heal left %v %+v (%v)", name, c.impaired, c.how, err)
			}
		}
	}
}

// A flap cuts the leader from every other node at once, heals it and
// cuts it again, each after the periods its aim draws, the same for the
// same aim, and its heal leaves no cut.
func TestFlapCutsAndHealsOverAndOver(t *testing.T) {
	ctx := context.Background()
	// An aim whose first two periods are short, so the test sees a heal
	// and a cut again in a second or two.
	var aim uint64
	for ; ; aim++ {
		c := &services{}
		a, _ := flap.inject(ctx, c, rand.New(rand.NewPCG(aim, aimStream)))
		b, _ := flap.inject(ctx, &services{}, rand.New(rand.NewPCG(aim, aimStream)))
		_ = a.Heal(ctx)
		if a.What != b.What {
			t.Fatalf("aim %d flaps two ways: %q and %q", aim, a.What, b.What)
		}
		p := flapPeriods(rand.New(rand.NewPCG(aim, aimStream)))
		if p[0]+p[1] < 1500*time.Millisecond {
			break
		}
	}
	periods := flapPeriods(rand.New(rand.NewPCG(aim, aimStream)))
	c := &services{}
	a, err := flap.inject(ctx, c, rand.New(rand.NewPCG(aim, aimStream)))
	if err != nil || !slices.Equal(a.Nodes, []string{"n2"}) {
		t.Fatalf("%+v %v", a, err)
	}
	grudge := func() Grudge {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.grudge
	}
	cut := IsolateNode(c.Nodes(), "n2")
	if g := grudge(); g.String() != cut.String() {
		t.Fatalf("struck: %v, want %v", g, cut)
	}
	time.Sleep(periods[0] + periods[1]/2)
	if g := grudge(); len(g) != 0 {
		t.Fatalf("after the first cut (%s): %v, want healed", periods[0], g)
	}
	time.Sleep(periods[1]/2 + 300*time.Millisecond)
	if g := grudge(); g.String() != cut.String() {
		t.Fatalf("after the first heal (%s): %v, want cut again", periods[1], g)
	}
	if err := a.Heal(ctx); err != nil || len(grudge()) != 0 {
		t.Fatalf("heal: %v, %v", grudge(), err)
	}
	for _, p := range periods {
		if p < minFlap || p > maxFlap {
			t.Errorf("period %s out of %s-%s", p, minFlap, maxFlap)
		}
	}
}
