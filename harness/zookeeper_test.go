package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/nemesis"
)

// ZooKeeper's promise about an old leader, tested on a real ensemble of
// three: a leader cut off from its followers steps down once it has had
// no quorum's acknowledgement for syncLimit ticks (5 × 200 ms in the
// target's manifest), checked every tick, and another is established with
// a higher epoch. While the old leader is cut off its clock is moved an
// hour ahead, and the JVM's own log lines show it.
func TestZooKeeperLeaderStepsDownWithinSyncLimit(t *testing.T) {
	c := startTestCluster(t, "../targets/zookeeper")
	ctx := context.Background()
	nodes := c.Nodes()
	leader, token := leaderAmong(t, c, nodes, 0, 10*time.Second)

	cut := time.Now()
	if err := c.Partition(ctx, nemesis.IsolateNode(nodes, leader)); err != nil {
		t.Fatal(err)
	}
	for belief(t, c, leader).Leader {
		if time.Since(cut) > 5*time.Second {
			t.Fatalf("%s cut off from its followers still leads after 5 s", leader)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stepDown := time.Since(cut)
	// (syncLimit + 1) ticks: the last acknowledgement may be a tick old
	// as the partition starts. A poll's 20 ms and srvr's answer on top.
	const bound = 6*200*time.Millisecond + 300*time.Millisecond
	if stepDown > bound {
		t.Errorf("%s stepped down %v after it was cut off, past ZooKeeper's bound of %v", leader, stepDown, bound)
	}
	var rest []string
	for _, n := range nodes {
		if n != leader {
			rest = append(rest, n)
		}
	}
	next, epoch := leaderAmong(t, c, rest, token, 10*time.Second)
	t.Logf("%s (epoch %d) stepped down %v after it was cut off; %s leads in epoch %d %v after the cut",
		leader, token, stepDown.Round(time.Millisecond), next, epoch, time.Since(cut).Round(time.Millisecond))

	// The cut-off server looks for a leader, and says so in its log, each
	// line dated by the JVM's wall clock, which libfaketime skews.
	if err := c.SetClock(ctx, leader, contract.Skew{Offset: time.Hour}); err != nil {
		t.Fatal(err)
	}
	skewed := time.Now()
	time.Sleep(3 * time.Second)
	log, err := c.docker.Logs(ctx, c.ids[leader])
	if err != nil {
		t.Fatal(err)
	}
	if !loggedAhead(log, skewed, 50*time.Minute) {
		t.Errorf("no log line of %s's JVM is dated an hour ahead after its clock was moved", leader)
	}
	if err := c.SetClock(ctx, leader, contract.Skew{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Partition(ctx, nil); err != nil {
		t.Fatal(err)
	}
}

// leaderAmong waits until one of nodes leads with a token above after,
// and names it with its token.
func leaderAmong(t *testing.T, c *cluster, nodes []string, after int64, timeout time.Duration) (string, int64) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, n := range nodes {
			if l := belief(t, c, n); l.Leader && l.Token > after {
				return n, l.Token
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("none of %v led with a token above %d within %v", nodes, after, timeout)
	return "", 0
}

// belief is node's answer to GET /leader; no answer is no leadership.
func belief(t *testing.T, c *cluster, node string) contract.Leadership {
	t.Helper()
	client := http.Client{Timeout: time.Second}
	resp, err := client.Get(c.NodeURL(node) + "/leader")
	if err != nil {
		return contract.Leadership{}
	}
	defer resp.Body.Close()
	var l contract.Leadership
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		t.Fatalf("%s: GET /leader: %v", node, err)
	}
	return l
}

// loggedAhead says whether a line of a JVM's log written after since is
// dated at least ahead past the true time, which a line written after
// since cannot be before since.
func loggedAhead(log []byte, since time.Time, ahead time.Duration) bool {
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		date, _, _ := strings.Cut(sc.Text(), " ")
		at, err := time.Parse(zkLogTime, date)
		if err == nil && at.Sub(since) >= ahead && at.Sub(time.Now()) < ahead+10*time.Minute {
			return true
		}
	}
	return false
}

// zkLogTime is the date of each line of the servers' log, as
// targets/zookeeper has the JVM's logger write it.
const zkLogTime = "2006-01-02T15:04:05.000Z07:00"
