package nemesis

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/history"
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
	aim := shortFlapAim(t)
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
	var toggles []bool
	for st := range a.Toggles { // closed by the heal
		toggles = append(toggles, st.Cut)
	}
	if !slices.Equal(toggles, []bool{false, true}) {
		t.Errorf("told of toggles %v, want its heal and its cut again (false, true)", toggles)
	}
	for _, p := range periods {
		if p < minFlap || p > maxFlap {
			t.Errorf("period %s out of %s-%s", p, minFlap, maxFlap)
		}
	}
}

// shortFlapAim is an aim whose flap's first two periods are short, so
// that a test sees a heal and a cut again in a second or two.
func shortFlapAim(t *testing.T) uint64 {
	t.Helper()
	ctx := context.Background()
	for aim := uint64(0); ; aim++ {
		a, _ := flap.inject(ctx, &services{}, rand.New(rand.NewPCG(aim, aimStream)))
		b, _ := flap.inject(ctx, &services{}, rand.New(rand.NewPCG(aim, aimStream)))
		_, _ = a.Heal(ctx), b.Heal(ctx)
		if a.What != b.What {
			t.Fatalf("aim %d flaps two ways: %q and %q", aim, a.What, b.What)
		}
		p := flapPeriods(rand.New(rand.NewPCG(aim, aimStream)))
		if p[0]+p[1] < 1500*time.Millisecond {
			return aim
		}
	}
}

// The history shows each of a flap's cuts and heals, as an injection and a
// heal of its name, between the flap's first injection and its heal.
func TestFlapWritesDownEachCut(t *testing.T) {
	aim := shortFlapAim(t)
	periods := flapPeriods(rand.New(rand.NewPCG(aim, aimStream)))
	path := filepath.Join(t.TempDir(), "h.jsonl")
	rec, err := history.NewRecorder(path, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// Past the second toggle by a margin a loaded machine keeps; a third
	// (a heal) may come within it.
	hold := periods[0] + periods[1] + 700*time.Millisecond
	e := Explicit{Faults: []Timed{{At: 0.01, Fault: "flap", For: hold.Seconds(), Aim: aim}}}
	n := New(OfExplicit(e), []Fault{flap}, 1, &services{}, rec)
	ctx, cancel := context.WithTimeout(context.Background(), hold+time.Second)
	defer cancel()
	n.Run(ctx)
	rec.Close()
	h, err := history.ReadFile(path, history.ReadEvents)
	if err != nil {
		t.Fatal(err)
	}
	var phases []string
	for _, ev := range h {
		if ev.Type == history.Nemesis && ev.F == "flap" {
			phases = append(phases, string(ev.Phase))
		}
	}
	if len(phases) < 4 || !slices.Equal(phases[:3], []string{"inject", "heal", "inject"}) || phases[len(phases)-1] != "heal" {
		t.Errorf("the history shows the flap as %v, want inject, heal, inject, then heals", phases)
	}
}
