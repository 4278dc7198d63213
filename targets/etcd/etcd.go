// Package etcd configures etcd members on a run's network and reads a node's belief from its member's status.
package etcd

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/targets/sdk"
)

// The ports of every member, on its own host name.
const (
	ClientPort = 2379
	PeerPort   = 2380
)

// DataDir is where a member keeps its log and snapshots: in the
// container's own filesystem, which a kill keeps and a restart finds.
const DataDir = "/data/etcd"

// MemberEnv is the configuration of member self of a cluster of members
// (host names, self among them), as the ETCD_* variables etcd reads. A
// variable set in base (the manifest's env: ETCD_ELECTION_TIMEOUT, say)
// is kept: the target tunes etcd there. The initial cluster is read on the
// first start only; a restarted member finds its cluster in DataDir.
func MemberEnv(self string, members []string, base map[string]string) map[string]string {
	peers := make([]string, len(members))
	for i, m := range members {
		peers[i] = fmt.Sprintf("%s=http://%s:%d", m, m, PeerPort)
	}
	env := map[string]string{
		"ETCD_NAME":                        self,
		"ETCD_DATA_DIR":                    DataDir,
		"ETCD_LISTEN_CLIENT_URLS":          fmt.Sprintf("http://0.0.0.0:%d", ClientPort),
		"ETCD_ADVERTISE_CLIENT_URLS":       fmt.Sprintf("http://%s:%d", self, ClientPort),
		"ETCD_LISTEN_PEER_URLS":            fmt.Sprintf("http://0.0.0.0:%d", PeerPort),
		"ETCD_INITIAL_ADVERTISE_PEER_URLS": fmt.Sprintf("http://%s:%d", self, PeerPort),
		"ETCD_INITIAL_CLUSTER":             strings.Join(peers, ","),
		"ETCD_INITIAL_CLUSTER_STATE":       "new",
		"ETCD_INITIAL_CLUSTER_TOKEN":       "splitbrain",
	}
	for k, v := range base {
		if strings.HasPrefix(k, "ETCD_") {
			env[k] = v
		}
	}
	return env
}

// RaftStatus is a member's own Raft state at one moment, as etcd
// publishes it on its client port at /debug/vars ("raft.status"), taken
// from its Raft node in one piece. The Status RPC will not do: its
// RaftTerm is the term of the last entry the member applied, which lags
// the Raft term after an election until the new leader's first entry is
// applied, so a new leader reads as leading in its predecessor's term
// (found by splitbrain: election-safety, token claimed by two nodes).
type RaftStatus struct {
	ID, Lead uint64
	Term     uint64
	State    string // StateLeader, StateFollower, StateCandidate, StatePreCandidate
}

// StateLeader is RaftStatus.State of the member that leads.
const StateLeader = "StateLeader"

// DebugVarsPath is where etcd serves RaftStatus among its other variables.
const DebugVarsPath = "/debug/vars"

// ParseDebugVars reads the RaftStatus out of a /debug/vars answer.
func ParseDebugVars(body []byte) (RaftStatus, error) {
	var vars struct {
		Raft *struct {
			ID    string `json:"id"`
			Term  uint64 `json:"term"`
			Lead  string `json:"lead"`
			State string `json:"raftState"`
		} `json:"raft.status"`
	}
	if err := json.Unmarshal(body, &vars); err != nil {
		return RaftStatus{}, err
	}
	r := vars.Raft
	if r == nil {
		return RaftStatus{}, errors.New("no raft.status: the member has not started its Raft node")
	}
	id, err := strconv.ParseUint(r.ID, 16, 64)
	if err != nil {
		return RaftStatus{}, fmt.Errorf("raft.status id %q: %v", r.ID, err)
	}
	lead, err := strconv.ParseUint(r.Lead, 16, 64)
	if err != nil {
		return RaftStatus{}, fmt.Errorf("raft.status lead %q: %v", r.Lead, err)
	}
	return RaftStatus{ID: id, Lead: lead, Term: r.Term, State: r.State}, nil
}

// MemberListPath is where etcd's JSON gateway lists the cluster's members
// (a POST of {}), answered from the member's own view.
const MemberListPath = "/v3/cluster/member/list"

// ParseMemberList reads the members' names by ID out of a member list
// answer (IDs are decimal strings there, as the gateway gives 64-bit
// numbers).
func ParseMemberList(body []byte) (map[uint64]string, error) {
	var list struct {
		Members []struct {
			ID   string `json:"ID"`
			Name string `json:"name"`
		} `json:"members"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, err
	}
	if len(list.Members) == 0 {
		return nil, errors.New("no members listed")
	}
	names := map[uint64]string{}
	for _, m := range list.Members {
		id, err := strconv.ParseUint(m.ID, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("member ID %q: %v", m.ID, err)
		}
		names[id] = m.Name
	}
	return names, nil
}

// Belief is a node's belief from its member's Raft state: it leads when
// its member is the Raft leader, with the term as its token (Raft elects
// at most one leader per term, and terms only rise). names gives the
// leader's node name, when known.
func Belief(s RaftStatus, names map[uint64]string) contract.Leadership {
	return sdk.Belief(s.State == StateLeader, names[s.Lead], s.Term)
}
