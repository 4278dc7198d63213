package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/nemesis"
	"github.com/splitbrain/splitbrain/nemesis/netfilter"
)

// rulesAt reads back the rules in name's packet filter, as the kernel
// holds them.
func rulesAt(t *testing.T, c *cluster, name string) netfilter.Rules {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://%s/rules", netip.AddrPortFrom(c.ips[name], netfilter.Port)))
	if err != nil {
		t.Fatalf("rules of %s: %v", name, err)
	}
	defer resp.Body.Close()
	var r netfilter.Rules
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("rules of %s: %s", name, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	return r
}

// The cuts of links inside a service and between a node and a service,
// on a real cluster: three raft nodes and three stores in containers of
// their own, each with a packet filter because the run may cut them.
func TestServiceLinksTakeEffect(t *testing.T) {
	c := startTestClusterFor(t, "testdata/members", "partition-service-members", "partition-zones", "partition-service-oneway")
	ctx := context.Background()
	const store = 2379 // the stores' port, in testdata/members
	port := c.port
	for _, m := range c.Services() {
		if c.sidecars[m] == "" {
			t.Fatalf("%s has no packet filter: %v", m, c.sidecars)
		}
	}
	cut := func(l nemesis.Links) {
		t.Helper()
		if err := c.Partition(ctx, l.Grudge()); err != nil {
			t.Fatal(err)
		}
	}
	heal := func() {
		if err := c.Partition(ctx, nil); err != nil {
			t.Fatal(err)
		}
		for _, n := range append(c.Nodes(), c.Services()...) {
			if r := rulesAt(t, c, n); !r.Empty() {
				t.Errorf("healed %s keeps %s", n, r)
			}
		}
	}

	t.Run("a member split from the others; the nodes keep every link", func(t *testing.T) {
		cut(nemesis.Links{From: []string{"store1"}, To: []string{"store2", "store3"}, Way: nemesis.Both})
		defer heal()
		if reachable(t, c, "store1", "store2", store) || reachable(t, c, "store3", "store1", store) {
			t.Error("store1 and the others still reach each other")
		}
		if !reachable(t, c, "store2", "store3", store) {
			t.Error("store2 no longer reaches store3")
		}
		for _, n := range c.Nodes() {
			if !reachable(t, c, n, "store1", store) || !reachable(t, c, n, "store2", store) || !reachable(t, c, n, "n1", port) {
				t.Errorf("%s lost a link", n)
			}
		}
	})

	t.Run("a node's packets to the service dropped one way: each member drops them on receipt", func(t *testing.T) {
		cut(nemesis.Links{From: []string{"n1"}, To: c.Services(), Way: nemesis.Packets})
		defer heal()
		if reachable(t, c, "n1", "store2", store) {
			t.Error("n1 opened a connection to store2")
		}
		if !reachable(t, c, "n2", "store2", store) || !reachable(t, c, "n1", "n2", port) {
			t.Error("the cut reached further than n1 to the stores")
		}
		// A TCP probe needs both ways: which side drops is in the rules.
		if r := rulesAt(t, c, "store2"); !slices.Equal(r.Drop, []netip.Addr{c.ips["n1"]}) || len(r.DropTo)+len(r.DropNew) > 0 {
			t.Errorf("store2 holds %s, want n1's packets dropped on receipt only", r)
		}
		if r := rulesAt(t, c, "n1"); !r.Empty() {
			t.Errorf("n1 holds %s, want nothing: its packets leave", r)
		}
	})

	t.Run("the service's new connections to a node refused; the node's to them go on", func(t *testing.T) {
		cut(nemesis.Links{From: c.Services(), To: []string{"n1"}, Way: nemesis.Connections})
		defer heal()
		if reachable(t, c, "store1", "n1", port) || reachable(t, c, "store3", "n1", port) {
			t.Error("a store opened a connection to n1")
		}
		if !reachable(t, c, "n1", "store1", store) || !reachable(t, c, "store1", "n2", port) {
			t.Error("the cut reached past the stores' new connections to n1")
		}
		// The kernel hands back the conntrack rule the filter wrote.
		if r := rulesAt(t, c, "n1"); len(r.DropNew) != 3 || len(r.Drop)+len(r.DropTo) > 0 {
			t.Errorf("n1 holds %s, want the three stores' new connections refused", r)
		}
	})

	t.Run("a node's new connections to the service refused, the other way open", func(t *testing.T) {
		cut(nemesis.Links{From: []string{"n2"}, To: c.Services(), Way: nemesis.Connections})
		defer heal()
		if reachable(t, c, "n2", "store1", store) {
			t.Error("n2 opened a connection to store1")
		}
		if !reachable(t, c, "store1", "n2", port) {
			t.Error("store1 cannot open a connection to n2")
		}
	})

	t.Run("a zone cut from the rest; every zone still reaches the resource", func(t *testing.T) {
		zones := nemesis.Zones(c.Nodes(), c.ServiceClusters(), c.Zones())
		if want := [][]string{{"n1", "store1"}, {"n2", "store2"}, {"n3", "store3"}}; fmt.Sprint(zones) != fmt.Sprint(want) {
			t.Fatalf("zones %v, want %v", zones, want)
		}
		cut(nemesis.Links{From: zones[0], To: nemesis.Rest(zones, 0), Way: nemesis.Both})
		defer heal()
		if reachable(t, c, "n1", "n2", port) || reachable(t, c, "n1", "store2", store) || reachable(t, c, "store1", "store3", store) || reachable(t, c, "n3", "store1", store) {
			t.Error("zone 1 still reaches another zone")
		}
		if !reachable(t, c, "n1", "store1", store) || !reachable(t, c, "n2", "store3", store) {
			t.Error("a zone was cut inside")
		}
		for _, n := range []string{"n1", "store1", "n3"} {
			if !reachable(t, c, n, "resource", resourcePort) {
				t.Errorf("%s lost the resource", n)
			}
		}
	})

	t.Run("a restarted member stays cut", func(t *testing.T) {
		cut(nemesis.Links{From: []string{"store2"}, To: []string{"store1", "store3"}, Way: nemesis.Both})
		defer heal()
		if err := c.Kill(ctx, "store2"); err != nil {
			t.Fatal(err)
		}
		if err := c.Restart(ctx, "store2"); err != nil {
			t.Fatal(err)
		}
		if _, err := waitAll(ctx, []string{"store2"}, 10*time.Second, func(string) string {
			return fmt.Sprintf("http://%s/health", netip.AddrPortFrom(c.ips["store2"], store))
		}); err != nil {
			t.Fatal(err)
		}
		if reachable(t, c, "store2", "store1", store) {
			t.Error("restarted store2 escapes its partition")
		}
		if !reachable(t, c, "n1", "store2", store) {
			t.Error("n1 does not reach the restarted store2")
		}
	})
}

// A run with no fault on a service's links gives its members no packet
// filter: only the nodes pay for one.
func TestNoMemberFiltersUnlessCut(t *testing.T) {
	c := startTestClusterFor(t, "testdata/members", "partition-service")
	if got := slices.Sorted(func(yield func(string) bool) {
		for n := range c.sidecars {
			if !yield(n) {
				return
			}
		}
	}); !slices.Equal(got, c.Nodes()) {
		t.Errorf("packet filters beside %v, want the nodes only", got)
	}
}

// ZooKeeper's leader is found through the manifest's leader command, and
// cut from the other servers it is replaced by one of them.
func TestServiceLeaderIsolated(t *testing.T) {
	c := startTestClusterFor(t, "../targets/zk-election", "partition-service-members")
	ctx := context.Background()
	leader := ""
	for deadline := time.Now().Add(20 * time.Second); leader == "" && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		leader = c.ServiceLeader(ctx, "zk")
	}
	if leader == "" {
		t.Fatal("no ZooKeeper server says it leads")
	}
	others := slices.DeleteFunc(slices.Clone(c.Services()), func(m string) bool { return m == leader })
	if err := c.Partition(ctx, nemesis.Links{From: []string{leader}, To: others, Way: nemesis.Both}.Grudge()); err != nil {
		t.Fatal(err)
	}
	defer c.Partition(ctx, nil)
	next := ""
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if next = c.ServiceLeader(ctx, "zk"); next != "" && next != leader {
			break
		}
	}
	if next == "" || next == leader {
		t.Fatalf("%s cut from %v: the leader is now %q", leader, others, next)
	}
	for _, n := range c.Nodes() {
		if !reachable(t, c, n, leader, 2181) {
			t.Errorf("%s lost the isolated %s", n, leader)
		}
	}
}
