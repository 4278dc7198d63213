package nemesis

import (
	"context"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestLinksGrudge(t *testing.T) {
	for _, tc := range []struct {
		links Links
		want  Grudge
	}{
		{Links{From: []string{"zk1"}, To: []string{"zk2", "zk3"}, Way: Both}, Grudge{
			"zk1": {All: []string{"zk2", "zk3"}},
			"zk2": {All: []string{"zk1"}},
			"zk3": {All: []string{"zk1"}},
		}},
		// One way: the receivers drop, the sender drops nothing.
		{Links{From: []string{"n1"}, To: []string{"zk1", "zk2"}, Way: Packets}, Grudge{
			"n1":  {},
			"zk1": {In: []string{"n1"}},
			"zk2": {In: []string{"n1"}},
		}},
		{Links{From: []string{"zk1", "zk2"}, To: []string{"n1"}, Way: Connections}, Grudge{
			"n1":  {New: []string{"zk1", "zk2"}},
			"zk1": {},
			"zk2": {},
		}},
		// A container on both sides is never cut from itself.
		{Links{From: []string{"a", "b"}, To: []string{"b", "c"}, Way: Both}, Grudge{
			"a": {All: []string{"b", "c"}},
			"b": {All: []string{"a", "c"}},
			"c": {All: []string{"a", "b"}},
		}},
	} {
		if got := tc.links.Grudge(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%v: grudge %v, want %v", tc.links, got, tc.want)
		}
	}
}

func TestLinksInWords(t *testing.T) {
	for _, tc := range []struct {
		links Links
		want  string
	}{
		{Links{From: []string{"zk1"}, To: []string{"zk2", "zk3"}, Way: Both}, "zk1 | zk2,zk3"},
		{Links{From: []string{"n1"}, To: []string{"zk1", "zk2"}, Way: Packets}, "n1 -/-> zk1,zk2 at the packet level"},
		{Links{From: []string{"n1"}, To: []string{"zk1"}, Way: Connections}, "n1 -/-> zk1 at the connection level"},
	} {
		if got := tc.links.String(); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%v says %q, want it to begin %q", tc.links, got, tc.want)
		}
		// The grudge says the same of itself.
		if got := tc.links.Grudge().String(); !strings.HasPrefix(got, strings.ReplaceAll(tc.want, ",", " ")) && !strings.HasPrefix(got, tc.want) {
			t.Errorf("%v's grudge says %q, want it to begin %q", tc.links, got, tc.want)
		}
	}
}

func TestSplit(t *testing.T) {
	members := []string{"zk1", "zk2", "zk3", "zk4", "zk5"}
	minority, majority := Split(members, "zk4", rand.New(rand.NewPCG(1, 2)))
	if !slices.Equal(minority, []string{"zk4"}) || !slices.Equal(majority, []string{"zk1", "zk2", "zk3", "zk5"}) {
		t.Errorf("the known leader: %v | %v", minority, majority)
	}
	for seed := range uint64(20) {
		minority, majority := Split(members, "", rand.New(rand.NewPCG(seed, 2)))
		all := slices.Sorted(slices.Values(append(slices.Clone(minority), majority...)))
		if len(minority) != 2 || !slices.Equal(all, members) {
			t.Errorf("seed %d: %v | %v", seed, minority, majority)
		}
	}
	if minority, majority := Split([]string{"a", "b"}, "", rand.New(rand.NewPCG(1, 2))); len(minority) != 1 || len(majority) != 1 {
		t.Errorf("two members: %v | %v", minority, majority)
	}
}

