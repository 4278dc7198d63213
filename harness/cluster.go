package harness

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/internal/parallel"
	"github.com/splitbrain/splitbrain/nemesis"
	"github.com/splitbrain/splitbrain/nemesis/netfilter"
	"github.com/splitbrain/splitbrain/targets"
)

// clockFile is the name of a node's clock file in its clock folder, which
// is mounted at clockMount inside the node.
const (
	clockFile  = "clock.json"
	clockMount = "/splitbrain-clock"
)

// cluster is the running system under test as the workload and the nemesis
// see it: node names, their current addresses, and the Docker handles
// behind them. It carries out the nemesis's faults.
type cluster struct {
	docker *Docker // the controller's engine, and every container's unless placed says another
	// placed is the engine of each container of a run spread over
	// several (harness/swarm.go), by name; nil for a run on docker alone.
	placed map[string]*Docker
	// transport reaches the run's addresses: through the gateway into
	// its overlay when it spreads over engines; nil (directly) otherwise.
	transport *http.Transport
	network   string
	port      int
	leader    func() string       // the observer's view, set once it runs
	view      func() nemesis.View // the same, node by node
	clockDir  string              // host folder with a subfolder per node, mounted into it
	faketime  *faketimeClocks     // for targets whose clocks libfaketime skews; nil for the SDK's
	guard     *guard              // told of the containers we stop ourselves; nil before the workload

	restartMu sync.Mutex // see Restart
	mu        sync.RWMutex
	nodes     []string
	services  []string              // the target's service containers, by name
	beside    map[string]string     // a service member placed beside a node -> that node
	skewable  []string              // the services whose clocks can be skewed
	ids       map[string]string     // node, service or "resource" -> container id
	ips       map[string]netip.Addr // node, service or "resource" -> address on the run's network
	hosts     map[string]netip.Addr // the fixed addresses every container knows by name (addressPlan)
	sidecars  map[string]string     // node (or member of its own) -> its packet-filter sidecar's container id
	// serviceClusters are the services as faults see them, each with
	// the command that finds its leader (leaderCommands, by service).
	serviceClusters []nemesis.ServiceCluster
	leaderCommands  map[string][]string
	zones           int // how many zones partition-zones spreads the containers over
	// clockSidecars: a node or service member with clock: process -> its
	// clock sidecar's container id.
	clockSidecars map[string]string
	grudge        nemesis.Grudge // the partition in effect
	impaired      nemesis.Grudge // the links a packet fault impairs (impair.go)
	impairment    nemesis.Impairment
	resourceURL   string
	started       []started // every container's start, in the order they ended

	// Faults inside a host (inside.go).
	runID        string
	processes    map[string][]string        // node or member -> the command names a fault may stop
	data         map[string][]string        // node or member -> its data directories (disk.go)
	serviceOf    map[string]targets.Service // member -> its service
	inits        map[string]string          // container -> the name found to be its init's
	signals      atomic.Int64               // names the signallers apart
	stopSignal   string
	startTimeout time.Duration // how long a node may take to answer healthy
}

// started is one container's start, from the request until it ran.
type started struct {
	name string
	at   time.Time
	took time.Duration
}

// timeStart notes that container name's start, begun at at, ended now.
func (c *cluster) timeStart(name string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.started = append(c.started, started{name, at, time.Since(at)})
}

// startTiming sums up the containers' starts, each at its time since
// zero, the history's start (negative: they come before it).
func (c *cluster) startTiming(zero time.Time) checkers.Timing {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var t checkers.Timer
	for _, s := range c.started {
		t.Add(s.name, int64(s.at.Sub(zero)), int64(s.took), false)
	}
	return t.Timing()
}

func (c *cluster) Nodes() []string { return c.nodes }

func (c *cluster) Services() []string { return c.services }

// kind names a container for a message: "service etcd2", or a node's name.
func (c *cluster) kind(name string) string {
	if slices.Contains(c.services, name) {
		return "service " + name
	}
	return name
}

