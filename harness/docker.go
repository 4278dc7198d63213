package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/events"
	dnetwork "github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/splitbrain/splitbrain/internal/parallel"
)

// Labels put on everything splitbrain creates, so that teardown and
// `splitbrain clean` find exactly that and nothing else (and LabelOwner,
// orphans.go).
const (
	LabelManaged = "dev.splitbrain"      // "true" on every object of ours
	LabelRun     = "dev.splitbrain.run"  // the run id
	LabelNode    = "dev.splitbrain.node" // the node name, or "resource"
)

// Docker is the container backend: one Docker Engine, through its API.
type Docker struct {
	cli *client.Client
	// Progress hears how long builds that take minutes are getting on
	// (the Debian base image); nil hears nothing.
	Progress io.Writer
}

// ConnectDocker reaches the Docker Engine, or says where it looked.
func ConnectDocker(ctx context.Context) (*Docker, error) {
	return connectDocker(ctx, client.FromEnv)
}

// connectDocker reaches the Engine opts name, or says where it looked.
func connectDocker(ctx context.Context, opts ...client.Opt) (*Docker, error) {
	cli, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker engine: %v", err)
	}
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		cli.Close()
		return nil, fmt.Errorf("cannot reach the Docker Engine at %s: %v", cli.DaemonHost(), err)
	}
	return &Docker{cli: cli}, nil
}

// Close releases the client.
func (d *Docker) Close() error { return d.cli.Close() }

