package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/network"
)

// Labels put on everything splitbrain creates, so that teardown and
// `splitbrain clean` find exactly that and nothing else.
const (
	LabelManaged = "dev.splitbrain"      // "true" on every object of ours
	LabelRun     = "dev.splitbrain.run"  // the run id
	LabelNode    = "dev.splitbrain.node" // the node name, or "resource"
)

// Docker is the container backend: testcontainers-go to create containers
// and networks, the Engine API client for everything a fault needs.
type Docker struct {
	cli *client.Client
	// Progress hears how long builds that take minutes are getting on
	// (the Debian base image); nil hears nothing.
	Progress io.Writer
}

// ConnectDocker reaches the Docker Engine, or says where it looked.
func ConnectDocker(ctx context.Context) (*Docker, error) {
	// The reaper would need an image pulled from a registry, and we clean
	// up after ourselves by label. testcontainers reads this once, at its
	// first call, so it must be set before anything else.
	os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	tclog.SetDefault(tclog.NewNoopLogger())
	cli, err := client.New(client.FromEnv)
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
func (d *Docker) NewNetwork(ctx context.Context, runID string) (string, error) {
	nw, err := network.New(ctx, network.WithInternal(), network.WithLabels(runLabels(runID, "")))
	if err != nil {
		return "", fmt.Errorf("create network: %v", err)
	}
	return nw.Name, nil
}

// ContainerSpec is one container of a run.
type ContainerSpec struct {
	RunID   string
	Name    string // node name (n1...) or "resource"; also its alias on the network
	Image   string
	Network string
	Env     map[string]string
	Binds   []string // host:container bind mounts
}

// Container is a started container.
type Container struct {
	ID   string
	Name string
}

// Start creates and starts a container and returns once it runs; it does
// not wait for the program inside to be ready.
func (d *Docker) Start(ctx context.Context, s ContainerSpec) (Container, error) {
	ctr, err := testcontainers.Run(ctx, s.Image,
		testcontainers.WithName("splitbrain-"+s.RunID+"-"+s.Name),
		testcontainers.WithLabels(runLabels(s.RunID, s.Name)),
		testcontainers.WithEnv(s.Env),
		network.WithNetworkName([]string{s.Name}, s.Network),
		testcontainers.WithConfigModifier(func(c *container.Config) { c.Hostname = s.Name }),
		testcontainers.WithHostConfigModifier(func(h *container.HostConfig) { h.Binds = s.Binds }),
	)
	if ctr != nil && err != nil {
		// Created but not started: it is ours, and teardown will remove it
		// by label; report the container so its log can be shown.
		return Container{ID: ctr.GetContainerID(), Name: s.Name}, fmt.Errorf("start %s: %v", s.Name, err)
	}
	if err != nil {
		return Container{}, fmt.Errorf("start %s: %v", s.Name, err)
	}
	return Container{ID: ctr.GetContainerID(), Name: s.Name}, nil
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

// Kill sends SIGKILL to the container's processes; the container stays, with
// its file system, so it can be started again.
func (d *Docker) Kill(ctx context.Context, id string) error {
	_, err := d.cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "SIGKILL"})
	return err
}

// Restart starts a stopped container again.
func (d *Docker) Restart(ctx context.Context, id string) error {
	_, err := d.cli.ContainerStart(ctx, id, client.ContainerStartOptions{})
	return err
}

// Pause freezes every process of the container (cgroup freezer).
func (d *Docker) Pause(ctx context.Context, id string) error {
	_, err := d.cli.ContainerPause(ctx, id, client.ContainerPauseOptions{})
	return err
}

// Unpause thaws a paused container.
func (d *Docker) Unpause(ctx context.Context, id string) error {
	_, err := d.cli.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{})
	return err
}

// StartSidecar starts a container of image in the network namespace of the
// container target, with NET_ADMIN and nothing more: the packet-filter
// helper of a node. Target images need no tools of ours, and no container
// of the run is privileged.
func (d *Docker) StartSidecar(ctx context.Context, runID, name, target, image string) (string, error) {
	res, err := d.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:   "splitbrain-" + runID + "-" + name,
		Config: &container.Config{Image: image, Labels: runLabels(runID, name)},
		HostConfig: &container.HostConfig{
			NetworkMode: container.NetworkMode("container:" + target),
			CapAdd:      []string{"NET_ADMIN"},
		},
	})
	if err != nil {
		return "", fmt.Errorf("create %s: %v", name, err)
	}
	if _, err := d.cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		return res.ID, fmt.Errorf("start %s: %v", name, err)
	}
	return res.ID, nil
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

// Removed counts what Remove took away.
type Removed struct {
	Containers, Networks int
}

// Remove force-removes every container and then every network carrying
// the label filter (LabelRun=id for one run, LabelManaged=true for all).
// Containers go in parallel: force removal kills without a grace period.
func (d *Docker) Remove(ctx context.Context, label string) (Removed, error) {
	var n Removed
	f := make(client.Filters).Add("label", label)
	cs, err := d.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return n, err
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, c := range cs.Items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := d.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
			mu.Lock()
			defer mu.Unlock()
			if err != nil && !cerrdefs.IsNotFound(err) {
				errs = append(errs, err)
				return
			}
			n.Containers++
		}()
	}
	wg.Wait()
	ns, err := d.cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return n, errors.Join(append(errs, err)...)
	}
	for _, nw := range ns.Items {
		if _, err := d.cli.NetworkRemove(ctx, nw.ID, client.NetworkRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		n.Networks++
	}
	return n, errors.Join(errs...)
}

func runLabels(runID, node string) map[string]string {
	l := map[string]string{LabelManaged: "true", LabelRun: runID}
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
