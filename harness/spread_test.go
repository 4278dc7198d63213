package harness_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/harness/engines"
	"github.com/splitbrain/splitbrain/harness/harnesstest"
	"github.com/splitbrain/splitbrain/harness/record"
	"github.com/splitbrain/splitbrain/results"
)

// Raft's three nodes on three engines in containers of this one, under a
// partition, a pause, a kill and a clock fault across them: each fault
// takes effect, the run is valid, each container ran where the file put
// it, the resource's decisions came back into the run's folder, and
// nothing of the run is left on any engine. Then a whole run held on one
// engine, valid, all of it there. Then an engine lost during a run: the
// run ends as the environment's failure, naming the engine, and the
// engines that still answer are cleaned.
func TestRaftSpreadOverThreeEngines(t *testing.T) {
	t.Parallel()
	// 24 s: a kill's heal on an engine in a container took 7 s in a cold
	// make test, and a fault whose time comes after the run's end is never
	// struck.
	cfg := scheduled(t, 24*time.Second, `{"faults": [
		{"at_s": 1, "fault": "partition-leader", "for_s": 2, "aim": 1},
		{"at_s": 4, "fault": "pause-one", "for_s": 2, "aim": 2},
		{"at_s": 7, "fault": "kill-leader", "for_s": 2, "aim": 3},
		{"at_s": 10, "fault": "clock-bump", "for_s": 2, "aim": 4}]}`)
	ctx := harnesstest.Context(t)
	d, err := harness.ConnectDocker(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	boxes := "engines-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	t.Cleanup(func() { d.Remove(context.Background(), harness.LabelRun+"="+boxes) })
	f, err := d.StartEngines(ctx, boxes, 3)
	if err != nil {
		t.Fatal(err)
	}
	b, err := yaml.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Engines = filepath.Join(t.TempDir(), "engines.yaml")
	if err := os.WriteFile(cfg.Engines, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := runValid(t, cfg)
	harnesstest.FaultsTookEffect(t, out.Info.Faults, []string{"partition-leader", "pause-one", "kill-leader", "clock-bump"})
	want := map[string]string{"n1": "e1", "n2": "e2", "n3": "e3", engines.Resource: "e1"}
	for c, e := range want {
		if out.Info.Placement[c] != e {
			t.Errorf("placement %v, want %v", out.Info.Placement, want)
			break
		}
	}
	if st := out.Report.Checkers[checkers.StaleTokenName]; st.Figures["accepted"] == 0 {
		t.Errorf("the resource's decision log, copied out of its engine, holds no accepted write: %+v", st.Figures)
	}
	nothingOnEngines(t, f, out.Info.ID)

	// A whole run on e2, as a suite that spreads its runs over the
	// engines places each: every container there, reached through a
	// gateway there, and a kill of its leader healed there.
	held := scheduled(t, 10*time.Second, `{"faults": [{"at_s": 1, "fault": "kill-leader", "for_s": 2, "aim": 1}]}`)
	held.Engines, held.Engine = cfg.Engines, "e2"
	whole := runValid(t, held)
	harnesstest.FaultsTookEffect(t, whole.Info.Faults, []string{"kill-leader"})
	if len(whole.Info.Placement) != 4 || slices.ContainsFunc(slices.Collect(maps.Values(whole.Info.Placement)), func(e string) bool { return e != "e2" }) {
		t.Errorf("placement %v, want the three nodes and the resource on e2", whole.Info.Placement)
	}
	nothingOnEngines(t, f, whole.Info.ID)

	// e3, which holds n3, lost a few seconds into a run's workload.
	cfg.Schedule, cfg.Nemesis, cfg.TimeLimit = "", []string{"partition"}, 30*time.Second
	go func() {
		for ctx.Err() == nil {
			time.Sleep(200 * time.Millisecond)
			histories, _ := filepath.Glob(filepath.Join(cfg.ResultsDir, "*-raft-*", results.HistoryFile))
			if len(histories) > 1 { // the first run's, and this one's
				time.Sleep(3 * time.Second)
				d.Kill(ctx, "splitbrain-"+boxes+"-e3")
				return
			}
		}
	}()
	lost, err := record.Run(ctx, cfg)
	if !harness.IsEnvironment(err) || !strings.HasPrefix(err.Error(), "harness failure: the Docker Engine e3 stopped answering") {
		t.Fatalf("a run whose engine e3 was lost ended with %v, want an environment failure naming e3", err)
	}
	if lost.Report.Valid != checkers.Unknown {
		t.Errorf("verdict %v, want unknown: the history proves no violation", lost.Report.Valid)
	}
	if _, err := os.Stat(filepath.Join(lost.Dir, results.HistoryFile)); err != nil {
		t.Errorf("the run's history: %v", err)
	}
	answering := f
	answering.Engines = f.Engines[:2]
	nothingOnEngines(t, answering, lost.Info.ID)
}

// nothingOnEngines fails t if an engine of f holds a container or a
// network of run runID, and removes them.
func nothingOnEngines(t *testing.T, f engines.File, runID string) {
	t.Helper()
	ctx := context.Background()
	e, err := harness.ConnectEngines(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	left, err := e.Remove(ctx, harness.LabelRun+"="+runID)
	if err != nil || left.Containers+left.Networks > 0 {
		t.Errorf("run %s left %d containers and %d networks on the engines (%v)", runID, left.Containers, left.Networks, err)
	}
}
