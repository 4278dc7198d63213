package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/history"
)

func TestExpand(t *testing.T) {
	groups, err := Expand([]string{"kill", " none", "", "pause-majority", "partition-ring"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range groups {
		var names []string
		for _, f := range g {
			names = append(names, f.Name)
		}
		got = append(got, strings.Join(names, "+"))
	}
	// A family's group holds each member as many times as its weight.
	if s := strings.Join(got, ","); s != "kill-leader+kill-leader+kill-leader+kill-one+kill-minority+kill-minority+kill-majority+kill-all,pause-majority,partition-ring" {
		t.Errorf("expanded to %s", s)
	}
	if g, err := ExpandFor([]string{"clock"}, &Shape{SkewableServices: true}); err != nil || len(g) != 1 || g[0][len(g[0])-1].Name != "clock-service" {
		t.Errorf("clock with service clocks: %v %v", g, err)
	}
	if fs, err := Expand([]string{"none"}); err != nil || len(fs) != 0 {
		t.Errorf("none: %v, %v", fs, err)
	}
	if _, err := Expand([]string{"meteor"}); err == nil || !strings.Contains(err.Error(), "partition") {
		t.Errorf("unknown nemesis: %v", err)
	}
	if g, err := Expand([]string{"packet", "flap"}); err != nil || len(g) != 2 || len(g[0]) != 3 || g[1][0].Name != "flap" {
		t.Errorf("packet, flap: %v, %v", g, err)
	}
	if _, err := Expand([]string{"packet-jitter"}); err == nil || !strings.Contains(err.Error(), "unknown nemesis") {
		t.Errorf("packet-jitter: %v", err)
	}
}

// Every family lists faults of its own, and every fault belongs to a
// family, has a kind, and can be injected.
func TestTaxonomy(t *testing.T) {
	for fam, names := range families {
		for _, n := range names {
			f, ok := Lookup(n)
			if !ok {
				t.Errorf("family %s names unknown fault %s", fam, n)
			} else if f.Family != fam {
				t.Errorf("family %s lists %s, of the %s family", fam, n, f.Family)
			}
		}
	}
	kinds := []Kind{Kill, Pause, Partition, Clock, Packet, PauseProcess, Stop, DiskStall, DiskFail, LoseUnsynced}
	for name, f := range catalogue {
		if f.Name != name {
			t.Errorf("%s is catalogued as %s", f.Name, name)
		}
		if !slices.Contains(kinds, f.Kind) {
			t.Errorf("%s: kind %q", name, f.Kind)
		}
		if _, ok := families[f.Family]; !ok {
			t.Errorf("%s: family %q is none of --nemesis's", name, f.Family)
		}
		if f.inject == nil {
			t.Errorf("%s: not injectable", name)
		}
		if (f.Needs != "") != (f.Kind == Packet) {
			t.Errorf("%s: kind %s, needs %q", name, f.Kind, f.Needs)
		}
	}
	type taxon struct {
		kind       Kind
		onServices bool
		family     string
	}
	for name, want := range map[string]taxon{
		"kill-leader":                 {Kill, false, "kill"},
		"kill-service":                {Kill, true, "service"},
		"kill-service-majority":       {Kill, true, "service"},
		"pause-all":                   {Pause, false, "pause"},
		"pause-service-all":           {Pause, true, "service"},
		"partition-resource":          {Partition, false, "partition"},
		"partition-service":           {Partition, true, "service"},
		"partition-service-followers": {Partition, true, "service"},
		"partition-service-members":   {Partition, true, "service"},
		"partition-zones":             {Partition, true, "service"},
		"partition-leader-zone":       {Partition, true, "service"},
		"partition-service-oneway":    {Partition, true, "service"},
		"clock-bump":                  {Clock, false, "clock"},
		"clock-service":               {Clock, true, "clock"},
		"clock-fast-service":          {Clock, true, "clock"},
		"clock-slow-leader":           {Clock, false, "clock"},
		"packet-loss":                 {Packet, false, "packet"},
		"packet-delay":                {Packet, false, "packet"},
		"packet-slow":                 {Packet, false, "packet"},
		"flap":                        {Partition, false, "flap"},
	} {
		f, ok := Lookup(name)
		if got := (taxon{f.Kind, f.OnServices, f.Family}); !ok || got != want {
			t.Errorf("%s: %+v (found %v), want %+v", name, got, ok, want)
		}
	}
	// Only exact names: not a family, not a prefix, not a name with spaces.
	for _, name := range []string{"kill", "pause", "kill-", "service", " kill-one", "packet-jitter", ""} {
		if f, ok := Lookup(name); ok {
			t.Errorf("Lookup(%q) found %s", name, f.Name)
		}
	}
}

// Kill and pause reach every node target, partition cuts every node off,
// and yet most of each family's weight leaves a side with a quorum.
func TestFamiliesReachAMajority(t *testing.T) {
	for _, tc := range []struct {
		family   string
		reach    []string // must be members
		noQuorum []string // the members after which no side can elect
	}{
		{"kill", []string{"kill-leader", "kill-one", "kill-minority", "kill-majority", "kill-all"}, []string{"kill-majority", "kill-all"}},
		{"pause", []string{"pause-leader", "pause-one", "pause-minority", "pause-majority", "pause-all"}, []string{"pause-majority", "pause-all"}},
		{"partition", []string{
			"partition-leader", "partition-one", "partition-halves", "partition-ring",
			"partition-bridge", "partition-oneway", "partition-resource", "partition-all",
		}, []string{"partition-all"}},
	} {
		members := families[tc.family]
		distinct := slices.Compact(slices.Sorted(slices.Values(members)))
		if want := slices.Sorted(slices.Values(tc.reach)); !slices.Equal(distinct, want) {
			t.Errorf("%s: distinct members %v, want %v", tc.family, distinct, want)
		}
		lost := 0
		for _, m := range members {
			if slices.Contains(tc.noQuorum, m) {
				lost++
			}
		}
		if 2*lost >= len(members) {
			t.Errorf("%s: %d of %d weights leave no quorum, want a minority of them", tc.family, lost, len(members))
		}
	}
	// partition-all cuts every node off from every other.
	c := &services{}
	a, err := catalogue["partition-all"].inject(context.Background(), c, rand.New(rand.NewPCG(1, 2)))
	if err != nil || !slices.Equal(a.Nodes, c.Nodes()) || a.What != "n1 | n2 | n3" {
		t.Fatalf("partition-all: %+v %v", a, err)
	}
	if !slices.Equal(c.grudge["n2"].All, []string{"n1", "n3"}) {
		t.Errorf("partition-all: grudge %v", c.grudge)
	}
}

// services is a cluster of three nodes and one service that records what
// is done to which container: enough to check whom a fault aims at.
type services struct {
	mu       sync.Mutex // faults hit several containers at once
	done     []string
	services []string
	grudge   Grudge
	// clusters are the services by name, when a test gives them; leader
	// is the member ServiceLeader names.
	clusters []ServiceCluster
	leader   string
	impaired Grudge
	how      Impairment
	// noProcesses: the manifest names no process a fault may stop; procs
	// are those of the nodes when it names others than etcd.
	noProcesses bool
	procs       []string
	// disks are the service members with data directories; every node
	// has one.
	disks []string
}

func (c *services) ServiceClusters() []ServiceCluster            { return c.clusters }
func (c *services) ServiceLeader(context.Context, string) string { return c.leader }
func (c *services) Zones() int                                   { return 3 }

func (c *services) Nodes() []string    { return []string{"n1", "n2", "n3"} }
func (c *services) Services() []string { return c.services }
func (c *services) SkewableServices() []string {
	return c.services[:min(1, len(c.services))] // the first, if any
}
func (c *services) Leader() string { return "n2" }
func (c *services) View() View     { return View{"n2": Leads} }
func (c *services) record(verb, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done = append(c.done, verb+" "+name)
	return nil
}
func (c *services) Kill(_ context.Context, n string) error    { return c.record("kill", n) }
func (c *services) Restart(_ context.Context, n string) error { return c.record("restart", n) }
func (c *services) Pause(_ context.Context, n string) error   { return c.record("pause", n) }
func (c *services) Resume(_ context.Context, n string) error  { return c.record("resume", n) }
func (c *services) Processes(n string) []string {
	switch {
	case c.noProcesses:
		return nil
	case strings.HasPrefix(n, "n") && c.procs != nil:
		return c.procs
	case strings.HasPrefix(n, "n"):
		return []string{"etcd"}
	}
	return []string{"java", "agent"}
}
func (c *services) StopProcess(_ context.Context, n, comm string) error {
	return c.record("stop "+comm+" in", n)
}
func (c *services) ContinueProcess(_ context.Context, n, comm string) error {
	return c.record("continue "+comm+" in", n)
}
func (c *services) Stop(_ context.Context, n string) error        { return c.record("stop", n) }
func (c *services) WaitHealthy(_ context.Context, n string) error { return c.record("healthy", n) }
func (c *services) PowerCut(_ context.Context, n string) error    { return c.record("power cut", n) }
func (c *services) Data(n string) []string {
	if slices.Contains(c.Nodes(), n) || slices.Contains(c.disks, n) {
		return []string{"/data"}
	}
	return nil
}
func (c *services) SetDisk(_ context.Context, n string, d Disk) error {
	return c.record(fmt.Sprintf("disk %+v", d), n)
}
func (c *services) Partition(_ context.Context, g Grudge) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.grudge = g
	return nil
}
func (c *services) SetClock(_ context.Context, n string, s contract.Skew) error {
	return c.record(fmt.Sprintf("clock %+v", s.Offset != 0), n)
}
func (c *services) Impair(_ context.Context, g Grudge, how Impairment) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.impaired, c.how = g, how
	return nil
}

