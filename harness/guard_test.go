package harness_test

import (
	"context"
	"html"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/harness/harnesstest"
	"github.com/splitbrain/splitbrain/harness/record"
	"github.com/splitbrain/splitbrain/history"
	"github.com/splitbrain/splitbrain/results"
)

// duringWorkload calls act with the run's id once the single run in
// results has recorded history for a while: what another program on the
// host does to a run while it tests.
func duringWorkload(t *testing.T, results string, after time.Duration, act func(runID string)) <-chan struct{} {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			if runs, _ := os.ReadDir(results); len(runs) > 0 {
				if st, err := os.Stat(filepath.Join(results, runs[0].Name(), "history.jsonl")); err == nil && st.Size() > 0 {
					time.Sleep(after)
					act(runs[0].Name())
					return
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Error("the run's workload never began")
	}()
	return done
}

// byHand does to the run's container name (a node, "resource",
// "n1-netfilter") what a person or another program would, through the
// Engine's API.
func byHand(t *testing.T, runID, name string, do func(ctx context.Context, cli *client.Client, id string) error) {
	ctx := context.Background()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Error(err)
		return
	}
	defer cli.Close()
	f := make(client.Filters).Add("label", harness.LabelRun+"="+runID).Add("label", harness.LabelNode+"="+name)
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil || len(list.Items) != 1 {
		t.Errorf("container %s of run %s: %v (%d found)", name, runID, err, len(list.Items))
		return
	}
	if err := do(ctx, cli, list.Items[0].ID); err != nil {
		t.Error(err)
	}
}

func removeByHand(ctx context.Context, cli *client.Client, id string) error {
	_, err := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true})
	return err
}

func killByHand(ctx context.Context, cli *client.Client, id string) error {
	_, err := cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "SIGKILL"})
	return err
}

// A container of the run that is removed or killed by someone else
// mid-run breaks the environment: the run ends there as a harness failure
// that says what happened, judged up to then (unknown, with the reason in
// results.json and on the report's first line), its history whole and
// analyzable, and nothing of it left on the host.
func TestBrokenEnvironmentFailsTheRun(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, container string
		nemesis         []string
		do              func(context.Context, *client.Client, string) error
		want            string
		// quiet, when set, ends the workload after a second and has the
		// breakage come in the quiet period after it.
		quiet time.Duration
	}{
		{"node removed", "n2", []string{"partition"}, removeByHand, "n2 was removed from outside splitbrain", 0},
		{"resource killed", "resource", []string{"none"}, killByHand, "the resource was killed from outside splitbrain", 0},
		{"sidecar removed", "n1-netfilter", []string{"partition"}, removeByHand, "n1's packet-filter sidecar was removed from outside splitbrain", 0},
		{"node removed in the quiet period", "n3", []string{"none"}, removeByHand, "n3 was removed from outside splitbrain", 40 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t)
			cfg.Nemesis = c.nemesis
			cfg.TimeLimit = 60 * time.Second
			if c.quiet > 0 {
				cfg.TimeLimit, cfg.QuietPeriod = time.Second, c.quiet
			}
			acted := time.Time{}
			done := duringWorkload(t, cfg.ResultsDir, 3*time.Second, func(runID string) {
				byHand(t, runID, c.container, c.do)
				acted = time.Now()
			})
			out, err := record.Run(harnesstest.Context(t), cfg)
			<-done
			if !harness.IsEnvironment(err) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("the run ended with %v, want a harness failure that says %q", err, c.want)
			}
			if ended := time.Since(acted); ended > 20*time.Second {
				t.Errorf("the run went on for %s after the breakage", ended)
			}
			harnesstest.NothingLeft(t, out.Info.ID)
			var report checkers.Report
			if err := results.ReadJSON(filepath.Join(out.Dir, results.ResultsFile), &report); err != nil {
				t.Fatal(err)
			}
			if report.Valid != checkers.Unknown || !strings.Contains(report.HarnessFailure, c.want) {
				t.Errorf("results.json: valid %s, harness_failure %q; want unknown and %q", report.Valid, report.HarnessFailure, c.want)
			}
			page, _ := os.ReadFile(filepath.Join(out.Dir, results.ReportFile))
			if !strings.Contains(string(page), `<div class="word">harness failure</div>`) || !strings.Contains(string(page), html.EscapeString(c.want)) {
				t.Error("the report's first line does not say the harness failed, and why")
			}
			promise, err := contract.ParsePromise(out.Info.Promise)
			if err != nil {
				t.Fatal(err)
			}
			again, events, err := results.Analyze(out.Dir, promise, cfg.ObserveInterval, checkers.Options{}, out.Info.Error)
			if err != nil || len(events) == 0 || again.Valid != checkers.Unknown {
				t.Errorf("analyze: %d events, %s, %v", len(events), again.Valid, err)
			}
		})
	}
}

