package harness

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/internal/parallel"
	"github.com/splitbrain/splitbrain/results"
	"github.com/splitbrain/splitbrain/targets"
)

// A run's cluster starts in named steps: its network and address plan,
// the resource, the services the nodes need, the nodes with their
// packet-filter sidecars, the members placed beside them, their health,
// the services that need the nodes, and the versions of what runs.

// startCluster starts the resource, the target's services and every node
// on a fresh internal network and waits until every node answers /health.
func (r *run) startCluster(ctx context.Context) error {
	start := time.Now()
	for _, step := range []func(context.Context) error{
		r.planCluster,
		r.checkFaketime,
		r.startResource,
		func(ctx context.Context) error { return r.startServices(ctx, beforeNodes) },
		r.startNodes,
		func(ctx context.Context) error { return r.startServices(ctx, withNodes) },
		r.waitNodes,
		func(ctx context.Context) error { return r.startServices(ctx, afterNodes) },
		r.checkProcesses,
	} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	r.info.Timings.ClusterStart = time.Since(start).Seconds()
	return r.systemVersions(ctx)
}

// planCluster makes the run's network and gives every container its name,
// its fixed address and, for nodes and skewable services, a clock folder.
func (r *run) planCluster(ctx context.Context) error {
	netName, subnet, transport, err := r.newNetwork(ctx)
	if err != nil {
		return err
	}
	c := &cluster{
		docker: r.docker, placed: r.placed(), transport: transport, network: netName, port: r.manifest.Port,
		clockDir: filepath.Join(r.dir, "clocks"),
		skewable: skewableServices(r.manifest, r.cfg.Nodes),
		beside:   map[string]string{},
		ids:      map[string]string{}, ips: map[string]netip.Addr{}, sidecars: map[string]string{}, clockSidecars: map[string]string{},
		runID: r.info.ID, processes: map[string][]string{}, data: map[string][]string{}, serviceOf: map[string]targets.Service{}, inits: map[string]string{},
		stopSignal: r.manifest.StopSignal, startTimeout: r.cfg.StartTimeout,
	}
	var members []targets.Member
	for _, s := range r.manifest.Services {
		members = append(members, s.Placed(r.cfg.Nodes)...)
	}
	c.serviceClusters, c.zones = serviceClusters(r.manifest, r.cfg.Nodes), r.manifest.Zones
	c.leaderCommands = map[string][]string{}
	for _, s := range r.manifest.Services {
		c.leaderCommands[s.Name] = s.Leader
	}
	for _, s := range r.manifest.Services {
		for _, name := range s.MemberNames(r.cfg.Nodes) {
			c.processes[name], c.data[name], c.serviceOf[name] = s.Processes, s.Data, s
		}
	}
	for _, m := range members {
		c.services = append(c.services, m.Name)
		if m.Node != "" {
			c.beside[m.Name] = m.Node
		}
	}
	r.cluster = c
	if usesFaketime(r.manifest) {
		c.faketime = r.startFaketime()
	}
	for i := range r.cfg.Nodes {
		c.nodes = append(c.nodes, nodeName(i))
		c.processes[c.nodes[i]], c.data[c.nodes[i]] = r.manifest.Processes, r.manifest.Data
	}
	if c.hosts, err = addressPlan(subnet, c.nodes, members); err != nil {
		return err
	}
	for _, name := range append(slices.Clone(c.nodes), c.skewable...) {
		if err := os.MkdirAll(filepath.Join(c.clockDir, name), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// nodeName names the node of index i (from 0): n1, n2, ...
func nodeName(i int) string { return fmt.Sprintf("n%d", i+1) }

// checkFaketime runs the canary (Docker.checkFaketime) in a container of
// each image whose clock libfaketime skews, with the environment its
// first node or member gets, before any starts. What it finds broken is
// the harness's failure, found before it can be blamed on the target: a
// node that died of the clock the harness gave it, or missed its
// deadlines by it, would fail the checks as the target's doing.
func (r *run) checkFaketime(ctx context.Context) error {
	type probe struct {
		name, image string
		env         map[string]string
	}
	var probes []probe
	if r.manifest.Clock == targets.ClockFaketime {
		node := r.cluster.nodes[0]
		probes = append(probes, probe{node, NodeImage(r.manifest), r.nodeEnv(node)})
	}
	for _, s := range r.manifest.Services {
		if s.Clock == targets.ClockFaketime {
			member := s.MemberNames(r.cfg.Nodes)[0]
			probes = append(probes, probe{member, ServiceImage(r.manifest, s), r.memberEnv(s, member)})
		}
	}
	errs := parallel.Do(probes, func(p probe) error {
		return r.docker.checkFaketime(ctx, r.info.ID, p.name+"-canary", p.image, r.faketime, p.env)
	})
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("harness failure: libfaketime, preloaded for the clock faults of %s, breaks the programs of its image, which the run would blame on the target: %v", r.cluster.kind(probes[i].name), err)
		}
	}
	return nil
}

// clockBinds mounts a node's or service member's clock folder and, for a
// clock libfaketime skews, its companions; on engines that do not see
// this machine's folders, clockFiles copies them in instead.
func (r *run) clockBinds(name string, faketime bool) []string {
	if r.engines != nil {
		return nil
	}
	binds := []string{filepath.Join(r.cluster.clockDir, name) + ":" + clockMount}
	if faketime {
		binds = append(binds, r.faketime+":"+faketimeMount+":ro")
	}
	return binds
}

// startResource starts the fenced resource, whose decision log is written
// straight into the run's folder, so that it survives a controller that
// dies.
func (r *run) startResource(ctx context.Context) error {
	c := r.cluster
	if _, err := c.start(ctx, ContainerSpec{
		RunID: r.info.ID, Name: "resource", Image: resourceImage, Network: c.network, IP: c.hosts["resource"], Hosts: c.hosts,
		Env: map[string]string{
			contract.EnvResourceMode: string(r.cfg.Resource),
			contract.EnvResourceAddr: fmt.Sprintf(":%d", resourcePort),
			contract.EnvResourceLog:  r.resourceLogIn() + results.ResourceFile,
		},
		Binds: r.resourceBinds(),
	}); err != nil {
		return err
	}
	c.resourceURL = fmt.Sprintf("http://%s:%d", c.ips["resource"], resourcePort)
	return nil
}

// startNodes starts every node at once, each with its packet-filter
// sidecar when the plan partitions.
func (r *run) startNodes(ctx context.Context) error {
	c := r.cluster
	faketime := r.manifest.Clock == targets.ClockFaketime
	errs := parallel.Do(c.nodes, func(node string) error {
		spec, err := r.underDiskIf(ctx, ContainerSpec{
			RunID: r.info.ID, Name: node, Image: NodeImage(r.manifest), Network: c.network, Env: r.nodeEnv(node), IP: c.hosts[node], Hosts: c.hosts,
			Binds: r.clockBinds(node, faketime), Files: r.clockFiles(faketime),
		}, r.manifest.Data, false)
		if err != nil {
			return err
		}
		id, err := c.start(ctx, spec)
		if err == nil && r.clockSidecars(false) {
			err = r.startClockSidecar(ctx, node, id)
		}
		if err == nil && r.partitions() {
			err = r.startPacketFilter(ctx, node, id)
		}
		return err
	})
	for i, err := range errs {
		switch {
		case IsBadInput(err): // a clock sidecar that cannot ptrace, a disk layer that cannot mount: the node is not to blame
			return err
		case err != nil:
			return r.withLog(ctx, c.nodes[i], err) // the others say the same of other nodes
		}
	}
	return nil
}

// startPacketFilter starts the packet-filter sidecar of container name
// (id) in its network namespace.
func (r *run) startPacketFilter(ctx context.Context, name, id string) error {
	c := r.cluster
	began := time.Now()
	sidecar, err := c.on(name).StartSidecar(ctx, r.info.ID, name+"-netfilter", id, netfilterImage)
	c.timeStart(name+"-netfilter", began)
	if sidecar != "" {
		c.mu.Lock()
		c.sidecars[name] = sidecar
		c.mu.Unlock()
	}
	return err
}

// waitNodes waits until every node answers /health and every
// packet-filter sidecar answers.
func (r *run) waitNodes(ctx context.Context) error {
	c := r.cluster
	if sick, err := c.waitHealthy(ctx, r.cfg.StartTimeout); err != nil {
		if len(sick) > 0 && !errors.Is(err, context.Canceled) {
			return r.withLog(ctx, sick[0], err)
		}
		return err
	}
	if len(c.sidecars) > 0 {
		if err := c.waitSidecars(ctx, c.nodes, r.cfg.StartTimeout); err != nil {
			return fmt.Errorf("packet-filter sidecars: %v", err)
		}
	}
	return nil
}

// start starts one container of the cluster and learns its address. The
// container's id is kept even when it failed to start well, so that its
// log can explain why.
func (c *cluster) start(ctx context.Context, spec ContainerSpec) (string, error) {
	began := time.Now()
	ctr, err := c.on(spec.Name).Start(ctx, spec)
	c.timeStart(spec.Name, began)
	if ctr.ID != "" {
		c.mu.Lock()
		c.ids[spec.Name] = ctr.ID
		c.mu.Unlock()
	}
	if err != nil {
		return ctr.ID, err
	}
	return ctr.ID, c.learnAddress(ctx, spec.Name, ctr.ID)
}