func TestZones(t *testing.T) {
	services := []ServiceCluster{
		{Name: "zk", Members: []string{"zk1", "zk2", "zk3"}, Hosts: []string{"", "", ""}},
		{Name: "sentinel", Members: []string{"sentinel1", "sentinel2"}, Hosts: []string{"n1", "n2"}},
	}
	got := Zones([]string{"n1", "n2", "n3", "n4", "n5"}, services, 3)
	want := [][]string{
		{"n1", "n4", "zk1", "sentinel1"},
		{"n2", "n5", "zk2", "sentinel2"},
		{"n3", "zk3"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("zones %v, want %v", got, want)
	}
	if rest := Rest(got, 2); !slices.Equal(rest, append(slices.Clone(want[0]), want[1]...)) {
		t.Errorf("rest of zone 3: %v", rest)
	}
	if services[0].Apart() == false || services[1].Apart() {
		t.Error("Apart is wrong")
	}
}

// The faults on a service's links: whom they cut, which way, said how.
func TestServiceLinkFaults(t *testing.T) {
	ctx := context.Background()
	zk := ServiceCluster{Name: "zk", Members: []string{"zk1", "zk2", "zk3"}, Hosts: make([]string, 3)}
	c := &services{services: zk.Members, clusters: []ServiceCluster{zk}, leader: "zk3"}

	a, err := catalogue["partition-service-members"].inject(ctx, c, rand.New(rand.NewPCG(1, 2)))
	if err != nil || a.What != "zk3 | zk1,zk2 (zk3 led zk)" {
		t.Fatalf("partition-service-members: %+v %v", a, err)
	}
	if !slices.Equal(c.grudge["zk3"].All, []string{"zk1", "zk2"}) || slices.ContainsFunc(c.Nodes(), func(n string) bool { _, ok := c.grudge[n]; return ok }) {
		t.Errorf("partition-service-members: grudge %v touches nodes, or does not isolate zk3", c.grudge)
	}
	if a.Heal(ctx); c.grudge != nil {
		t.Errorf("healed to %v", c.grudge)
	}

	a, err = catalogue["partition-zones"].inject(ctx, c, rand.New(rand.NewPCG(1, 2)))
	if err != nil || !strings.HasPrefix(a.What, "zone ") || len(c.grudge) != 6 {
		t.Fatalf("partition-zones: %+v, grudge %v, %v", a, c.grudge, err)
	}
	a.Heal(ctx)

	// The leader's zone, whatever the draw: n2, with zk2, is zone 2 of 3.
	for seed := range uint64(8) {
		a, err = catalogue["partition-leader-zone"].inject(ctx, c, rand.New(rand.NewPCG(seed, 2)))
		if err != nil || a.What != "zone 2 of 3 cut off (n2's): n2,zk2 | n1,zk1,n3,zk3" || !slices.Contains(c.grudge["n2"].All, "zk3") {
			t.Fatalf("partition-leader-zone: %+v, grudge %v, %v", a, c.grudge, err)
		}
		a.Heal(ctx)
	}

	// Every way and direction comes up, always between the leader and
	// the members, one way.
	seen := map[string]bool{}
	for seed := range uint64(16) {
		a, err := catalogue["partition-service-oneway"].inject(ctx, c, rand.New(rand.NewPCG(seed, 2)))
		if err != nil {
			t.Fatal(err)
		}
		seen[a.What[:strings.Index(a.What, " at ")]+" "+strings.Fields(a.What[strings.Index(a.What, " at "):])[2]] = true
		for holder, d := range c.grudge {
			if len(d.All)+len(d.Initiated) > 0 || (holder != "n2" && !slices.Contains(zk.Members, holder)) {
				t.Errorf("%s: %s drops %+v", a.What, holder, d)
			}
		}
	}
	for _, want := range []string{"n2 -/-> zk1,zk2,zk3 packet", "n2 -/-> zk1,zk2,zk3 connection", "zk1,zk2,zk3 -/-> n2 packet", "zk1,zk2,zk3 -/-> n2 connection"} {
		if !seen[want] {
			t.Errorf("never drew %q (drew %v)", want, seen)
		}
	}
}

// The service family holds partition-service-members only for a target
// it can strike; named, the faults on a service's links are refused
// where they cannot strike.
func TestServiceFamilyByShape(t *testing.T) {
	names := func(shape *Shape) []string {
		g, err := ExpandFor([]string{"service"}, shape)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range g[0] {
			out = append(out, f.Name)
		}
		return out
	}
	zk := ServiceCluster{Name: "zk", Members: []string{"zk1", "zk2", "zk3"}, Hosts: make([]string, 3)}
	one := ServiceCluster{Name: "redis", Members: []string{"redis"}, Hosts: []string{""}}
	beside := ServiceCluster{Name: "sentinel", Members: []string{"sentinel1", "sentinel2"}, Hosts: []string{"n1", "n2"}}
	if got := names(&Shape{Services: []ServiceCluster{zk}}); !slices.Equal(got, []string{"kill-service", "pause-service", "partition-service", "partition-service-members"}) {
		t.Errorf("zk: %v", got)
	}
	if got := names(&Shape{Services: []ServiceCluster{one}}); !slices.Equal(got, []string{"kill-service", "pause-service", "partition-service"}) {
		t.Errorf("one redis: %v", got)
	}
	if got := names(&Shape{Services: []ServiceCluster{beside}}); !slices.Equal(got, families["service"]) {
		t.Errorf("sentinels beside the nodes: %v", got)
	}
	_, err := ExpandFor([]string{"partition-service-members"}, &Shape{Services: []ServiceCluster{one}})
	if err == nil || !strings.Contains(err.Error(), "two members or more") {
		t.Errorf("partition-service-members on one redis: %v", err)
	}
	_, err = ExpandFor([]string{"partition-service-oneway"}, &Shape{Services: []ServiceCluster{beside}})
	if err == nil || !strings.Contains(err.Error(), "containers of its own") {
		t.Errorf("partition-service-oneway on Sentinels beside the nodes: %v", err)
	}
	if _, err := ExpandFor([]string{"partition-zones", "partition-service-oneway"}, &Shape{Services: []ServiceCluster{one}}); err != nil {
		t.Errorf("zones and one way on one redis: %v", err)
	}
	if _, err := ExpandFor([]string{"partition-zones"}, &Shape{Services: []ServiceCluster{beside}}); err != nil {
		t.Errorf("zones of hosts with Sentinels beside their nodes: %v", err)
	}
}