// A results folder whose disk fills during the run stops it as a harness
// failure, with the history written until then whole. The disk is a
// tmpfs too small for the run, which takes root to mount.
func TestFullDiskFailsTheRun(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs takes root")
	}
	if err := syscall.Mount("tmpfs", cfg.ResultsDir, "tmpfs", 0, "size=512k"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Unmount(cfg.ResultsDir, syscall.MNT_DETACH) })
	cfg.Nemesis = []string{"none"}
	cfg.TimeLimit = 2 * time.Minute
	out, err := record.Run(harnesstest.Context(t), cfg)
	ended := time.Now()
	if !harness.IsEnvironment(err) || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("the run ended with %v, want a harness failure for the full disk", err)
	}
	// The history's last write, cut short, is when the disk filled: how
	// long the cluster took to start on a loaded machine is not the
	// question.
	fi, err := os.Stat(filepath.Join(out.Dir, results.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	if after := ended.Sub(fi.ModTime()); after > 20*time.Second {
		t.Errorf("the run went on for %s after the disk filled", after)
	}
	harnesstest.NothingLeft(t, out.Info.ID)
	events, cut, err := history.ReadComplete(filepath.Join(out.Dir, results.HistoryFile), history.ReadEvents)
	if err != nil || len(events) == 0 {
		t.Fatalf("the history written before the disk filled: %d events, %v", len(events), err)
	}
	for i, e := range events {
		if e.Index != int64(i) {
			t.Fatalf("event %d has index %d: the history is not whole", i, e.Index)
		}
	}
	t.Logf("%d events kept, last line cut short: %v", len(events), cut != nil)
}

// engineProxy stands between the harness and the Docker Engine's socket,
// so that a test can make the Engine vanish for a while, as a restarting
// or unreachable Engine does to its clients, without touching the Engine.
type engineProxy struct {
	path, engine string
	mu           sync.Mutex
	ln           net.Listener
	conns        []net.Conn
}

func startEngineProxy(t *testing.T) *engineProxy {
	p := &engineProxy{path: filepath.Join(t.TempDir(), "engine.sock"), engine: engineSocket(t)}
	p.listen(t)
	t.Cleanup(p.cut)
	return p
}

// engineSocket is the path of the Docker Engine's unix socket; a test
// that stands between the harness and an Engine elsewhere is skipped.
func engineSocket(t *testing.T) string {
	engine := strings.TrimPrefix(os.Getenv("DOCKER_HOST"), "unix://")
	if engine == "" {
		engine = "/var/run/docker.sock"
	}
	if strings.Contains(engine, "://") {
		t.Skipf("the Engine is not on a unix socket (DOCKER_HOST=%s)", engine)
	}
	return engine
}

func (p *engineProxy) listen(t *testing.T) {
	ln, err := net.Listen("unix", p.path)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e, err := net.Dial("unix", p.engine)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, e)
			p.mu.Unlock()
			go func() { io.Copy(e, c); e.Close() }()
			go func() { io.Copy(c, e); c.Close() }()
		}
	}()
}

// cut closes the socket and every connection through it.
func (p *engineProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// An Engine that stops answering mid-run (restarting, or unreachable for
// a while) fails the run; once it answers again, the teardown removes
// everything of the run.
func TestEngineGoneFailsTheRun(t *testing.T) {
	cfg := testConfig(t)
	p := startEngineProxy(t)
	t.Setenv("DOCKER_HOST", "unix://"+p.path)
	cfg.Nemesis = []string{"none"}
	cfg.TimeLimit = 60 * time.Second
	done := duringWorkload(t, cfg.ResultsDir, 3*time.Second, func(string) {
		p.cut()
		time.Sleep(time.Second)
		p.listen(t)
	})
	out, err := record.Run(harnesstest.Context(t), cfg)
	<-done
	const want = "the Docker Engine stopped answering"
	if !harness.IsEnvironment(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("the run ended with %v, want a harness failure that says %q", err, want)
	}
	harnesstest.NothingLeft(t, out.Info.ID)
	if _, _, err := history.ReadComplete(filepath.Join(out.Dir, results.HistoryFile), history.ReadEvents); err != nil {
		t.Error(err)
	}
}