// WaitEngine waits until the Engine answers, as after its restart, or ctx
// ends.
func (d *Docker) WaitEngine(ctx context.Context) error {
	for {
		_, err := d.cli.Ping(ctx, client.PingOptions{})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the Docker Engine does not answer: %v", err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// EngineVersion is the engine's version, for run.json.
func (d *Docker) EngineVersion(ctx context.Context) string {
	v, err := d.cli.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return "unknown"
	}
	return v.Version
}

// NewNetwork creates the run's internal network: containers reach each
// other and the host reaches them, but nothing is published on the host.
// It returns the network's name and its subnet, which is fixed (Docker
// picks a free one, and the network is made again with it given), so
// that every container of the run can have an address of its own.
func (d *Docker) NewNetwork(ctx context.Context, runID string) (string, netip.Prefix, error) {
	return d.newNetwork(ctx, runID, func(ipam *dnetwork.IPAM) (string, string, error) {
		name := "splitbrain-" + runID
		if ipam == nil {
			name += "-probe"
		}
		res, err := d.cli.NetworkCreate(ctx, name, client.NetworkCreateOptions{
			Driver: "bridge", Internal: true, Labels: runLabels(runID, ""), IPAM: ipam,
		})
		return res.ID, name, err
	})
}

// newNetwork makes a network by create with the subnet the Engine gives
// it: create makes a probe (ipam nil), whose subnet is read before it is
// removed, then the network with that subnet.
func (d *Docker) newNetwork(ctx context.Context, runID string, create func(ipam *dnetwork.IPAM) (id, name string, err error)) (string, netip.Prefix, error) {
	var errs []error
	for range 5 { // another network may take the subnet between the two
		probe, _, err := create(nil)
		if err != nil {
			return "", netip.Prefix{}, fmt.Errorf("create network: %v", err)
		}
		subnet, err := d.subnet(ctx, probe)
		if _, rerr := d.cli.NetworkRemove(ctx, probe, client.NetworkRemoveOptions{}); rerr != nil {
			return "", netip.Prefix{}, fmt.Errorf("create network: %v", rerr)
		}
		if err != nil {
			return "", netip.Prefix{}, err
		}
		_, name, err := create(&dnetwork.IPAM{Config: []dnetwork.IPAMConfig{{Subnet: subnet}}})
		if err == nil {
			return name, subnet, nil
		}
		errs = append(errs, err)
	}
	return "", netip.Prefix{}, fmt.Errorf("create network: %v", errors.Join(errs...))
}

// subnet is the IPv4 subnet Docker gave network id. A swarm's manager
// gives an overlay its subnet a moment after creating it: an empty one
// is asked for again, for up to 5 s.
func (d *Docker) subnet(ctx context.Context, id string) (netip.Prefix, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, err := d.cli.NetworkInspect(ctx, id, client.NetworkInspectOptions{})
		if err != nil {
			return netip.Prefix{}, err
		}
		for _, c := range res.Network.IPAM.Config {
			if c.Subnet.Addr().Is4() {
				return c.Subnet, nil
			}
		}
		if len(res.Network.IPAM.Config) > 0 || time.Now().After(deadline) {
			return netip.Prefix{}, errors.New("the network has no IPv4 subnet")
		}
		select {
		case <-ctx.Done():
			return netip.Prefix{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ContainerSpec is one container of a run.
type ContainerSpec struct {
	RunID   string
	Name    string // node name (n1...) or "resource"; also its alias on the network
	Image   string
	Network string
	Env     map[string]string
	Binds   []string // host:container bind mounts
	// IP, if valid, is the container's fixed address on Network, kept
	// across restarts; Hosts are names it resolves without DNS, from its
	// /etc/hosts.
	IP    netip.Addr
	Hosts map[string]netip.Addr
	// Beside, if set, is the id of a running container whose network
	// namespace this one joins (Docker's network mode container:<id>):
	// its address, host name and /etc/hosts are that container's, and
	// Network, IP and Hosts are not used.
	Beside string
	// Entrypoint, if set, replaces the image's entry point and command,
	// run as User ("" the image's); CapAdd and Devices are granted to
	// it, and Files (path to content, executable) copied in before it
	// starts: what the disk-fault layer needs (disk.go).
	Entrypoint []string
	User       string
	CapAdd     []string
	Devices    []string
	Files      map[string][]byte
}

// Container is a started container.
type Container struct {
	ID   string
	Name string
}

// Start creates and starts a container and returns once it runs; it does
// not wait for the program inside to be ready.
func (d *Docker) Start(ctx context.Context, s ContainerSpec) (Container, error) {
	// The Engine finishes a create it received even when the request is
	// cancelled (a Ctrl-C): one cut short here would appear after the
	// teardown that removes the run's containers by label. So a start,
	// once asked, is seen through.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if s.Beside != "" {
		id, err := d.startBeside(ctx, s, nil, false)
		return Container{ID: id, Name: s.Name}, err
	}
	var env []string
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		env = append(env, k+"="+s.Env[k])
	}
	cfg := &container.Config{Image: s.Image, Hostname: s.Name, Env: env, Labels: runLabels(s.RunID, s.Name)}
	if s.Entrypoint != nil {
		cfg.Entrypoint, cfg.User = s.Entrypoint, s.User
	}
	host := &container.HostConfig{NetworkMode: container.NetworkMode(s.Network), Binds: s.Binds, CapAdd: s.CapAdd}
	for _, dev := range s.Devices {
		host.Devices = append(host.Devices, container.DeviceMapping{PathOnHost: dev, PathInContainer: dev, CgroupPermissions: "rwm"})
	}
	for _, name := range slices.Sorted(maps.Keys(s.Hosts)) {
		host.ExtraHosts = append(host.ExtraHosts, name+":"+s.Hosts[name].String())
	}
	endpoint := &dnetwork.EndpointSettings{Aliases: []string{s.Name}}
	if s.IP.IsValid() {
		endpoint.IPAMConfig = &dnetwork.EndpointIPAMConfig{IPv4Address: s.IP}
	}
	res, err := d.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: "splitbrain-" + s.RunID + "-" + s.Name, Config: cfg, HostConfig: host,
		NetworkingConfig: &dnetwork.NetworkingConfig{EndpointsConfig: map[string]*dnetwork.EndpointSettings{s.Network: endpoint}},
	})
	if err != nil {
		return Container{}, fmt.Errorf("start %s: %v", s.Name, err)
	}
	// Created but perhaps not started: it is ours, and teardown will
	// remove it by label; the container is reported so that its log can
	// be shown.
	ctr := Container{ID: res.ID, Name: s.Name}
	if len(s.Files) > 0 {
		if err := d.copyIn(ctx, res.ID, "/", s.Files, 0o755); err != nil {
			return ctr, fmt.Errorf("start %s: %v", s.Name, err)
		}
	}
	if _, err := d.cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		return ctr, fmt.Errorf("start %s: %v", s.Name, err)
	}
	return ctr, nil
}

// IP is the container's address on the run's network. Inspected, not
// cached: a restarted container may come back with another address.
func (d *Docker) IP(ctx context.Context, id, networkName string) (string, error) {
	res, err := d.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return "", err
	}
	if res.Container.NetworkSettings == nil {
		return "", errors.New("no network settings")
	}
	ep, ok := res.Container.NetworkSettings.Networks[networkName]
	if !ok || !ep.IPAddress.IsValid() {
		return "", fmt.Errorf("container %s has no address on %s", id[:12], networkName)
	}
	return ep.IPAddress.String(), nil
}

// Exited reports whether the container's process has ended, and its code.
func (d *Docker) Exited(ctx context.Context, id string) (bool, int) {
	res, err := d.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil || res.Container.State == nil || res.Container.State.Running {
		return false, 0
	}
	return true, res.Container.State.ExitCode
}

