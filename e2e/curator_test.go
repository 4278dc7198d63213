package e2e

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/results"
)

// relatchedAfterLost is CURATOR-696 (targets/README.md), which Debian's
// Curator 5.4.0 meets when a killed ZooKeeper leader leaves the ensemble
// without one for longer than the 2 s session, as on a loaded machine:
// the client gives the session up itself, and the latch leads again with
// the old session's znode beside the next leader. That is Curator's doing,
// told by its own log; the overlap and the leaderless time are its.
func relatchedAfterLost(t *testing.T, r run) (excused []string, bug string) {
	nodes := curator696(t, r.dir)
	if len(nodes) == 0 {
		return nil, ""
	}
	return []string{checkers.LeaderOverlapName, checkers.AvailabilityName}, "CURATOR-696: " + strings.Join(nodes, ", ") + " led again with the znode of a session their client had given up"
}

// latchLine is a line of LatchNode's log that the latch leads with its
// znode, or that its connection was LOST.
var latchLine = regexp.MustCompile(`latch - (n[0-9]+): (?:leading with (\S+)|connection (LOST))`)

// curator696 names the nodes whose latch, after its connection was LOST,
// led again with the znode it had led with before, by the nodes' logs in
// the run folder dir.
func curator696(t *testing.T, dir string) []string {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, results.LogsDir, "n*.log"))
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
		sc := bufio.NewScanner(f)
		for sc.Scan() {
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
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", log, err)
		}
	}
	return nodes
}
