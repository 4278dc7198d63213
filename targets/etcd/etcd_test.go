package etcd

import (
	"testing"

	"github.com/splitbrain/splitbrain/contract"
)

func TestMemberEnv(t *testing.T) {
	env := MemberEnv("n2", []string{"n1", "n2", "n3"}, map[string]string{"ETCD_ELECTION_TIMEOUT": "500", "OTHER": "x"})
	for k, want := range map[string]string{
		"ETCD_NAME":                        "n2",
		"ETCD_INITIAL_CLUSTER":             "n1=http://n1:2380,n2=http://n2:2380,n3=http://n3:2380",
		"ETCD_INITIAL_ADVERTISE_PEER_URLS": "http://n2:2380",
		"ETCD_ADVERTISE_CLIENT_URLS":       "http://n2:2379",
		"ETCD_DATA_DIR":                    DataDir,
		"ETCD_ELECTION_TIMEOUT":            "500",
	} {
		if env[k] != want {
			t.Errorf("%s = %q, want %q", k, env[k], want)
		}
	}
	if _, ok := env["OTHER"]; ok {
		t.Error("a variable that is not etcd's was passed on")
	}
	// The manifest's word wins over the harness-derived one.
	if env := MemberEnv("n1", []string{"n1"}, map[string]string{"ETCD_INITIAL_CLUSTER": "n1=http://n1:2380,ghost=http://ghost:2380"}); env["ETCD_INITIAL_CLUSTER"] != "n1=http://n1:2380,ghost=http://ghost:2380" {
		t.Errorf("ETCD_INITIAL_CLUSTER from the manifest was overridden: %q", env["ETCD_INITIAL_CLUSTER"])
	}
}

// raftStatus is /debug/vars as etcd 3.6 answers it, cut short.
const raftStatus = `{
"cmdline": ["etcd"],
"raft.status": {"id":"a396f27639ce6802","term":5,"vote":"a396f27639ce6802","commit":10,"lead":"a396f27639ce6802","raftState":"StateLeader","applied":9,"progress":{"a396f27639ce6802":{"match":10,"next":11,"state":"StateReplicate"}},"leadtransferee":"0"}
}`

func TestParseDebugVars(t *testing.T) {
	got, err := ParseDebugVars([]byte(raftStatus))
	want := RaftStatus{ID: 0xa396f27639ce6802, Lead: 0xa396f27639ce6802, Term: 5, State: "StateLeader"}
	if err != nil || got != want {
		t.Fatalf("ParseDebugVars = %+v, %v; want %+v", got, err, want)
	}
	for _, bad := range []string{`{}`, `{"raft.status": null}`, `{"raft.status": {"id":"zz","lead":"0"}}`, `not json`} {
		if _, err := ParseDebugVars([]byte(bad)); err == nil {
			t.Errorf("ParseDebugVars(%s) gave no error", bad)
		}
	}
}

func TestParseMemberList(t *testing.T) {
	// As etcd 3.6's gateway answers, one member of three shown.
	body := `{"header":{"cluster_id":"14841639068965178418","member_id":"10276657743932975437","raft_term":"2"},"members":[{"ID":"10276657743932975437","name":"n1","peerURLs":["http://n1:2380"],"clientURLs":["http://n1:2379"]}]}`
	names, err := ParseMemberList([]byte(body))
	if err != nil || len(names) != 1 || names[10276657743932975437] != "n1" {
		t.Fatalf("ParseMemberList = %v, %v", names, err)
	}
	for _, bad := range []string{`{}`, `{"members":[{"ID":"x1","name":"n1"}]}`, `[`} {
		if _, err := ParseMemberList([]byte(bad)); err == nil {
			t.Errorf("ParseMemberList(%s) gave no error", bad)
		}
	}
}

func TestBelief(t *testing.T) {
	names := map[uint64]string{10: "n1", 20: "n2"}
	for _, tc := range []struct {
		name string
		s    RaftStatus
		want contract.Leadership
	}{
		{"leader", RaftStatus{ID: 10, Lead: 10, Term: 4, State: "StateLeader"}, contract.Leadership{Leader: true, Token: 4, LeaderID: "n1"}},
		{"follower", RaftStatus{ID: 20, Lead: 10, Term: 4, State: "StateFollower"}, contract.Leadership{LeaderID: "n1"}},
		{"candidate", RaftStatus{ID: 20, Term: 5, State: "StateCandidate"}, contract.Leadership{}},
		{"a leader not yet named", RaftStatus{ID: 30, Lead: 30, Term: 6, State: "StateLeader"}, contract.Leadership{Leader: true, Token: 6}},
	} {
		if got := Belief(tc.s, names); got != tc.want {
			t.Errorf("%s: Belief(%+v) = %+v, want %+v", tc.name, tc.s, got, tc.want)
		}
	}
}
