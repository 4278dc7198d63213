package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/nemesis"
	"github.com/splitbrain/splitbrain/nemesis/netfilter"
	"github.com/splitbrain/splitbrain/results"
)

// startTestCluster starts a 3-node cluster of the target in targetDir
// ("": raft) with packet-filter sidecars, and tears it down at the end of
// the test.
func startTestCluster(t *testing.T, targetDir string) *cluster {
	t.Helper()
	return startTestClusterFor(t, targetDir, "partition-one")
}

// startTestClusterFor is startTestCluster for a run whose --nemesis is
// faults, which decide the sidecars it starts.
func startTestClusterFor(t testing.TB, targetDir string, faults ...string) *cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts containers")
	}
	cfg := DefaultConfig()
	cfg.RepoRoot, cfg.TargetsRoot, cfg.ResultsDir = "..", "../targets", t.TempDir()
	cfg.TargetDir = targetDir
	cfg.Nodes = 3
	cfg.Nemesis = faults
	r, err := prepare(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if r.docker, err = ConnectDocker(ctx); err != nil {
		t.Fatal(err)
	}
	if r.dir, err = (results.Store{Root: t.TempDir()}).Create(r.info.ID); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.teardown(ctx); err != nil {
			t.Error(err)
		}
		// As harnesstest.NothingLeft, which this package cannot import.
		if left, err := r.docker.Remove(ctx, LabelRun+"="+r.info.ID); err != nil || left.Containers+left.Networks > 0 {
			t.Errorf("left behind: %+v, %v", left, err)
		} else if len(left.Stuck) > 0 {
			t.Logf("the Engine would not remove network %v (moby/moby#17217)", left.Stuck)
		}
		r.docker.Close()
	})
	if err := r.buildImages(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.startCluster(ctx); err != nil {
		t.Fatal(err)
	}
	return r.cluster
}

// reachable asks from's sidecar whether from can open a TCP connection to
// port of to, by to's address.
func reachable(t *testing.T, c *cluster, from, to string, port int) bool {
	t.Helper()
	return reaches(t, c, from, fmt.Sprintf("%s:%d", c.ips[to], port))
}

// reaches asks node's sidecar whether node can open a TCP connection to
// addr, a host name resolved in node's namespace, or an address.
func reaches(t *testing.T, c *cluster, node, addr string) bool {
	t.Helper()
	url := fmt.Sprintf("http://%s:%d/probe?addr=%s", c.ips[node], netfilter.Port, addr)
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("probe from %s: %v", node, err)
	}
	defer resp.Body.Close()
	var ans struct{ Reachable bool }
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
		t.Fatal(err)
	}
	return ans.Reachable
}

// sidecarRules are the rules node's sidecar reads back from the kernel.
func sidecarRules(t *testing.T, c *cluster, node string) netfilter.Rules {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://%s:%d/rules", c.ips[node], netfilter.Port))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r netfilter.Rules
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	return r
}

// answers says whether node's API answers the controller.
func answers(c *cluster, node, path string) bool { return answered(c.NodeURL(node) + path) }

// answered says whether url answers the controller 200.
func answered(url string) bool {
	hc := &http.Client{Timeout: 500 * time.Millisecond}
	resp, err := hc.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// waitLeader waits up to 10 s for a node that says it leads.
func waitLeader(t *testing.T, c *cluster) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		for _, n := range c.Nodes() {
			resp, err := http.Get(c.NodeURL(n) + "/leader")
			if err != nil {
				continue
			}
			var b struct{ Leader bool }
			err = json.NewDecoder(resp.Body).Decode(&b)
			resp.Body.Close()
			if err == nil && b.Leader {
				return n
			}
		}
	}
	t.Fatal("no leader in 10 s")
	return ""
}

