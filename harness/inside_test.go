package harness

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// states reads, from the Engine's host, the state of each process of
// container name by its command name: "T" for one stopped.
func states(t *testing.T, c *cluster, name string) map[string]string {
	t.Helper()
	top, err := c.docker.cli.ContainerTop(context.Background(), c.ids[name], client.ContainerTopOptions{Arguments: []string{"-o", "pid,stat,comm"}})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range top.Processes {
		if len(p) == 3 {
			out[p[2]] = p[1][:1]
		}
	}
	return out
}

// A process is stopped alone, and continued: etcd's member under its
// agent by the signaller in the node's PID namespace, the raft node,
// its container's init, by the Engine. The rest of the container runs
// on, and answers.
func TestPauseProcessStopsOneProcess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct{ dir, comm, other string }{
		{"../targets/etcd", "etcd", "app"},
		{"", "app", ""},
	} {
		t.Run(tc.comm, func(t *testing.T) {
			t.Parallel()
			c := startTestClusterFor(t, tc.dir, "pause-process-one")
			if err := c.StopProcess(ctx, "n1", tc.comm); err != nil {
				t.Fatal(err)
			}
			s := states(t, c, "n1")
			if s[tc.comm] != "T" || (tc.other != "" && s[tc.other] == "T") {
				t.Errorf("after the stop: %v, want %s stopped alone", s, tc.comm)
			}
			if tc.other != "" && !answers(c, "n1", "/health") {
				t.Error("n1's agent no longer answers while its member is stopped")
			}
			if tc.other == "" && answers(c, "n1", "/health") {
				t.Error("n1 answers while its one process is stopped")
			}
			if err := c.ContinueProcess(ctx, "n1", tc.comm); err != nil {
				t.Fatal(err)
			}
			if s := states(t, c, "n1"); s[tc.comm] == "T" {
				t.Errorf("after the heal: %v", s)
			}
			if err := c.StopProcess(ctx, "n2", "postgres"); err == nil || !strings.Contains(err.Error(), `no process named "postgres"`) {
				t.Errorf("stopping a process that does not run: %v", err)
			}
		})
	}
}

// A graceful stop ends a node with its stop signal, within the grace, and
// the node is started again healthy.
func TestStopIsGraceful(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := startTestClusterFor(t, "", "stop-leader")
	began := time.Now()
	if err := c.Stop(ctx, "n2"); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took >= StopGrace {
		t.Errorf("the stop took %s: the node did not end on SIGTERM", took)
	}
	inspect, err := c.docker.cli.ContainerInspect(ctx, c.ids["n2"], client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := inspect.Container.State; st.Running || st.ExitCode == 137 {
		t.Errorf("after the stop: running %v, exit code %d (137 is a kill)", st.Running, st.ExitCode)
	}
	if err := c.Restart(ctx, "n2"); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx, "n2"); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(c.Nodes(), "n2") || !answers(c, "n2", "/leader") {
		t.Error("n2 does not answer after its start")
	}
}
