package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	dnetwork "github.com/moby/moby/api/types/network"
	"github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/client"

	"github.com/splitbrain/splitbrain/harness/engines"
	"github.com/splitbrain/splitbrain/harness/gateway"
	"github.com/splitbrain/splitbrain/internal/parallel"
)

// Swarm ports: the managers' API, the engines' gossip and the overlay's
// VXLAN traffic (docs/engines.md says what to open).
const swarmPort = 2377

// swarmListen is where an engine of the swarm listens for the others.
var swarmListen = net.JoinHostPort("0.0.0.0", strconv.Itoa(swarmPort))

// Engines are the Docker Engines a run spreads over, joined in one
// swarm whose manager is the first of the file.
type Engines struct {
	File   engines.File
	docker map[string]*Docker // by engine name
}

// ConnectEngines reaches every engine of f, or names the first it cannot.
func ConnectEngines(ctx context.Context, f engines.File) (*Engines, error) {
	e := &Engines{File: f, docker: map[string]*Docker{}}
	var mu sync.Mutex
	err := parallel.First(f.Engines, func(en engines.Engine) error {
		opts := []client.Opt{client.WithHost(en.Host)}
		if t := en.TLS; t != nil {
			opts = append(opts, client.WithTLSClientConfig(t.CA, t.Cert, t.Key))
		}
		d, err := connectDocker(ctx, opts...)
		if err != nil {
			return fmt.Errorf("engine %s: %v", en.Name, err)
		}
		mu.Lock()
		defer mu.Unlock()
		e.docker[en.Name] = d
		return nil
	})
	if err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Close releases every engine's client.
func (e *Engines) Close() error {
	var errs []error
	for _, d := range e.docker {
		errs = append(errs, d.Close())
	}
	return errors.Join(errs...)
}

// Engine is the engine named name; nil when there is none.
func (e *Engines) Engine(name string) *Docker { return e.docker[name] }

// manager is the first engine, which manages the swarm.
func (e *Engines) manager() (engines.Engine, *Docker) {
	m := e.File.Engines[0]
	return m, e.docker[m.Name]
}

// Join makes the engines one swarm: the first inits one when it is in
// none (labelled as ours, so that Leave may undo it), and the others
// join it. An engine already in it is left as it is; one in another
// swarm, or a first engine that is a worker, is an error naming it.
func (e *Engines) Join(ctx context.Context) error {
	m, md := e.manager()
	info, err := md.swarmInfo(ctx)
	if err != nil {
		return fmt.Errorf("engine %s: %v", m.Name, err)
	}
	switch {
	case info.LocalNodeState == swarm.LocalNodeStateInactive:
		_, err := md.cli.SwarmInit(ctx, client.SwarmInitOptions{
			ListenAddr:    swarmListen,
			AdvertiseAddr: m.AdvertiseAddr(),
			Spec:          swarm.Spec{Annotations: swarm.Annotations{Labels: ownLabels()}},
		})
		if err != nil {
			return fmt.Errorf("engine %s: swarm init: %v", m.Name, err)
		}
	case info.LocalNodeState != swarm.LocalNodeStateActive:
		return fmt.Errorf("engine %s: its swarm is %s: %s", m.Name, info.LocalNodeState, info.Error)
	case !info.ControlAvailable:
		return fmt.Errorf("engine %s: a worker of a swarm; the first engine must be its manager", m.Name)
	}
	sw, err := md.cli.SwarmInspect(ctx, client.SwarmInspectOptions{})
	if err != nil {
		return fmt.Errorf("engine %s: %v", m.Name, err)
	}
	nodes, err := md.cli.NodeList(ctx, client.NodeListOptions{})
	if err != nil {
		return fmt.Errorf("engine %s: %v", m.Name, err)
	}
	members := map[string]bool{}
	for _, n := range nodes.Items {
		members[n.ID] = true
	}
	managerAddr := m.AdvertiseAddr()
	if managerAddr == "" {
		managerAddr = info.NodeAddr
	}
	for _, en := range e.File.Engines[1:] {
		d := e.docker[en.Name]
		info, err := d.swarmInfo(ctx)
		switch {
		case err != nil:
			return fmt.Errorf("engine %s: %v", en.Name, err)
		case info.LocalNodeState == swarm.LocalNodeStateActive && members[info.NodeID]:
			continue
		case info.LocalNodeState != swarm.LocalNodeStateInactive:
			return fmt.Errorf("engine %s: in another swarm than engine %s's (its node %s is %s there)", en.Name, m.Name, info.NodeID, info.LocalNodeState)
		}
		_, err = d.cli.SwarmJoin(ctx, client.SwarmJoinOptions{
			ListenAddr:    swarmListen,
			AdvertiseAddr: en.AdvertiseAddr(),
			RemoteAddrs:   []string{net.JoinHostPort(managerAddr, strconv.Itoa(swarmPort))},
			JoinToken:     sw.Swarm.JoinTokens.Worker,
		})
		if err != nil {
			return fmt.Errorf("engine %s: joining engine %s's swarm: %v", en.Name, m.Name, err)
		}
	}
	return nil
}

// Leave undoes Join when the swarm is one splitbrain made: the workers
// leave, then the manager, which ends the swarm. A swarm made by someone
// else is left as it is.
func (e *Engines) Leave(ctx context.Context) error {
	m, md := e.manager()
	sw, err := md.cli.SwarmInspect(ctx, client.SwarmInspectOptions{})
	if err != nil || sw.Swarm.Spec.Labels[LabelManaged] != "true" {
		return nil // in no swarm, or not ours
	}
	err = parallel.First(e.File.Engines[1:], func(en engines.Engine) error {
		if _, err := e.docker[en.Name].cli.SwarmLeave(ctx, client.SwarmLeaveOptions{Force: true}); err != nil && !cerrdefs.IsFailedPrecondition(err) {
			return fmt.Errorf("engine %s: leaving the swarm: %v", en.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if _, err := md.cli.SwarmLeave(ctx, client.SwarmLeaveOptions{Force: true}); err != nil {
		return fmt.Errorf("engine %s: ending the swarm: %v", m.Name, err)
	}
	return nil
}

// Cores are how many CPUs each engine of the file has, in its order.
func (e *Engines) Cores(ctx context.Context) ([]int, error) {
	cores := make([]int, len(e.File.Engines))
	for i, en := range e.File.Engines {
		res, err := e.docker[en.Name].cli.Info(ctx, client.InfoOptions{})
		if err != nil {
			return nil, fmt.Errorf("engine %s: %v", en.Name, err)
		}
		cores[i] = res.Info.NCPU
	}
	return cores, nil
}

// swarmInfo is what the engine says of its place in a swarm.
func (d *Docker) swarmInfo(ctx context.Context) (swarm.Info, error) {
	res, err := d.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return swarm.Info{}, err
	}
	return res.Info.Swarm, nil
}

// managesSwarm says whether the engine is a manager of a swarm.
func (d *Docker) managesSwarm(ctx context.Context) bool {
	info, err := d.swarmInfo(ctx)
	return err == nil && info.ControlAvailable
}

// NewOverlay creates the run's network across the engines: an attachable
// overlay on the manager, which every engine's containers join by name,
// with the file's MTU and a subnet of its own (as NewNetwork's), whose
// engines choose addresses only in dynamicRange.
func (e *Engines) NewOverlay(ctx context.Context, runID string) (string, netip.Prefix, error) {
	_, md := e.manager()
	return md.newNetwork(ctx, runID, func(ipam *dnetwork.IPAM) (string, string, error) {
		name := "splitbrain-" + runID
		if ipam == nil {
			name += "-probe"
		} else {
			ipam.Config[0].IPRange = dynamicRange(ipam.Config[0].Subnet)
		}
		res, err := md.cli.NetworkCreate(ctx, name, client.NetworkCreateOptions{
			Driver:     "overlay",
			Attachable: true,
			Labels:     runLabels(runID, ""),
			Options:    map[string]string{"com.docker.network.driver.mtu": strconv.Itoa(e.File.MTU)},
			IPAM:       ipam,
		})
		return res.ID, name, err
	})
}

// Ship puts images built on from, the engine that made them, on the
// engines that need them (an engine's name to its images), each unless
// the engine holds the same image, by id: saved from from and loaded,
// with no registry.
func (e *Engines) Ship(ctx context.Context, from *Docker, need map[string][]string) error {
	names := slices.Sorted(maps.Keys(need))
	return parallel.First(names, func(name string) error {
		to := e.docker[name]
		if to == nil {
			return fmt.Errorf("no engine %s", name)
		}
		for _, ref := range need[name] {
			if err := to.shipFrom(ctx, from, ref); err != nil {
				return fmt.Errorf("engine %s: shipping %s: %v", name, ref, err)
			}
		}
		return nil
	})
}

// shipFrom loads ref from from onto d unless d holds the same image.
func (d *Docker) shipFrom(ctx context.Context, from *Docker, ref string) error {
	want, err := from.cli.ImageInspect(ctx, ref)
	if err != nil {
		return err
	}
	if have, err := d.cli.ImageInspect(ctx, ref); err == nil && have.ID == want.ID {
		return nil
	}
	saved, err := from.cli.ImageSave(ctx, []string{ref})
	if err != nil {
		return err
	}
	defer saved.Close()
	loaded, err := d.cli.ImageLoad(ctx, saved, client.ImageLoadWithQuiet(true))
	if err != nil {
		return err
	}
	defer loaded.Close()
	if _, err := io.Copy(io.Discard, loaded); err != nil {
		return err
	}
	if have, err := d.cli.ImageInspect(ctx, ref); err != nil || have.ID != want.ID {
		return fmt.Errorf("loaded, but the engine holds %s as %q (%v), not %s", ref, have.ID, err, want.ID)
	}
	return nil
}

// Remove removes what carries label from every engine, workers first:
// the overlay, a swarm network, goes from the manager once no container
// is attached to it.
func (e *Engines) Remove(ctx context.Context, label string) (Removed, error) {
	return e.removeFrom(ctx, label, e.File.Engines)
}

// removeFrom is Remove from some of the engines, in the file's order,
// the first last.
func (e *Engines) removeFrom(ctx context.Context, label string, from []engines.Engine) (Removed, error) {
	if len(from) == 0 {
		return Removed{}, nil
	}
	var (
		mu  sync.Mutex
		sum Removed
	)
	remove := func(en engines.Engine) error {
		r, err := e.docker[en.Name].Remove(ctx, label)
		mu.Lock()
		defer mu.Unlock()
		sum.Containers += r.Containers
		sum.Networks += r.Networks
		sum.Stuck = append(sum.Stuck, r.Stuck...)
		if err != nil {
			return fmt.Errorf("engine %s: %v", en.Name, err)
		}
		return nil
	}
	errs := parallel.Do(from[1:], remove)
	errs = append(errs, remove(from[0]))
	return sum, errors.Join(errs...)
}

// gatewayPort is where the gateway listens in its container.
const gatewayPort = 7070

// StartGateway starts the run's gateway on the engine named on, in
// overlay (whose subnet it is), published on a port that engine picks,
// and returns the dialer that reaches the overlay's addresses through it.
// The controller reaches the engine's host at its advertised address.
func (e *Engines) StartGateway(ctx context.Context, on, runID, overlay string, subnet netip.Prefix) (gateway.Dialer, error) {
	m, ok := e.File.Engine(on)
	if !ok {
		return gateway.Dialer{}, fmt.Errorf("gateway: no engine %q", on)
	}
	md := e.docker[on]
	port := dnetwork.MustParsePort(strconv.Itoa(gatewayPort) + "/tcp")
	res, err := md.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: "splitbrain-" + runID + "-gateway",
		Config: &container.Config{
			Image:        gatewayImage,
			Labels:       runLabels(runID, "gateway"),
			Env:          []string{"SPLITBRAIN_GATEWAY_SUBNET=" + subnet.String()},
			ExposedPorts: dnetwork.PortSet{port: {}},
		},
		HostConfig: &container.HostConfig{
			NetworkMode:  container.NetworkMode(overlay),
			PortBindings: dnetwork.PortMap{port: {{}}},
		},
	})
	if err != nil {
		return gateway.Dialer{}, fmt.Errorf("engine %s: gateway: %v", m.Name, err)
	}
	if _, err := md.cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		return gateway.Dialer{}, fmt.Errorf("engine %s: gateway: %v", m.Name, err)
	}
	in, err := md.cli.ContainerInspect(ctx, res.ID, client.ContainerInspectOptions{})
	if err != nil {
		return gateway.Dialer{}, fmt.Errorf("engine %s: gateway: %v", m.Name, err)
	}
	bound := in.Container.NetworkSettings.Ports[port]
	if len(bound) == 0 {
		return gateway.Dialer{}, fmt.Errorf("engine %s: gateway: its port %s is published nowhere", m.Name, port)
	}
	host := m.AdvertiseAddr()
	if host == "" {
		host = "127.0.0.1" // a unix socket: an engine of this machine
	}
	return gateway.Dialer{Proxy: net.JoinHostPort(host, bound[0].HostPort)}, nil
}