func (c *cluster) SkewableServices() []string { return c.skewable }

func (c *cluster) NodeURL(node string) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if ip, ok := c.ips[node]; ok {
		return fmt.Sprintf("http://%s:%d", ip, c.port)
	}
	return ""
}

func (c *cluster) ResourceURL() string { return c.resourceURL }

func (c *cluster) Leader() string {
	if c.leader == nil {
		return ""
	}
	return c.leader()
}

func (c *cluster) View() nemesis.View {
	if c.view == nil {
		return nil
	}
	return c.view()
}

// A node's host is its container's network namespace and the service
// members placed beside it, which share it: a kill, a pause or a restart
// of the node reaches them all, as a crash, a freeze or a reboot of a
// machine reaches everything on it. A partition needs nothing more: the
// members have the node's address, which the packet filters cut.

// host is what a fault of name reaches: a node and the members beside
// it, in manifest order; any other container alone.
func (c *cluster) host(name string) []string {
	out := []string{name}
	for _, member := range c.services {
		if c.beside[member] == name {
			out = append(out, member)
		}
	}
	return out
}

// on is the engine that holds container name (a node, a service member
// or the resource); a member beside a node, or a sidecar, is on the
// node's.
func (c *cluster) on(name string) *Docker {
	if host, ok := c.beside[name]; ok {
		name = host
	}
	if d := c.placed[name]; d != nil {
		return d
	}
	return c.docker
}