func TestServiceFaultsAimAtServices(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	c := &services{services: []string{"store"}}
	for _, name := range []string{"kill-service", "pause-service"} {
		a, err := catalogue[name].inject(ctx, c, rng)
		if err != nil || !slices.Equal(a.Nodes, []string{"store"}) {
			t.Fatalf("%s: %+v %v", name, a, err)
		}
		if err := a.Heal(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"kill store", "restart store", "pause store", "resume store"}; !slices.Equal(c.done, want) {
		t.Errorf("done %v, want %v", c.done, want)
	}
	a, err := catalogue["partition-service"].inject(ctx, c, rng)
	if err != nil || a.What != "n2 cut from store" || !slices.Equal(c.grudge["n2"].All, []string{"store"}) || len(c.grudge) != 1 {
		t.Fatalf("partition-service: %+v, grudge %v, %v", a, c.grudge, err)
	}
	if a.Heal(ctx); c.grudge != nil {
		t.Errorf("healed to %v", c.grudge)
	}
	// The followers' cut spares the leader, n2, alone.
	a, err = catalogue["partition-service-followers"].inject(ctx, c, rng)
	if err != nil || !slices.Equal(a.Nodes, []string{"n1", "n3"}) || a.What != "n1,n3 cut from store" || len(c.grudge) != 2 ||
		!slices.Equal(c.grudge["n1"].All, []string{"store"}) || !slices.Equal(c.grudge["n3"].All, []string{"store"}) {
		t.Fatalf("partition-service-followers: %+v, grudge %v, %v", a, c.grudge, err)
	}

	none := &services{}
	for _, name := range []string{"kill-service", "pause-service", "partition-service", "partition-service-followers"} {
		if !catalogue[name].OnServices {
			t.Errorf("%s: not on services", name)
		}
		if _, err := catalogue[name].inject(ctx, none, rng); err == nil || !strings.Contains(err.Error(), "no service containers") {
			t.Errorf("%s without services: %v", name, err)
		}
	}
	if catalogue["kill-leader"].OnServices {
		t.Error("kill-leader is on services")
	}
}

// A service cluster's members are hit one, a minority, a majority or all
// at once, never a node.
func TestServiceFaultsReachMembers(t *testing.T) {
	ctx := context.Background()
	members := []string{"etcd1", "etcd2", "etcd3", "etcd4", "etcd5"}
	for name, want := range map[string]int{
		"kill-service": 1, "kill-service-minority": 2, "kill-service-majority": 3, "kill-service-all": 5,
		"pause-service": 1, "pause-service-minority": 2, "pause-service-majority": 3, "pause-service-all": 5,
	} {
		if !catalogue[name].OnServices {
			t.Errorf("%s: not on services", name)
		}
		c := &services{services: members}
		a, err := catalogue[name].inject(ctx, c, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(a.Nodes) != want || len(c.done) != want {
			t.Errorf("%s hit %v, want %d members", name, a.Nodes, want)
		}
		for _, n := range a.Nodes {
			if !slices.Contains(members, n) {
				t.Errorf("%s hit %s, not a member", name, n)
			}
		}
	}
}

// clock-service skews a service whose clock can be skewed, and heals it.
func TestClockServiceSkewsAService(t *testing.T) {
	ctx := context.Background()
	c := &services{services: []string{"redis", "cache"}}
	a, err := catalogue["clock-service"].inject(ctx, c, rand.New(rand.NewPCG(1, 2)))
	if err != nil || !slices.Equal(a.Nodes, []string{"redis"}) {
		t.Fatalf("%+v %v", a, err)
	}
	a.Heal(ctx)
	if want := []string{"clock true redis", "clock false redis"}; !slices.Equal(c.done, want) {
		t.Errorf("done %v, want %v", c.done, want)
	}
	if _, err := catalogue["clock-service"].inject(ctx, &services{}, rand.New(rand.NewPCG(1, 2))); err == nil {
		t.Error("skewed a service that cannot be")
	}
}

// rates is services keeping each container's last skew.
type rates struct {
	services
	skews map[string]contract.Skew
}

func (c *rates) SetClock(_ context.Context, n string, s contract.Skew) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.skews[n] = s
	return nil
}

// clock-fast-service runs the services whose clocks can be skewed, and
// no other container, at one rate of 4-8x, and heals them to true time.
func TestClockFastServiceRunsServicesFast(t *testing.T) {
	ctx := context.Background()
	c := &rates{services: services{services: []string{"etcd-1", "etcd-2"}}, skews: map[string]contract.Skew{}}
	a, err := catalogue["clock-fast-service"].inject(ctx, c, rand.New(rand.NewPCG(1, 2)))
	if err != nil || !slices.Equal(a.Nodes, []string{"etcd-1"}) {
		t.Fatalf("%+v %v", a, err)
	}
	if s := c.skews["etcd-1"]; len(c.skews) != 1 || s.Rate < 4 || s.Rate > 8 || s.Offset != 0 {
		t.Errorf("skews %+v, want etcd-1 alone at 4-8x", c.skews)
	}
	if err := a.Heal(ctx); err != nil || c.skews["etcd-1"] != (contract.Skew{}) {
		t.Errorf("healed to %+v (%v), want true time", c.skews["etcd-1"], err)
	}
	if _, err := catalogue["clock-fast-service"].inject(ctx, &services{}, rand.New(rand.NewPCG(1, 2))); err == nil {
		t.Error("ran a service fast that cannot be")
	}
}

// answering is a services cluster whose three nodes all answer, n2
// leading.
type answering struct{ *services }

func (c answering) View() View { return View{"n1": Follows, "n2": Leads, "n3": Follows} }

// A schedule bounded by its faults strikes and heals each, then is spent
// once the cluster has been steady for its Steady; with a node that never
// answers again it is never spent.
func TestBoundedRunIsSpent(t *testing.T) {
	pace := Pace{Settle: 20 * time.Millisecond, Wait: 60 * time.Millisecond, React: 30 * time.Millisecond}
	run := func(c Cluster, d time.Duration) (*Nemesis, bool) {
		rec, err := history.NewRecorder(filepath.Join(t.TempDir(), "history.jsonl"), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		defer rec.Close()
		ctx, cancel := context.WithTimeout(context.Background(), d)
		n := New(Bounded([][]string{{"kill-service"}}, 2, pace, 0, 1), []Fault{catalogue["kill-service"]}, 1, c, rec)
		done := make(chan struct{})
		go func() { defer close(done); n.Run(ctx) }()
		defer func() { cancel(); <-done }()
		select {
		case <-n.Spent():
			return n, true
		case <-ctx.Done():
			return n, false
		}
	}
	c := &services{services: []string{"store"}}
	n, spent := run(answering{c}, 5*time.Second)
	if !spent || n.Healed() != 2 {
		t.Fatalf("spent %v after %d faults healed, want spent after 2", spent, n.Healed())
	}
	if want := []string{"kill store", "restart store", "kill store", "restart store"}; !slices.Equal(c.done, want) {
		t.Errorf("done %v, want %v", c.done, want)
	}
	// n1 and n3 never answer: the faults are struck anyway after Wait,
	// but the cluster is never steady after the last.
	if _, spent := run(&services{services: []string{"store"}}, 500*time.Millisecond); spent {
		t.Error("spent with two nodes silent")
	}
}