// Events streams what happens to the run's containers until ctx ends; the
// error channel says why the stream ended. It returns once the Engine has
// begun to stream, so that nothing after the call goes unseen.
func (d *Docker) Events(ctx context.Context, runID string) (<-chan events.Message, <-chan error) {
	f := make(client.Filters).Add("type", "container").Add("label", LabelRun+"="+runID)
	res := d.cli.Events(ctx, client.EventsListOptions{Filters: f})
	return res.Messages, res.Err
}

// Kill sends SIGKILL to the container's processes; the container stays, with
// its file system, so it can be started again.
func (d *Docker) Kill(ctx context.Context, id string) error {
	_, err := d.cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "SIGKILL"})
	return err
}

// Stop stops a container as a deploy does: signal, then SIGKILL after
// grace. It returns once the container is gone.
func (d *Docker) Stop(ctx context.Context, id, signal string, grace time.Duration) error {
	secs := int(grace.Seconds())
	_, err := d.cli.ContainerStop(ctx, id, client.ContainerStopOptions{Signal: signal, Timeout: &secs})
	return err
}

// Signal sends a container's init signal, from the Engine: from outside
// the container's PID namespace, where even SIGSTOP reaches its init.
func (d *Docker) Signal(ctx context.Context, id, signal string) error {
	_, err := d.cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: signal})
	return err
}

// Restart starts a stopped container again.
func (d *Docker) Restart(ctx context.Context, id string) error {
	_, err := d.cli.ContainerStart(ctx, id, client.ContainerStartOptions{})
	return err
}

// Pause freezes every process of the container (cgroup freezer).
func (d *Docker) Pause(ctx context.Context, id string) error {
	return retryTransient(ctx, func() error {
		_, err := d.cli.ContainerPause(ctx, id, client.ContainerPauseOptions{})
		return err
	}, "is already paused", "unable to freeze")
}

// Unpause thaws a paused container.
func (d *Docker) Unpause(ctx context.Context, id string) error {
	return retryTransient(ctx, func() error {
		_, err := d.cli.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{})
		return err
	}, "is not paused")
}

// Two refusals of a freeze or a thaw pass within a moment, and the call
// is tried again for at most transientFor:
//   - The engine marks a container paused (or not) twice: as it freezes
//     (or thaws) it, and again when containerd's event of that reaches
//     it, later. A freeze soon after a thaw (a soak's faults a second
//     apart, on a loaded machine) can meet the late event of the freeze
//     before, which marks the thawed container paused until the thaw's
//     own event follows: the engine refuses the freeze as a conflict,
//     while the cgroup is as we left it. A thaw can meet the same.
//   - runc gives up a freeze that a process did not reach within its
//     wait ("unable to freeze"), and thaws the cgroup back: at a load of
//     18 on two cores a catalogue run's pause-all met it.
const transientFor = 5 * time.Second

// retryTransient calls act until it succeeds, or fails with an error
// that says none of transient, or transientFor has passed.
func retryTransient(ctx context.Context, act func() error, transient ...string) error {
	deadline := time.Now().Add(transientFor)
	for {
		err := act()
		if err == nil || !slices.ContainsFunc(transient, func(s string) bool { return strings.Contains(err.Error(), s) }) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// StartSidecar starts a container of image in the network namespace of the
// container target, with NET_ADMIN and nothing more: the packet-filter
// helper of a node. Target images need no tools of ours, and no container
// of the run is privileged.
func (d *Docker) StartSidecar(ctx context.Context, runID, name, target, image string) (string, error) {
	return d.startBeside(ctx, ContainerSpec{RunID: runID, Name: name, Image: image, Beside: target}, []string{"NET_ADMIN"}, false)
}

// StartClockSidecar starts a container of image in the network and PID
// namespaces of the container target, with SYS_PTRACE and nothing more
// (never SYS_TIME: the host's clock is never touched), and binds: the
// clock helper of a node (nemesis/vdsoclock), which patches the vDSOs of
// the node's processes. Docker's default seccomp profile allows ptrace
// once the capability is granted.
func (d *Docker) StartClockSidecar(ctx context.Context, runID, name, target, image string, env map[string]string, binds []string) (string, error) {
	return d.startBeside(ctx, ContainerSpec{RunID: runID, Name: name, Image: image, Beside: target, Env: env, Binds: binds}, []string{"SYS_PTRACE"}, true)
}

// startBeside creates and starts the container s in the network namespace
// of container s.Beside (and in its PID namespace if pid), with the
// capabilities capAdd besides Docker's defaults. It returns the
// container's id once created, even when it could not be started.
func (d *Docker) startBeside(ctx context.Context, s ContainerSpec, capAdd []string, pid bool) (string, error) {
	var env []string
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		env = append(env, k+"="+s.Env[k])
	}
	var pidMode container.PidMode
	if pid {
		pidMode = container.PidMode("container:" + s.Beside)
	}
	res, err := d.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:   "splitbrain-" + s.RunID + "-" + s.Name,
		Config: &container.Config{Image: s.Image, Labels: runLabels(s.RunID, s.Name), Env: env},
		HostConfig: &container.HostConfig{
			NetworkMode: container.NetworkMode("container:" + s.Beside),
			PidMode:     pidMode,
			CapAdd:      capAdd,
			Binds:       s.Binds,
		},
	})
	if err != nil {
		return "", fmt.Errorf("create %s: %v", s.Name, err)
	}
	if _, err := d.cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		return res.ID, fmt.Errorf("start %s: %v", s.Name, err)
	}
	return res.ID, nil
}

