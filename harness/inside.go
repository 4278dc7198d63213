package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/internal/parallel"
	"github.com/splitbrain/splitbrain/nemesis"
	"github.com/splitbrain/splitbrain/nemesis/procsignal"
	"github.com/splitbrain/splitbrain/targets"
)

// Faults inside a host reach one process of a container through a
// throwaway container in its PID namespace (nemesis/procsignal), which
// needs nothing of the target's image, and stop containers as a deploy
// does, with the manifest's stop signal.

// stopsProcesses says whether the plan stops processes, and so needs the
// signaller's image.
func (r *run) stopsProcesses() bool {
	return slices.ContainsFunc(r.faults, func(f nemesis.Fault) bool { return f.Kind == nemesis.PauseProcess })
}

// StopGrace is how long a graceful stop waits for a node to exit before
// it kills it: Docker's and Kubernetes' default is longer (10 s, 30 s),
// but a node of a test cluster that has not stopped in 5 s will not.
const StopGrace = 5 * time.Second

// Processes are the command names the manifest lets a fault stop in
// container name.
func (c *cluster) Processes(name string) []string { return c.processes[name] }

func (c *cluster) StopProcess(ctx context.Context, name, comm string) error {
	return c.signalProcess(ctx, name, comm, procsignal.Stop, "SIGSTOP")
}

func (c *cluster) ContinueProcess(ctx context.Context, name, comm string) error {
	return c.signalProcess(ctx, name, comm, procsignal.Continue, "SIGCONT")
}

// signalProcess takes action on the processes named comm in container
// name: the signaller signals those it may, and the Engine the
// container's init, which no process of its own namespace can stop. A
// name the start check found to be init's (checkProcesses) is signalled
// by the Engine alone: a container restarted runs the same init.
func (c *cluster) signalProcess(ctx context.Context, name, comm, action, signal string) error {
	c.mu.RLock()
	id, init := c.ids[name], c.inits[name] == comm
	c.mu.RUnlock()
	if init {
		return c.on(name).Signal(ctx, id, signal)
	}
	r, err := c.signaller(ctx, name, action, comm)
	if err != nil {
		return err
	}
	if !r.Found() {
		return fmt.Errorf("no process named %q runs in %s (processes in its %s)", comm, c.kind(name), targets.ManifestFile)
	}
	if !r.Init {
		return nil
	}
	return c.on(name).Signal(ctx, id, signal)
}

// checkProcesses makes sure, in a run that stops processes, that every
// process the manifest names runs in each container it names it for,
// once the cluster is up: a name that never appears is bad input, found
// before a fault would fail on it mid-run.
func (r *run) checkProcesses(ctx context.Context) error {
	if !r.stopsProcesses() {
		return nil
	}
	c := r.cluster
	var names []string
	for _, name := range append(slices.Clone(c.nodes), c.services...) {
		if len(c.processes[name]) > 0 {
			names = append(names, name)
		}
	}
	missing := make([]string, len(names)) // by container: the first name that does not run there
	running := make([][]string, len(names))
	err := parallel.Each(names, func(name string) error {
		i := slices.Index(names, name)
		r, err := c.signaller(ctx, name, procsignal.List, "")
		if err != nil {
			return err
		}
		running[i] = r.Running
		for _, comm := range c.processes[name] {
			if !slices.Contains(r.Running, procsignal.Cut(comm)) && missing[i] == "" {
				missing[i] = comm
			}
			if procsignal.Cut(comm) == r.InitComm {
				c.mu.Lock()
				c.inits[name] = comm // the Engine signals it, at once
				c.mu.Unlock()
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// One line: the first name missing, and every container it is missing in.
	first := slices.IndexFunc(missing, func(comm string) bool { return comm != "" })
	if first < 0 {
		return nil
	}
	var where []string
	for i, comm := range missing {
		if comm == missing[first] {
			where = append(where, c.kind(names[i]))
		}
	}
	return badInput("%s: processes: no process named %q runs in %s once up (%s runs %s)", targets.ManifestFile,
		missing[first], strings.Join(where, ", "), names[first], strings.Join(running[first], ", "))
}

// signaller runs the signaller in container name's PID namespace.
func (c *cluster) signaller(ctx context.Context, name, action, comm string) (procsignal.Result, error) {
	c.mu.RLock()
	id := c.ids[name]
	c.mu.RUnlock()
	code, out, err := c.on(name).runToEnd(ctx, c.runID, fmt.Sprintf("%s-%s-%d", name, action, c.signals.Add(1)),
		&container.Config{Image: procsignalImage, Cmd: []string{action, comm}},
		&container.HostConfig{PidMode: container.PidMode("container:" + id), NetworkMode: "none"})
	if err != nil {
		return procsignal.Result{}, fmt.Errorf("%s %s in %s: %v", action, comm, name, err)
	}
	var r procsignal.Result
	if code != 0 || json.Unmarshal(lastLine(out), &r) != nil {
		return r, fmt.Errorf("%s %s in %s: the signaller exited %d: %s", action, comm, name, code, strings.TrimSpace(tail(out, 3)))
	}
	return r, nil
}

// Stop stops a node as a deploy does, and the members beside it with it,
// as Kill does.
func (c *cluster) Stop(ctx context.Context, name string) error {
	signal := c.stopSignal
	if _, member := c.serviceOf[name]; member {
		signal = targets.DefaultStopSignal
	}
	return c.halt(name, func(d *Docker, id string) error { return d.Stop(ctx, id, signal, StopGrace) })
}

// WaitHealthy waits until node answers GET /health with 200, or a
// service member is ready as its service's manifest says, for as long as
// one may take to start.
func (c *cluster) WaitHealthy(ctx context.Context, name string) error {
	if s, member := c.serviceOf[name]; member {
		c.mu.RLock()
		id := c.ids[name]
		c.mu.RUnlock()
		return c.waitService(ctx, name, id, s, c.startTimeout)
	}
	_, err := c.waitAll(ctx, []string{name}, c.startTimeout, func(n string) string { return c.NodeURL(n) + contract.HealthPath })
	return err
}

// notKilling are the signals, by the numbers the Engine's events give
// them (Linux's), that stop or continue a container's process and cannot
// end it: a pause-process's, not a kill from outside.
var notKilling = []string{"19", "18"} // SIGSTOP, SIGCONT