func TestFaultsTakeEffect(t *testing.T) {
	t.Parallel()
	c := startTestCluster(t, "")
	ctx := context.Background()
	port := c.port
	nodes := c.Nodes()

	t.Run("isolated node reaches no peer, the controller reaches it", func(t *testing.T) {
		if err := c.Partition(ctx, nemesis.IsolateNode(nodes, "n1")); err != nil {
			t.Fatal(err)
		}
		if reachable(t, c, "n1", "n2", port) || reachable(t, c, "n2", "n1", port) {
			t.Error("n1 and n2 still reach each other")
		}
		if !reachable(t, c, "n2", "n3", port) {
			t.Error("n2 no longer reaches n3")
		}
		if !answers(c, "n1", "/health") {
			t.Error("the controller lost n1")
		}
		if err := c.Partition(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if !reachable(t, c, "n1", "n2", port) {
			t.Error("healed n1 does not reach n2")
		}
	})

	t.Run("one way: n1 cannot open connections, others can reach it", func(t *testing.T) {
		if err := c.Partition(ctx, nemesis.OneWay(nodes, "n1")); err != nil {
			t.Fatal(err)
		}
		if reachable(t, c, "n1", "n2", port) {
			t.Error("n1 opened a connection to n2")
		}
		if !reachable(t, c, "n2", "n1", port) {
			t.Error("n2 cannot reach n1")
		}
		c.Partition(ctx, nil)
	})

	t.Run("cut from the resource only", func(t *testing.T) {
		if err := c.Partition(ctx, nemesis.CutFromResource("n1")); err != nil {
			t.Fatal(err)
		}
		if reachable(t, c, "n1", "resource", resourcePort) {
			t.Error("n1 reaches the resource")
		}
		if !reachable(t, c, "n1", "n2", port) || !reachable(t, c, "n2", "resource", resourcePort) {
			t.Error("the cut reached further than n1 and the resource")
		}
		c.Partition(ctx, nil)
	})

	// A node's requests on a connection it already holds must not reach the
	// resource either: a lease renewed or a write accepted across the cut
	// would be no cut at all.
	t.Run("a cut from the resource stalls an open connection both ways", func(t *testing.T) {
		leader := waitLeader(t, c)
		post := func(value string) int {
			hc := &http.Client{Timeout: 5 * time.Second}
			resp, err := hc.Post(c.NodeURL(leader)+"/write", "application/json",
				strings.NewReader(`{"key":"cut","value":"`+value+`"}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if code := post("before"); code != http.StatusOK { // opens the connection the node keeps
			t.Fatalf("write before the cut: %d", code)
		}
		if err := c.Partition(ctx, nemesis.CutFromResource(leader)); err != nil {
			t.Fatal(err)
		}
		defer c.Partition(ctx, nil)
		if code := post("during"); code == http.StatusOK {
			t.Errorf("%s wrote to the resource across the cut", leader)
		}
		resp, err := http.Get(c.ResourceURL() + "/read?key=cut")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got struct{ Value string }
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			t.Fatal(err)
		}
		if got.Value != "before" {
			t.Errorf("the resource holds %q, want %q: the write sent during the cut arrived", got.Value, "before")
		}
	})

	// A packet fault on n1's links: each end of a link between nodes
	// impairs what arrives, n1 also what it sends the resource; a delay
	// past the probe's timeout stalls a connection either way, and a
	// heal or a restart leaves nothing behind that the fault did not ask.
	t.Run("a packet fault reaches each end of its node's links", func(t *testing.T) {
		rules := func(node string) netfilter.Rules { return sidecarRules(t, c, node) }
		delay := nemesis.Impairment{Delay: 400 * time.Millisecond}
		if err := c.Impair(ctx, nemesis.LinksOf(c, []string{"n1"}), delay); err != nil {
			t.Fatal(err)
		}
		n1 := rules("n1").Impair
		if !slices.Equal(n1.From, []netip.Addr{c.ips["resource"], c.ips["n2"], c.ips["n3"]}) || !slices.Equal(n1.To, []netip.Addr{c.ips["resource"]}) || n1.Delay != delay.Delay {
			t.Errorf("n1 impairs %+v", n1)
		}
		if n2 := rules("n2").Impair; !slices.Equal(n2.From, []netip.Addr{c.ips["n1"]}) || len(n2.To) != 0 {
			t.Errorf("n2 impairs %+v, want what n1 sends it", n2)
		}
		if reachable(t, c, "n1", "n2", port) || reachable(t, c, "n2", "n1", port) || reachable(t, c, "n1", "resource", resourcePort) {
			t.Error("a connection on n1's links opened within the probe's 300 ms")
		}
		if !reachable(t, c, "n2", "n3", port) {
			t.Error("n2 no longer reaches n3 at once")
		}
		if err := c.Kill(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		if err := c.Restart(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		if got := rules("n1").Impair; got.Delay != delay.Delay || len(got.From) != 3 {
			t.Errorf("restarted n1 impairs %+v", got)
		}
		if err := c.Impair(ctx, nil, nemesis.Impairment{}); err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			if r := rules(n); !r.Empty() {
				t.Errorf("healed %s keeps %s", n, r)
			}
		}
		if !reachable(t, c, "n1", "n2", port) {
			t.Error("healed n1 does not reach n2")
		}
	})

	t.Run("a paused node answers nothing, then everything", func(t *testing.T) {
		if err := c.Pause(ctx, "n2"); err != nil {
			t.Fatal(err)
		}
		if answers(c, "n2", "/health") {
			t.Error("paused n2 answered")
		}
		if err := c.Resume(ctx, "n2"); err != nil {
			t.Fatal(err)
		}
		if !answers(c, "n2", "/health") {
			t.Error("resumed n2 does not answer")
		}
	})

	t.Run("a killed node comes back, and can be partitioned again", func(t *testing.T) {
		if err := c.Kill(ctx, "n3"); err != nil {
			t.Fatal(err)
		}
		if answers(c, "n3", "/health") {
			t.Error("killed n3 answered")
		}
		if err := c.Restart(ctx, "n3"); err != nil {
			t.Fatal(err)
		}
		if _, err := waitAll(ctx, []string{"n3"}, 10*time.Second, func(string) string { return c.NodeURL("n3") + "/health" }); err != nil {
			t.Fatal(err)
		}
		if err := c.Partition(ctx, nemesis.IsolateNode(nodes, "n3")); err != nil {
			t.Fatal(err)
		}
		if reachable(t, c, "n3", "n1", port) {
			t.Error("restarted n3 escapes its partition")
		}
		c.Partition(ctx, nil)
	})

	t.Run("nodes killed together come back together", func(t *testing.T) {
		both := []string{"n2", "n3"}
		for _, n := range both {
			if err := c.Kill(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
		errs := make(chan error, len(both))
		for _, n := range both {
			go func() { errs <- c.Restart(ctx, n) }()
		}
		for range both {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		if _, err := waitAll(ctx, both, 10*time.Second, func(n string) string { return c.NodeURL(n) + "/health" }); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a skewed clock file is read back by the node", func(t *testing.T) {
		clock := func() time.Duration {
			resp, err := http.Get(c.NodeURL("n1") + "/clock")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var ans struct {
				NowNS int64 `json:"now_ns"`
			}
			json.NewDecoder(resp.Body).Decode(&ans)
			return time.Until(time.Unix(0, ans.NowNS))
		}
		if err := c.SetClock(ctx, "n1", contract.Skew{Offset: time.Hour}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // the SDK rereads the file at most every 10 ms
		if d := clock(); d < 59*time.Minute || d > 61*time.Minute {
			t.Errorf("n1's clock is %v off, want an hour", d)
		}
		c.SetClock(ctx, "n1", contract.Skew{})
		time.Sleep(50 * time.Millisecond)
		if d := clock(); d > time.Second || d < -time.Second {
			t.Errorf("healed n1's clock is %v off", d)
		}
	})
}

// A service member placed beside a node shares the node's host: its
// address (by name too), its partitions, its pauses and its kills, while
// a member beside another node goes on; a service fault still hits the
// member alone.
func TestMemberBesideNodeSharesItsFate(t *testing.T) {
	t.Parallel()
	c := startTestCluster(t, "testdata/beside")
	ctx := context.Background()
	nodes := c.Nodes()
	const port = 2379 // the store's, in testdata/beside
	store := func(member string) string { return fmt.Sprintf("%s:%d", member, port) }
	health := func(member string) string { return fmt.Sprintf("http://%s:%d/health", c.ips[member], port) }
	serves := func(member string) bool { return answered(health(member)) }
	heal := func() {
		if err := c.Partition(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("a member has its node's address, and its name resolves to it", func(t *testing.T) {
		if c.ips["store1"] != c.ips["n1"] || c.ips["store2"] != c.ips["n2"] {
			t.Errorf("store1 at %s, n1 at %s; store2 at %s, n2 at %s", c.ips["store1"], c.ips["n1"], c.ips["store2"], c.ips["n2"])
		}
		if !reaches(t, c, "n3", store("store1")) || !reaches(t, c, "n3", store("store2")) {
			t.Error("n3 does not reach the stores by name")
		}
	})

	// Its host's sidecar impairs what arrives for the member: the node
	// whose links are impaired must not impair what it sends there too.
	t.Run("a packet fault impairs a link to a member beside another node once", func(t *testing.T) {
		if err := c.Impair(ctx, nemesis.LinksOf(c, []string{"n1"}), nemesis.Impairment{LossPercent: 10}); err != nil {
			t.Fatal(err)
		}
		defer c.Impair(ctx, nil, nemesis.Impairment{})
		n1, n2 := sidecarRules(t, c, "n1").Impair, sidecarRules(t, c, "n2").Impair
		if slices.Contains(n1.To, c.ips["n2"]) || !slices.Contains(n1.From, c.ips["n2"]) || !slices.Contains(n2.From, c.ips["n1"]) {
			t.Errorf("n1 impairs %+v, n2 %+v: want each what arrives from the other, once", n1, n2)
		}
	})

	t.Run("a partition of the node cuts the member with it, not from its own host", func(t *testing.T) {
		if err := c.Partition(ctx, nemesis.IsolateNode(nodes, "n1")); err != nil {
			t.Fatal(err)
		}
		defer heal()
		if reaches(t, c, "n2", store("store1")) || reaches(t, c, "n3", store("store1")) {
			t.Error("store1 is reached across n1's partition")
		}
		if !reaches(t, c, "n1", store("store1")) || !reaches(t, c, "n3", store("store2")) {
			t.Error("the cut reached further than n1's host")
		}
	})

	t.Run("a node cut from the service keeps the member beside it", func(t *testing.T) {
		if err := c.Partition(ctx, nemesis.CutFrom("n1", "store1", "store2")); err != nil {
			t.Fatal(err)
		}
		defer heal()
		if reaches(t, c, "n1", store("store2")) {
			t.Error("n1 reaches store2")
		}
		if !reaches(t, c, "n1", store("store1")) {
			t.Error("n1 was cut from its own host's store1")
		}
	})

	t.Run("a paused node freezes the member beside it", func(t *testing.T) {
		if err := c.Pause(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		if serves("store1") {
			t.Error("store1 answered while n1's host was frozen")
		}
		if !serves("store2") {
			t.Error("store2 froze with n1")
		}
		if err := c.Resume(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		if !serves("store1") || !answers(c, "n1", "/health") {
			t.Error("n1's host did not thaw")
		}
	})

	t.Run("a killed node takes the member beside it down, and its restart brings it back", func(t *testing.T) {
		if err := c.Kill(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		if exited, _ := c.docker.Exited(ctx, c.ids["store1"]); !exited {
			t.Error("store1 runs on after n1 was killed")
		}
		if !serves("store2") {
			t.Error("store2 went down with n1")
		}
		if err := c.Restart(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		if _, err := waitAll(ctx, []string{"store1"}, 10*time.Second, health); err != nil {
			t.Fatal(err)
		}
		if !reaches(t, c, "n2", store("store1")) {
			t.Error("n2 does not reach the restarted store1")
		}
	})

	t.Run("a service fault hits the member alone", func(t *testing.T) {
		if err := c.Kill(ctx, "store1"); err != nil {
			t.Fatal(err)
		}
		if serves("store1") || !answers(c, "n1", "/health") {
			t.Error("the kill of store1 did not stop at store1")
		}
		if err := c.Restart(ctx, "store1"); err != nil {
			t.Fatal(err)
		}
		if _, err := waitAll(ctx, []string{"store1"}, 10*time.Second, health); err != nil {
			t.Fatal(err)
		}
	})
}

// The same seed gives the same schedule, and it is recorded for run.json.
func TestSameSeedSameSchedule(t *testing.T) {
	plan := func(seed uint64) nemesis.Schedule {
		cfg := DefaultConfig()
		cfg.RepoRoot, cfg.TargetsRoot = "..", "../targets"
		cfg.Nemesis = []string{"partition", "pause", "kill", "clock"}
		cfg.Seed = seed
		r, err := prepare(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(r.schedule, r.info.Schedule) {
			t.Fatal("run.json would not record the plan")
		}
		return r.schedule
	}
	a, b := plan(42), plan(42)
	if len(a.Faults) == 0 || a.Pace == nil || !reflect.DeepEqual(a, b) {
		t.Errorf("seed 42 gave %v then %v", a, b)
	}
	if reflect.DeepEqual(a, plan(43)) && reflect.DeepEqual(a, plan(44)) {
		t.Error("the seed does not change the schedule")
	}
}

// The packet filter's own test, which changes the nftables ruleset of the
// namespace it runs in, run where that is safe: as a sidecar, with
// NET_ADMIN, in the namespace of a throwaway container. It checks that what
// Apply writes the kernel accepts, and that Current reads it back.
func TestPacketFilterInItsNamespace(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts containers")
	}
	ctx := context.Background()
	d := testDocker(t)
	image := netfilterTestImage(t, d, "netfilter", "TestInNamespace", map[string]string{"SPLITBRAIN_NETFILTER_NETNS": "1"})
	runID, nw := throwawayNetwork(t, d, "test-netfilter")
	holder := startResource(t, d, runID, nw, "resource")
	id, err := d.StartSidecar(ctx, runID, "netfilter-test", holder.ID, image)
	if err != nil {
		t.Fatal(err)
	}
	code, out := waitExit(t, d, id, 30*time.Second)
	t.Logf("%s", out)
	if code != 0 || !strings.Contains(string(out), "--- PASS: TestInNamespace") {
		t.Fatalf("the packet filter's test in its namespace exited %d", code)
	}
}

// netfilterTestImage builds an image whose program is the packet
// filter's test binary running test (one or more, a -test.run pattern),
// tagged splitbrain/test-name,
// with env: the filter's own tests that must run in a throwaway
// namespace.
func netfilterTestImage(t *testing.T, d *Docker, name, test string, env map[string]string) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	build := exec.CommandContext(ctx, "go", "test", "-c", "-o", filepath.Join(dir, "netfilter.test"), "../nemesis/netfilter")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go test -c: %v\n%s", err, out)
	}
	dockerfile := "FROM scratch\nCOPY netfilter.test /test\n"
	for _, k := range slices.Sorted(maps.Keys(env)) {
		dockerfile += "ENV " + k + "=" + env[k] + "\n"
	}
	dockerfile += fmt.Sprintf(`ENTRYPOINT ["/test", "-test.run", "^(%s)$", "-test.v"]`, test) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	image := "splitbrain/test-" + name + ":latest"
	if err := d.BuildDockerfileImage(ctx, image, dir, "Dockerfile"); err != nil {
		t.Fatal(err)
	}
	return image
}

// startResource starts a resource called name on network nw under runID: a small
// container of ours, to hold a network namespace or an endpoint.
func startResource(t *testing.T, d *Docker, runID, nw, name string) Container {
	t.Helper()
	ctx := context.Background()
	if err := d.BuildGoImage(ctx, resourceImage, "..", resourceMain); err != nil {
		t.Fatal(err)
	}
	ctr, err := d.Start(ctx, ContainerSpec{RunID: runID, Name: name, Image: resourceImage, Network: nw,
		Env: map[string]string{"SPLITBRAIN_RESOURCE_MODE": "strict", "SPLITBRAIN_RESOURCE_ADDR": fmt.Sprintf(":%d", resourcePort),
			"SPLITBRAIN_RESOURCE_LOG": "/dev/null"}})
	if err != nil {
		t.Fatal(err)
	}
	return ctr
}

// testDocker connects to the Docker Engine for the test's length.
func testDocker(t *testing.T) *Docker {
	t.Helper()
	d, err := ConnectDocker(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// throwawayNetwork makes a network for a test's containers, under a run id
// of its own, and removes it and them when the test ends.
func throwawayNetwork(t *testing.T, d *Docker, prefix string) (runID, network string) {
	t.Helper()
	runID = prefix + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	t.Cleanup(func() { d.Remove(context.Background(), LabelRun+"="+runID) })
	network, _, err := d.NewNetwork(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	return runID, network
}

// waitExit waits for container id's program to end and returns its exit
// code and output.
func waitExit(t *testing.T, d *Docker, id string, timeout time.Duration) (int, []byte) {
	t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if exited, code := d.Exited(ctx, id); exited {
			out, _ := d.Logs(ctx, id)
			return code, out
		}
	}
	t.Fatalf("container %.12s still runs after %s", id, timeout)
	return 0, nil
}