// DialContext opens a connection to an address of the run's network, as
// the workload's and the observer's clients do (workloads.Dialer).
func (c *cluster) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if c.transport != nil {
		return c.transport.DialContext(ctx, network, addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// client is an HTTP client to the run's addresses whose requests take at
// most timeout.
func (c *cluster) client(timeout time.Duration) *http.Client {
	if c.transport == nil {
		return &http.Client{Timeout: timeout} // http's default transport
	}
	return &http.Client{Timeout: timeout, Transport: c.transport}
}

// onHost does act to name and, at once, to the members beside it, each
// through the engine that holds it. A member that is not running (it
// exited on its own, and the noteDown at the end of the run tells of it)
// has nothing to kill, freeze or thaw: that is no failure of the fault
// on the node.
func (c *cluster) onHost(name string, act func(d *Docker, id string) error) error {
	return parallel.Each(c.host(name), func(n string) error {
		err := act(c.on(n), c.ids[n])
		if n != name && cerrdefs.IsConflict(err) {
			return nil
		}
		return err
	})
}

func (c *cluster) Kill(ctx context.Context, name string) error {
	return c.halt(name, func(d *Docker, id string) error { return d.Kill(ctx, id) })
}

// halt ends name's host by end, each container told to the guard first.
func (c *cluster) halt(name string, end func(d *Docker, id string) error) error {
	return c.onHost(name, func(d *Docker, id string) error {
		c.guard.expectStop(id)
		c.mu.RLock()
		for n, cid := range c.ids {
			if cid == id && c.clockSidecars[n] != "" {
				c.guard.expectStop(c.clockSidecars[n]) // it ends with the PID namespace it joined
			}
		}
		c.mu.RUnlock()
		return end(d, id)
	})
}

// Restart starts a killed node or service again, learns its address anew,
// puts a node's packet-filter sidecar into its new network namespace, and
// rewrites the rules of the partition in effect, which may name the old
// address: a restarted container stays partitioned. A node's members
// start after it, into its new namespace.
func (c *cluster) Restart(ctx context.Context, name string) error {
	for i, n := range c.host(name) {
		if err := c.on(n).Restart(ctx, c.ids[n]); err != nil {
			if i == 0 {
				return err
			}
			return fmt.Errorf("restart %s beside %s: %v", n, name, err)
		}
		if err := c.learnAddress(ctx, n, c.ids[n]); err != nil {
			return err
		}
	}
	c.mu.RLock()
	sidecar := c.sidecars[name]
	var clocks []string
	for _, n := range c.host(name) {
		if c.clockSidecars[n] != "" {
			clocks = append(clocks, n)
		}
	}
	c.mu.RUnlock()
	// Containers restarted together (kill-minority's heal) take turns
	// here, so that none rewrites rules through a sidecar another is
	// restarting.
	c.restartMu.Lock()
	defer c.restartMu.Unlock()
	for _, n := range clocks {
		if err := c.on(n).RestartContainer(ctx, c.clockSidecars[n]); err != nil {
			return fmt.Errorf("restart %s's clock sidecar: %v", n, err)
		}
		if err := c.waitClockSidecar(ctx, n); err != nil {
			return err
		}
	}
	if sidecar != "" {
		c.guard.expectStop(sidecar)
		if err := c.on(name).RestartContainer(ctx, sidecar); err != nil {
			return fmt.Errorf("restart %s's packet filter: %v", name, err)
		}
		if err := c.waitSidecars(ctx, []string{name}, 10*time.Second); err != nil {
			return err
		}
	}
	c.mu.RLock()
	inEffect := len(c.grudge) > 0 || len(c.impaired) > 0
	c.mu.RUnlock()
	if !inEffect {
		return nil
	}
	// The address may have changed: every node's rules are rewritten.
	return c.filter(ctx)
}

func (c *cluster) Pause(ctx context.Context, name string) error {
	return c.onHost(name, func(d *Docker, id string) error { return d.Pause(ctx, id) })
}

func (c *cluster) Resume(ctx context.Context, name string) error {
	return c.onHost(name, func(d *Docker, id string) error { return d.Unpause(ctx, id) })
}

// SetClock rewrites the node's clock file, which the node's SDK clock
// reads (and a clock sidecar, when it starts), and for a libfaketime target
// (or service) its timestamp file; with clock: process it gives the skew
// to every process of the container through its clock sidecar.
func (c *cluster) SetClock(ctx context.Context, node string, s contract.Skew) error {
	if slices.Contains(c.services, node) && !slices.Contains(c.skewable, node) {
		return fmt.Errorf("the clock of service %s cannot be skewed (no clock: faketime or process)", node)
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(c.clockDir, node), clockFile, b); err != nil {
		return err
	}
	if c.remote() {
		if err := c.copyClock(ctx, node, clockFile, b); err != nil {
			return fmt.Errorf("copying %s's clock file in: %v", node, err)
		}
	}
	c.mu.RLock()
	_, process := c.clockSidecars[node]
	c.mu.RUnlock()
	if process {
		return c.setProcessClock(ctx, node, s)
	}
	if c.faketime != nil {
		return c.faketime.set(node, s)
	}
	return nil
}

// Partition gives every container with a packet filter the rules of g,
// all at once, through its sidecar (filterRules says which); those g
// does not name get none. The controller's own address is never in a
// rule, so it always reaches every node.
//
// A cut between two nodes is dropped by each on receipt. A service or the
// resource has no sidecar to drop its half (unless the run cuts links
// inside services), so a node cut from one also drops what it sends
// there: otherwise its requests and renewals on a connection already open
// would still arrive, only the answers being lost. A member beside a node
// is cut at the node's address, with its host; a host is never cut from
// itself (the leader from the member beside it, in partition-service),
// whose traffic never leaves the namespace.
func (c *cluster) Partition(ctx context.Context, g nemesis.Grudge) error {
	c.mu.Lock()
	c.grudge = g
	c.mu.Unlock()
	return c.filter(ctx)
}

// filter gives every container with a packet filter, through its
// sidecar and all at once, the rules of the partition in effect
// (filterRules) and each node those of the impairment in effect.
func (c *cluster) filter(ctx context.Context) error {
	c.mu.RLock()
	g, links, how := c.grudge, c.impaired, c.impairment
	ips := maps.Clone(c.ips)
	sidecars := maps.Clone(c.sidecars)
	c.mu.RUnlock()
	if len(sidecars) == 0 {
		if len(g) == 0 && len(links) == 0 {
			return nil
		}
		return errors.New("no packet-filter sidecars: the run was started without partition or packet faults")
	}
	rules, err := filterRules(g, ips, c.filterOf(sidecars))
	if err != nil {
		return err
	}
	for _, node := range c.nodes {
		self := ips[node]
		addrs := func(names []string) ([]netip.Addr, error) { return c.addrs(ips, names, self) }
		r := rules[node]
		if r.Impair, err = c.impairOf(links[node].All, how, addrs); err != nil {
			return fmt.Errorf("%s: %v", node, err)
		}
		rules[node] = r
	}
	return parallel.Each(slices.Sorted(maps.Keys(sidecars)), func(name string) error {
		if err := c.applyRules(ctx, ips[name], rules[name]); err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
		return nil
	})
}

// unimpaired are those of names whose own filter impairs nothing (a
// service member in a container of its own, whether or not it has a
// filter for partitions, and the resource): a node impairs its own
// packets to them too. A member beside a node is impaired at its host.
func (c *cluster) unimpaired(names []string) (out []string) {
	for _, n := range names {
		if _, beside := c.beside[n]; !beside && !slices.Contains(c.nodes, n) {
			out = append(out, n)
		}
	}
	return out
}

// addrs are the addresses of names in ips, but self's: a host is never
// cut from itself (a member beside a node has the node's address).
func (c *cluster) addrs(ips map[string]netip.Addr, names []string, self netip.Addr) ([]netip.Addr, error) {
	out := make([]netip.Addr, 0, len(names))
	for _, n := range names {
		ip, ok := ips[n]
		if !ok {
			return nil, fmt.Errorf("no address for %s", n)
		}
		if ip != self {
			out = append(out, ip)
		}
	}
	return out, nil
}

// applyRules replaces one node's rules through the sidecar in its network
// namespace: empty rules remove splitbrain's table there.
func (c *cluster) applyRules(ctx context.Context, node netip.Addr, r netfilter.Rules) error {
	url := fmt.Sprintf("http://%s/rules", netip.AddrPortFrom(node, netfilter.Port))
	method, body := http.MethodDelete, []byte(nil)
	if !r.Empty() {
		method = http.MethodPut
		var err error
		if body, err = json.Marshal(r); err != nil {
			return err
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := c.client(sidecarTimeout).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("packet filter answered %d: %s", resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	return nil
}

// sidecarTimeout bounds a request to a packet-filter sidecar.
const sidecarTimeout = 5 * time.Second

// learnAddress asks Docker for the address of node's container id; a
// member beside a node has the node's. It takes the id rather than
// reading c.ids, which the goroutines starting the nodes are still
// filling in.
func (c *cluster) learnAddress(ctx context.Context, node, id string) error {
	if host, ok := c.beside[node]; ok {
		c.mu.Lock()
		c.ips[node] = c.ips[host]
		c.mu.Unlock()
		return nil
	}
	ip, err := c.on(node).IP(ctx, id, c.network)
	if err != nil {
		return err
	}
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.ips[node] = addr
	c.mu.Unlock()
	return nil
}

// waitSidecars waits until the packet-filter sidecars of nodes answer.
func (c *cluster) waitSidecars(ctx context.Context, nodes []string, timeout time.Duration) error {
	_, err := c.waitAll(ctx, nodes, timeout, func(node string) string {
		c.mu.RLock()
		defer c.mu.RUnlock()
		return fmt.Sprintf("http://%s/health", netip.AddrPortFrom(c.ips[node], netfilter.Port))
	})
	return err
}

// waitService waits until the member name (container id) of service s accepts
// connections on its port and, if s names a health path, answers 200
// there, and if it names a ready command, that command exits 0 in it.
func (c *cluster) waitService(ctx context.Context, name, id string, s targets.Service, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	c.mu.RLock()
	addr := netip.AddrPortFrom(c.ips[name], uint16(s.Port))
	c.mu.RUnlock()
	if s.Health != "" {
		if _, err := c.waitAll(ctx, []string{name}, timeout, func(string) string { return "http://" + addr.String() + s.Health }); err != nil {
			return err
		}
	} else if err := c.waitPort(ctx, addr, timeout); err != nil {
		return fmt.Errorf("%s accepted no connection on port %d within %s", name, s.Port, timeout)
	}
	if len(s.Ready) == 0 {
		return nil
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var last string
	for {
		code, out, err := c.on(name).Exec(ctx, id, s.Ready)
		if err == nil && code == 0 {
			return nil
		}
		if err == nil {
			last = fmt.Sprintf("exit %d: %s", code, strings.Join(strings.Fields(string(out)), " "))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s was not ready within %s: %s last said %s", name, timeout, strings.Join(s.Ready, " "), cmp.Or(last, "nothing"))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitPort waits until addr accepts a TCP connection.
func (c *cluster) waitPort(ctx context.Context, addr netip.AddrPort, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		conn, err := c.DialContext(ctx, "tcp", addr.String())
		if err == nil {
			return conn.Close()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitHealthy polls GET /health on every node until all answer 200 or the
// deadline passes; then it names the nodes that never did. A node whose
// container has exited is given up at once: nothing restarts it.
func (c *cluster) waitHealthy(ctx context.Context, timeout time.Duration) ([]string, error) {
	exited := func(node string) bool {
		c.mu.RLock()
		id := c.ids[node]
		c.mu.RUnlock()
		gone, _ := c.on(node).Exited(ctx, id)
		return gone
	}
	return waitAllWhile(ctx, c.client(healthTimeout), c.nodes, timeout, func(node string) string { return c.NodeURL(node) + contract.HealthPath }, exited)
}

// waitAll polls url(node) for every node until each answers 200 or the
// deadline passes, and names the nodes that never did.
func waitAll(ctx context.Context, nodes []string, timeout time.Duration, url func(string) string) ([]string, error) {
	return waitAllWhile(ctx, &http.Client{Timeout: healthTimeout}, nodes, timeout, url, nil)
}

// waitAll is waitAll on the run's network.
func (c *cluster) waitAll(ctx context.Context, nodes []string, timeout time.Duration, url func(string) string) ([]string, error) {
	return waitAllWhile(ctx, c.client(healthTimeout), nodes, timeout, url, nil)
}

// healthTimeout bounds one health request of a wait.
const healthTimeout = 500 * time.Millisecond

// exitedPoll is how often waitAllWhile asks whether a node is gone: an
// inspection costs the Engine more than a health request.
const exitedPoll = time.Second

// errGone is a node's wait given up because the node is gone.
var errGone = errors.New("gone")

// waitAllWhile is waitAll by hc that gives up once gone says of a node
// that it never will answer; then it names the nodes that are gone, first.
func waitAllWhile(ctx context.Context, hc *http.Client, nodes []string, timeout time.Duration, url func(string) string, gone func(string) bool) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	waiting, giveUp := context.WithCancel(ctx)
	defer giveUp()
	errs := parallel.Do(nodes, func(node string) error {
		asked := time.Now()
		for {
			resp, err := hc.Get(url(node))
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return nil
				}
			}
			if gone != nil && time.Since(asked) >= exitedPoll {
				if gone(node) {
					giveUp()
					return errGone
				}
				asked = time.Now()
			}
			select {
			case <-waiting.Done():
				return waiting.Err()
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	var lost, pending []string
	for i, err := range errs {
		switch {
		case errors.Is(err, errGone):
			lost = append(lost, nodes[i])
		case err != nil:
			pending = append(pending, nodes[i])
		}
	}
	sort.Strings(lost)
	sort.Strings(pending)
	switch {
	case len(lost) > 0:
		return append(lost, pending...), fmt.Errorf("%s exited before becoming healthy", strings.Join(lost, ", "))
	case len(pending) > 0 && errors.Is(ctx.Err(), context.Canceled):
		return pending, ctx.Err()
	case len(pending) > 0:
		return pending, fmt.Errorf("%s never became healthy within %s", strings.Join(pending, ", "), timeout)
	}
	return nil, nil
}