// helperTimeout bounds the run of a helper container (a signaller, the
// packet probe, the libfaketime canary), which takes well under a second
// on an idle overlay2 Engine: up to 6 s was measured on a fuse-overlayfs
// one, and more than 15 s on a cold .ci/run, three test packages side by
// side on two cores.
const helperTimeout = time.Minute

// runToEnd runs a helper container of the run runID called name, as cfg
// and host say, until its program ends (within helperTimeout), removes
// it, and returns its exit code and its log.
func (d *Docker) runToEnd(ctx context.Context, runID, name string, cfg *container.Config, host *container.HostConfig) (int64, []byte, error) {
	cfg.Labels = runLabels(runID, name)
	res, err := d.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: "splitbrain-" + runID + "-" + name, Config: cfg, HostConfig: host})
	if err != nil {
		return 0, nil, fmt.Errorf("create %s: %v", name, err)
	}
	defer d.cli.ContainerRemove(context.WithoutCancel(ctx), res.ID, client.ContainerRemoveOptions{Force: true})
	ctx, cancel := context.WithTimeout(ctx, helperTimeout)
	defer cancel()
	wait := d.cli.ContainerWait(ctx, res.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := d.cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		return 0, nil, fmt.Errorf("start %s: %v", name, err)
	}
	var code int64
	select {
	case r := <-wait.Result:
		code = r.StatusCode
	case err := <-wait.Error:
		return 0, nil, fmt.Errorf("%s did not end: %v", name, err)
	}
	out, err := d.Logs(ctx, res.ID)
	return code, out, err
}

// RestartContainer stops (if running) and starts a container again. A
// sidecar must be restarted after its node was: a started container gets a
// new network namespace, and the sidecar has to join that one.
func (d *Docker) RestartContainer(ctx context.Context, id string) error {
	timeout := 0
	_, err := d.cli.ContainerRestart(ctx, id, client.ContainerRestartOptions{Timeout: &timeout})
	return err
}

// Exec runs cmd inside the running container id and returns its exit
// code and its output, stdout and stderr interleaved.
func (d *Docker) Exec(ctx context.Context, id string, cmd []string) (int, []byte, error) {
	ex, err := d.cli.ExecCreate(ctx, id, client.ExecCreateOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return 0, nil, err
	}
	att, err := d.cli.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return 0, nil, err
	}
	defer att.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, att.Reader); err != nil {
		return 0, out.Bytes(), err
	}
	res, err := d.cli.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{})
	if err != nil {
		return 0, out.Bytes(), err
	}
	return res.ExitCode, out.Bytes(), nil
}

// Logs returns the container's whole output, stdout and stderr interleaved.
func (d *Docker) Logs(ctx context.Context, id string) ([]byte, error) {
	res, err := d.cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return nil, err
	}
	defer res.Close()
	var out bytes.Buffer
	_, err = stdcopy.StdCopy(&out, &out, res)
	return out.Bytes(), err
}

// Removed counts what Remove took away, and names the networks it could
// not.
type Removed struct {
	Containers, Networks int
	// Stuck are networks the Engine refuses to remove for an endpoint it
	// kept after the container was gone: a fault of the Engine's own
	// (moby/moby#17217, #33156), seen once in 160 runs four at once,
	// that only an Engine restart clears. Nothing of the run runs in them.
	Stuck []string
}

// Remove force-removes every container and then every network carrying
// the label filter (LabelRun=id for one run, LabelManaged=true for all).
// Containers go in parallel, force removal kills without a grace period,
// and those that joined another's network namespace (the packet-filter
// sidecars) go before the others: the Engine releases the namespace's
// endpoint with its owner.
func (d *Docker) Remove(ctx context.Context, label string) (Removed, error) {
	return d.removeWhere(ctx, label, func(map[string]string, time.Time) bool { return true })
}

