package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/nemesis"
	"github.com/splitbrain/splitbrain/nemesis/vdsoclock"
	"github.com/splitbrain/splitbrain/targets"
)

// Clock faults reach the containers of a target with clock: process (its
// nodes, or a service's members) through a clock sidecar beside each, in
// its PID and network namespaces (nemesis/vdsoclock), which patches the
// vDSO of every process in it: any program, Go's runtime and its monotonic
// clock included. The sidecar mounts the container's clock folder and
// takes the skew in force from its clock file when it starts, so a
// container restarted during a clock fault is skewed again.

// clockSidecars says whether the run gives clock sidecars to its nodes
// (services false) or to its service members with clock: process
// (services true): only when the plan skews their clocks, as packet-filter
// sidecars come only with partitions.
func (r *run) clockSidecars(services bool) bool {
	m := r.manifest
	has := m.Clock == targets.ClockProcess
	if services {
		has = slices.ContainsFunc(m.Services, func(s targets.Service) bool { return s.Clock == targets.ClockProcess })
	}
	return has && slices.ContainsFunc(r.faults, func(f nemesis.Fault) bool { return f.Kind == nemesis.Clock && f.OnServices == services })
}

// clockSidecarWait is how long a clock sidecar has to answer: it starts
// in well under a second.
const clockSidecarWait = 20 * time.Second

// startClockSidecar starts the clock sidecar of container name (id) and
// waits until it answers. A sidecar that cannot patch (no ptrace: a
// seccomp profile, a kernel that forbids it, another architecture) exits
// at once saying why: bad input for a manifest that asks for it.
func (r *run) startClockSidecar(ctx context.Context, name, id string) error {
	c := r.cluster
	began := time.Now()
	sc, err := c.on(name).StartClockSidecar(ctx, r.info.ID, name+"-clock", id, vdsoclockImage,
		map[string]string{contract.EnvClockFile: clockMount + "/" + clockFile},
		r.clockSidecarBinds(name))
	c.timeStart(name+"-clock", began)
	if sc != "" {
		c.mu.Lock()
		c.clockSidecars[name] = sc
		c.mu.Unlock()
	}
	if err != nil {
		return err
	}
	return c.waitClockSidecar(ctx, name)
}

// clockSidecarBinds mounts container name's clock folder into its clock
// sidecar, read-only, on this machine's engine; over several engines the
// file is copied into both (cluster.copyClock).
func (r *run) clockSidecarBinds(name string) []string {
	if r.engines != nil {
		return nil
	}
	return []string{filepath.Join(r.cluster.clockDir, name) + ":" + clockMount + ":ro"}
}

// waitClockSidecar waits until name's clock sidecar answers, or has
// exited, which it does only when it cannot patch.
func (c *cluster) waitClockSidecar(ctx context.Context, name string) error {
	c.mu.RLock()
	id := c.clockSidecars[name]
	c.mu.RUnlock()
	hc := c.client(healthTimeout)
	for deadline := time.Now().Add(clockSidecarWait); ; time.Sleep(20 * time.Millisecond) {
		res, err := hc.Get(c.clockURL(name) + "/health")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		if exited, _ := c.on(name).Exited(ctx, id); exited {
			logs, _ := c.on(name).Logs(ctx, id)
			lines := strings.Split(strings.TrimSpace(string(logs)), "\n")
			return badInput("clock: %s: the clock sidecar of %s cannot patch its processes: %s", targets.ClockProcess, name, lines[len(lines)-1])
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the clock sidecar of %s did not answer in %s", name, clockSidecarWait)
		}
	}
}

func (c *cluster) clockURL(name string) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return "http://" + netip.AddrPortFrom(c.ips[name], vdsoclock.Port).String()
}

// setProcessClock gives every process of container name skew s, through
// its clock sidecar, and returns once they all have it. The first skew of
// a process waits for it to stop under ptrace: a frozen (paused) one is
// patched when it thaws.
func (c *cluster) setProcessClock(ctx context.Context, name string, s contract.Skew) error {
	return putJSON(ctx, c.client(0), c.clockURL(name)+"/skew", "clock sidecar of "+name, s)
}

// putJSON PUTs v as JSON to url and wants 204 No Content; what names the
// server in its errors, with what it answered otherwise.
func putJSON(ctx context.Context, hc *http.Client, url, what string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	res, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %v", what, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusNoContent {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		return fmt.Errorf("%s: %s: %s", what, res.Status, bytes.TrimSpace(msg))
	}
	return nil
}
