package e2e

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/results"
)

// finding is a kept run of a real system and the violation targets/README.md
// cites it for.
type finding struct {
	issue string
	run   string // its folder under testdata/findings/<target>/
	// leaderships are the run's (node, token) leaderships, in the order
	// first seen; the last two are the one that leads on stale, then the
	// one beside it.
	leaderships []string
	// overlap is how long the two led at once, in seconds to the tenth,
	// and toTheEnd whether they still did when the run ended.
	overlap  float64
	toTheEnd bool
	// pair, when set, are the stale leader and the one beside it where
	// they are not the last two leaderships; relatched, when set, every
	// node whose log shows CURATOR-696's path, where more than the stale
	// leader's does.
	pair      [2]string
	relatched []string
}

// curatorFindings are the curator-latch runs of targets/README.md's table
// of Curator's known split-brains. Both went by CURATOR-696's path: the
// latch whose client gave its session up led again with the old znode,
// and the strict resource refused its writes. Each folder keeps run.json,
// the history, the resource's log and the nodes' logs, which show that
// path. The CURATOR-444 run's history ends at the last event its overlap
// cites (index 5181, at 17.3 s of 20 s), its resource log at the last
// write acknowledged by then: judged so, every checker reaches the verdict
// it reached on the whole run. The CURATOR-696 run is whole: its overlap
// lasts to the end.
var curatorFindings = []finding{{
	issue: "CURATOR-444", run: "20261126T103642-curator-latch-491aab",
	leaderships: []string{"n2@1", "n1@6"}, overlap: 2.0,
}, {
	issue: "CURATOR-696", run: "20261126T104223-curator-latch-810228",
	leaderships: []string{"n4@1", "n2@6"}, overlap: 12.3, toTheEnd: true,
}, {
	// The catalogue's `curator-latch; service` row, which expects valid,
	// on a loaded machine (seed 1, four faults of the family, drawn as
	// kill-service, partition-service, pause-service, kill-service): n5's
	// client gave its session up and its latch led again with the old
	// znode, beside n3.
	issue: "CURATOR-696 in the service family", run: "20261127T052144-curator-latch-6e26e0",
	leaderships: []string{"n2@1", "n5@2", "n3@3"}, overlap: 12.4, toTheEnd: true,
}, {
	// CURATOR-444's trigger, the servers cut from one another:
	// partition-service-members (seed 103, the first of four faults)
	// isolated zk3 from zk1 and zk2 for 4 s. The servers that lost their
	// leader dropped their clients; n5's client, SUSPENDED past its 2 s
	// session, gave the session up itself, and its latch led again with
	// the old znode beside n2, by CURATOR-696's path. The run stopped at
	// its violation (--stop-on-violation).
	issue: "CURATOR-444 by partition-service-members", run: "20261127T071556-curator-latch-b6abbd",
	leaderships: []string{"n5@1", "n2@3"}, overlap: 12.2, toTheEnd: true,
}, {
	// CURATOR-696 under lossy and slow links (the packet family, seed
	// 105): 49% of the packets of the leader n2 lost, then its links
	// slowed to 5.1 kB/s. Its client, SUSPENDED past its 2 s session,
	// gave the session up itself while the servers still held it, made a
	// new one, and its latch led again with the old znode; when the
	// servers expired the old session, n1 led beside it.
	issue: "CURATOR-696 under packet loss", run: "20261127T093112-curator-latch-ce7786",
	leaderships: []string{"n2@1", "n1@2"}, overlap: 45.0,
}, {
	// CURATOR-696 under a rolling restart of the ZooKeeper ensemble
	// (restart-rolling-service, seed 105, the first of two rolls: zk2,
	// zk3, zk1, each ready again in 1.5-2.1 s). n4's client, SUSPENDED
	// past its 2 s session while its servers restarted in turn, gave the
	// session up itself while the servers still held it, made a new one,
	// and its latch led again with the old znode beside n2 until the
	// servers expired the old session 7.4 s later ("Can't find our node.
	// Resetting."). In the second roll n2, leading by then, went the same
	// way, no overlap with n5, who led next, past the promised 2 s.
	issue: "CURATOR-696 under a rolling restart", run: "20261127T190601-curator-latch-f2bc9f",
	leaderships: []string{"n4@1", "n2@3", "n5@4"}, overlap: 7.4,
	pair: [2]string{"n4", "n2"}, relatched: []string{"n2", "n4"},
}}

// TestKeptFindings judges each kept run afresh from its files, as
// `splitbrain analyze` does, and finds the violation it was kept for.
func TestKeptFindings(t *testing.T) {
	for _, f := range curatorFindings {
		t.Run(f.issue, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "findings", "curator-latch", f.run))); err != nil {
				t.Fatal(err)
			}
			r := analyze(t, dir)
			report := r.report
			if got := leaderships(r.events); !slices.Equal(got, f.leaderships) {
				t.Errorf("leaderships %v, want %v", got, f.leaderships)
			}
			n := len(f.leaderships)
			stale, _, _ := strings.Cut(f.leaderships[n-2], "@")
			next, _, _ := strings.Cut(f.leaderships[n-1], "@")
			if f.pair != [2]string{} {
				stale, next = f.pair[0], f.pair[1]
			}
			overlap := report.Checkers[checkers.LeaderOverlapName]
			if report.Valid != checkers.Invalid || overlap.Valid != checkers.Invalid || len(overlap.Violations) != 1 {
				t.Fatalf("verdict %v, leader-overlap %v with %d violations: want one overlap", report.Valid, overlap.Valid, len(overlap.Violations))
			}
			v := overlap.Violations[0]
			if v.Kind != "overlap" || !slices.Equal(v.Nodes, []string{stale, next}) {
				t.Errorf("%s of %v: want an overlap of %s and %s", v.Kind, v.Nodes, stale, next)
			}
			longest := overlap.Figures["longest_s"]
			if math.Round(longest*10)/10 != f.overlap {
				t.Errorf("two leaders for %.3f s, want %.1f s", longest, f.overlap)
			}
			end := time.Duration(v.Time) + time.Duration(longest*float64(time.Second))
			last := time.Duration(r.events[len(r.events)-1].Time)
			if toTheEnd := last-end < 100*time.Millisecond; toTheEnd != f.toTheEnd {
				t.Errorf("the overlap ended at %v, the run at %v: to the end %v, want %v", end, last, toTheEnd, f.toTheEnd)
			}
			if fenced := report.Checkers[checkers.StaleTokenName]; fenced.Valid != checkers.Valid {
				t.Errorf("stale-token %v: the stale leader's writes were not all refused: %+v", fenced.Valid, fenced.Violations)
			}
			want := []string{stale}
			if f.relatched != nil {
				want = f.relatched
			}
			if relatched := curator696(t, dir); !slices.Equal(relatched, want) {
				t.Errorf("the logs show %v leading again on a given-up session's znode, want %v", relatched, want)
			}
		})
	}
}

// analyze judges the run folder dir by its own run.json, as `splitbrain
// analyze` does.
func analyze(t *testing.T, dir string) run {
	t.Helper()
	info, err := results.ReadInfo(dir)
	if err != nil {
		t.Fatal(err)
	}
	promise, err := contract.ParsePromise(info.Promise)
	if err != nil {
		t.Fatal(err)
	}
	report, events, err := results.Analyze(dir, promise, info.Config.ObserveInterval, info.Config.CheckOptions(), info.Error)
	if err != nil {
		t.Fatal(err)
	}
	return run{dir: dir, info: info, report: report, events: events}
}
