package zookeeper

import (
	"strings"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/contract"
)

func TestID(t *testing.T) {
	for name, want := range map[string]int{"zk1": 1, "n3": 3, "zk12": 12} {
		if got, err := ID(name); err != nil || got != want {
			t.Errorf("ID(%q) = %d, %v; want %d", name, got, err, want)
		}
	}
	for _, bad := range []string{"zk", "n0", "n256", ""} {
		if _, err := ID(bad); err == nil {
			t.Errorf("ID(%q) gave no error", bad)
		}
	}
}

func TestConfig(t *testing.T) {
	cfg, err := Config([]string{"zk1", "zk2", "zk3"}, Settings{TickTime: 200 * time.Millisecond, InitLimit: 20, SyncLimit: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"tickTime=200", "syncLimit=5", "initLimit=20", "clientPort=2181",
		"server.1=zk1:2888:3888", "server.3=zk3:2888:3888", "4lw.commands.whitelist=srvr,"} {
		if !strings.Contains(cfg, line) {
			t.Errorf("zoo.cfg lacks %q:\n%s", line, cfg)
		}
	}
	extra, err := Config([]string{"zk1"}, Settings{TickTime: time.Second, Extra: "tickTime=500\n"})
	if err != nil || !strings.HasSuffix(extra, "server.1=zk1:2888:3888\ntickTime=500\n") {
		t.Errorf("the manifest's own lines are not written last:\n%s (%v)", extra, err)
	}
	if _, err := Config([]string{"zk1", "zk"}, Settings{}); err == nil {
		t.Error("a server with no id was configured")
	}
}

// srvrLeader is srvr as ZooKeeper 3.8 answers it on a leader.
const srvrLeader = `Zookeeper version: 3.8.0-debian--1, built on 2023-01-01 00:00 UTC
Latency min/avg/max: 0/0.0/0
Received: 3
Sent: 2
Connections: 1
Outstanding: 0
Zxid: 0x300000002
Mode: leader
Node count: 5
Proposal sizes last/min/max: -1/-1/-1
`

func TestParseSrvr(t *testing.T) {
	st, err := ParseSrvr(srvrLeader)
	if err != nil || st != (Status{Mode: "leader", Zxid: 0x300000002}) {
		t.Fatalf("ParseSrvr = %+v, %v", st, err)
	}
	if st.Epoch() != 3 {
		t.Errorf("epoch %d, want 3", st.Epoch())
	}
	st, err = ParseSrvr("This ZooKeeper instance is not currently serving requests\n")
	if err != nil || st.Serving() {
		t.Errorf("a server with no quorum: %+v, %v", st, err)
	}
	for _, bad := range []string{"", "Mode: leader\n", "Zxid: 0xzz\nMode: leader\n"} {
		if _, err := ParseSrvr(bad); err == nil {
			t.Errorf("ParseSrvr(%q) gave no error", bad)
		}
	}
}

func TestBelief(t *testing.T) {
	for _, tc := range []struct {
		s    Status
		want contract.Leadership
	}{
		{Status{Mode: "leader", Zxid: 0x500000001}, contract.Leadership{Leader: true, Token: 5}},
		{Status{Mode: "follower", Zxid: 0x500000001}, contract.Leadership{}},
		{Status{}, contract.Leadership{}},
	} {
		if got := Belief(tc.s); got != tc.want {
			t.Errorf("Belief(%+v) = %+v, want %+v", tc.s, got, tc.want)
		}
	}
}
