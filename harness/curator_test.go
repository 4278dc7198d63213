package harness_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
)

// Curator's LeaderLatch, in Java, against a real three-server ZooKeeper:
// a server killed moves the latch's client to another; the leading node
// cut from every server is SUSPENDED and gives up leading, its session
// expires, and another node's latch leads with a higher token.
//
// A killed server that was ZooKeeper's leader leaves the ensemble without
// one until the other two elect another. On a loaded machine that can
// outlast the 2 s session, and then Debian's Curator 5.4.0 meets
// CURATOR-696 (targets/README.md): its client gives the session up
// itself, and the latch leads again with the old session's znode beside
// the next leader. That is Curator's doing, told by its own log; every
// other judgement must hold all the same.
func TestCuratorLatchOnRealZooKeeper(t *testing.T) {
	cfg := testConfig(t)
	cfg.Target = "curator-latch"
	cfg.Nemesis = []string{"kill-service", "partition-service"}
	// Each fault in effect for 4 s: a session lives 2 s past the last
	// word from its client.
	cfg.TimeLimit = 21 * time.Second
	cfg.NemesisInterval = 8 * time.Second
	out := runReal(t, cfg, "libcurator-recipes-java", map[string]string{"n1": "n1: connection CONNECTED"})
	if out.Report.Valid != checkers.Valid {
		relatched := curator696(t, out.Dir)
		for name, r := range out.Report.Checkers {
			if r.Valid != checkers.Valid && (len(relatched) == 0 || (name != "leader-overlap" && name != "availability")) {
				t.Errorf("%s %v: %+v", name, r.Valid, r.Violations)
			}
		}
		t.Logf("CURATOR-696: %v led again with the znode of a session their client had given up", relatched)
	}
	if l := leaderships(readHistory(t, out.Dir)); len(l) < 2 {
		t.Errorf("leaderships %v: the leading latch cut from ZooKeeper was never replaced", l)
	}
}

// latchLine is a line of LatchNode's log that the latch leads with its
// znode, or that its connection was LOST.
var latchLine = regexp.MustCompile(`latch - (n[0-9]+): (?:leading with (\S+)|connection (LOST))`)

// curator696 names the nodes whose latch, after its connection was LOST,
// led again with the znode it had led with before.
func curator696(t *testing.T, dir string) []string {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "logs", "n*.log"))
	if err != nil {
		t.Fatal(err)
	}
	var nodes []string
	for _, log := range logs {
		f, err := os.Open(log)
		if err != nil {
			t.Fatal(err)
		}
		var led string
		lost := false
		for sc := bufio.NewScanner(f); sc.Scan(); {
			m := latchLine.FindStringSubmatch(sc.Text())
			switch {
			case m == nil:
			case m[3] != "":
				lost = led != ""
			case lost && m[2] == led:
				nodes = append(nodes, m[1])
			default:
				led, lost = m[2], false
			}
		}
		f.Close()
	}
	return nodes
}
