package harness_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/harness/harnesstest"
	"github.com/splitbrain/splitbrain/harness/record"
	"github.com/splitbrain/splitbrain/history"
	"github.com/splitbrain/splitbrain/results"
)

// slowEngine stands between the harness and the Docker Engine's socket
// and, once armed, holds every request to start a container for a while
// before it passes it on: an Engine too loaded to start containers in
// time, as the heal of a kill meets it, with nothing in the harness
// changed and the Engine itself untouched. It passes bytes on as they
// come, each connection to one of the Engine's, reading the requests
// only to find the starts: builds' and events' streams go through
// untouched.
type slowEngine struct {
	path  string
	armed atomic.Bool
	held  atomic.Int32 // requests held so far
}

func startSlowEngine(t *testing.T, hold time.Duration) *slowEngine {
	engine := engineSocket(t)
	p := &slowEngine{path: filepath.Join(t.TempDir(), "engine.sock")}
	ln, err := net.Listen("unix", p.path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e, err := net.Dial("unix", engine)
			if err != nil {
				c.Close()
				continue
			}
			go func() { io.Copy(c, e); c.Close() }()
			go func() { p.relay(c, e, hold); e.Close() }()
		}
	}()
	return p
}

// relay passes the requests read from c on to e, holding the starts of
// containers while armed; after a request that upgrades the connection
// (an attach, an exec), the rest as it comes.
func (p *slowEngine) relay(c, e net.Conn, hold time.Duration) {
	r := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(r)
		if err != nil {
			return
		}
		if p.armed.Load() && req.Method == http.MethodPost && strings.Contains(req.URL.Path, "/containers/") && strings.HasSuffix(req.URL.Path, "/start") {
			p.held.Add(1)
			time.Sleep(hold)
		}
		if err := req.Write(e); err != nil {
			return
		}
		if req.Header.Get("Upgrade") != "" {
			io.Copy(e, r)
			return
		}
	}
}

// A heal the Engine is 8 s late to carry out is the harness's lateness,
// not the target's: a history that proves no recovery after it is judged
// unknown, saying so, where the same history with a quick heal is
// invalid. The cluster is a correct Raft whose election timeout (10-20
// s) outlasts the run: it elects no leader before the heal is done, nor
// within the recovery timeout after it, however quickly the nodes of a
// loaded host start. (With a quick election, the nodes the Engine
// started first elected while the heal still restarted the others'
// sidecars, and recovery was met.)
func TestSlowHealIsTheHarnessLate(t *testing.T) {
	cfg := testConfig(t)
	cfg.TargetDir = "testdata/raft-slow-election"
	engine := startSlowEngine(t, 8*time.Second)
	t.Setenv("DOCKER_HOST", "unix://"+engine.path)
	cfg.Nemesis = []string{"kill-all"}
	cfg.TimeLimit = 4 * time.Second // one kill, at 2 s, healed at 3 s
	cfg.RecoveryTimeout = 100 * time.Millisecond
	done := duringWorkload(t, cfg.ResultsDir, 0, func(string) { engine.armed.Store(true) })
	out, err := record.Run(harnesstest.Context(t), cfg)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	harnesstest.NothingLeft(t, out.Info.ID)
	if n := engine.held.Load(); n != int32(cfg.Nodes) {
		t.Fatalf("the Engine held %d starts, want the heal's %d", n, cfg.Nodes)
	}

	av := out.Report.Checkers[checkers.AvailabilityName]
	if av.Valid != checkers.Unknown || len(av.Violations) != 1 || av.Violations[0].Kind != "no-recovery" ||
		!strings.Contains(av.Note, "the heal of kill-all") || !strings.Contains(av.Note, "the harness itself was late") {
		t.Errorf("availability %v, %+v: %s; want unknown, the no-recovery kept, blaming the late heal", av.Valid, av.Violations, av.Note)
	}
	heals := out.Info.HarnessTiming.Heals
	t.Logf("heals %+v; availability: %s", heals, av.Note)
	if heals.Count != 1 || heals.Late != 1 || len(heals.Worst) != 1 || heals.Worst[0].What != "kill-all" || heals.Worst[0].MS < 8000 {
		t.Errorf("run.json's heals %+v, want the kill-all's, late, of 8 s or more", heals)
	}
	if starts := out.Info.HarnessTiming.Starts; starts.Count != 1+cfg.Nodes || starts.Worst[0].At >= 0 {
		t.Errorf("run.json's starts %+v, want the resource's and every node's, before the workload", starts)
	}
	if page, _ := os.ReadFile(filepath.Join(out.Dir, results.ReportFile)); !strings.Contains(string(page), "kill-all at ") {
		t.Error("the report's section on the harness's own timing does not name the heal")
	}

	// The same history, its heal done 0.3 s after it was begun.
	h := harnesstest.History(t, out.Dir)
	for i := range h {
		if h[i].Type == history.Nemesis && h[i].Phase == history.Heal {
			h[i].Sent = h[i].Time - int64(300*time.Millisecond)
		}
	}
	quick := checkers.Availability(cfg.RecoveryTimeout)(checkers.Input{History: h, ObserveInterval: cfg.ObserveInterval})
	if quick.Valid != checkers.Invalid || len(quick.Violations) != 1 || quick.Violations[0].Kind != "no-recovery" {
		t.Errorf("with a quick heal, availability %v, %+v: %s; want invalid by no-recovery", quick.Valid, quick.Violations, quick.Note)
	}
}