// removeWhere is Remove of the objects carrying label that doomed picks by
// their labels and when they were made.
func (d *Docker) removeWhere(ctx context.Context, label string, doomed func(labels map[string]string, created time.Time) bool) (Removed, error) {
	var n Removed
	f := make(client.Filters).Add("label", label)
	cs, err := d.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return n, err
	}
	var joiners, owners []string
	for _, c := range cs.Items {
		if !doomed(c.Labels, time.Unix(c.Created, 0)) {
			continue
		}
		if strings.HasPrefix(c.HostConfig.NetworkMode, "container:") {
			joiners = append(joiners, c.ID)
		} else {
			owners = append(owners, c.ID)
		}
	}
	var errs []error
	for _, ids := range [][]string{joiners, owners} {
		removed, err := d.removeContainers(ctx, ids)
		n.Containers += removed
		errs = append(errs, err)
	}
	ns, err := d.cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return n, errors.Join(append(errs, err)...)
	}
	for _, nw := range ns.Items {
		if !doomed(nw.Labels, nw.Created) || (nw.Scope == "swarm" && !d.managesSwarm(ctx)) {
			continue // a worker sees a swarm's network it is attached to; its manager removes it
		}
		switch removed, stuck, err := d.removeNetwork(ctx, nw.ID); {
		case stuck:
			n.Stuck = append(n.Stuck, nw.Name)
		case err != nil:
			errs = append(errs, err)
		case removed:
			n.Networks++
		}
	}
	return n, errors.Join(errs...)
}

// removeContainers force-removes the containers ids at once and says how
// many it removed: one already gone, or removed by someone else meanwhile,
// was not left for it, and is not counted.
func (d *Docker) removeContainers(ctx context.Context, ids []string) (int, error) {
	var removed atomic.Int64
	errs := parallel.Do(ids, func(id string) error {
		_, err := d.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		switch {
		case err == nil:
			removed.Add(1)
		case cerrdefs.IsConflict(err):
			// Someone else is removing it (a person, another
			// program): wait until it is gone.
			return d.waitGone(ctx, id)
		case !cerrdefs.IsNotFound(err):
			return err
		}
		return nil
	})
	return int(removed.Load()), errors.Join(errs...)
}

// endpointRelease bounds the wait for the Engine to let go of a removed
// container's endpoint.
const endpointRelease = 10 * time.Second

// removeNetwork removes network id once the Engine has released the
// endpoints of the containers just removed from it. It may release them
// after the removal has returned: with four runs at once on 2 cores, a
// network removed straight after its containers was refused for "active
// endpoints". removed says it was there to remove: a swarm's manager lists
// an overlay for a moment after its removal, so a network that is not
// found was removed before. stuck says the Engine still held an endpoint
// when the wait ended.
func (d *Docker) removeNetwork(ctx context.Context, id string) (removed, stuck bool, err error) {
	deadline := time.Now().Add(endpointRelease)
	for {
		_, err := d.cli.NetworkRemove(ctx, id, client.NetworkRemoveOptions{})
		// The manager answers an overlay not found, not as 404.
		if err == nil || cerrdefs.IsNotFound(err) || strings.Contains(err.Error(), "not found") {
			return err == nil, false, nil
		}
		// An overlay's swarm lets go of the attachment of a container
		// on a worker a moment after its removal (and of one on an
		// engine that is lost, only once it is back).
		if !strings.Contains(err.Error(), "active endpoints") && !strings.Contains(err.Error(), "in use by task") {
			return false, false, err
		}
		if time.Now().After(deadline) {
			return false, true, err
		}
		select {
		case <-ctx.Done():
			return false, false, err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitGone waits until container id no longer exists, or ctx ends.
func (d *Docker) waitGone(ctx context.Context, id string) error {
	for {
		_, err := d.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if cerrdefs.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("container %.12s is still being removed: %v", id, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ownLabels are the labels of every container and network of ours: ours,
// and the process that made it (LabelOwner).
func ownLabels() map[string]string {
	l := map[string]string{LabelManaged: "true"}
	if self, err := thisProcess(); err == nil {
		l[LabelOwner] = self.String()
	}
	return l
}

// runLabels are the labels of a container (of node) or network (node "")
// of run runID.
func runLabels(runID, node string) map[string]string {
	l := ownLabels()
	l[LabelRun] = runID
	if node != "" {
		l[LabelNode] = node
	}
	return l
}

// tail returns the last n lines of b, for error messages.
func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
