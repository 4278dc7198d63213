// Command etcd-agent is a node of the etcd target and its container's
// entrypoint: it runs an etcd member beside itself, one member per node,
// and serves the node API from the member's own Raft state
// (etcd.RaftStatus). The node leads while its member is the Raft leader,
// with the Raft term as its token.
//
// The member is configured by package etcd (ETCD_* variables; those of
// the manifest's env win), named after the node, its peers the other
// nodes. The agent serves once its member knows a leader: a member that
// never joins its cluster never becomes healthy, and its log says why.
package main

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/targets/etcd"
	"github.com/splitbrain/splitbrain/targets/sdk"
)

const (
	// server is where the etcd image keeps etcd's server.
	server = "/usr/local/bin/etcd"
	// statusTimeout bounds a reading of the member's state: the member is
	// beside the agent, and a belief that takes longer is not worth
	// waiting for.
	statusTimeout = 300 * time.Millisecond
)

func main() {
	sdk.AgentMain(func(env sdk.Env, _ *sdk.Settings) (*sdk.Agent, error) {
		members := append([]string{env.Node}, env.PeerIDs()...)
		slices.Sort(members)
		for k, v := range etcd.MemberEnv(env.Node, members, nil) {
			if os.Getenv(k) == "" { // the manifest's env wins
				os.Setenv(k, v)
			}
		}
		local := fmt.Sprintf("http://127.0.0.1:%d", etcd.ClientPort)
		a := &agent{node: env.Node, member: local, httpc: &http.Client{Timeout: statusTimeout}}
		return &sdk.Agent{Server: []string{server}, Elector: a, Ready: a.join, Polled: true}, nil
	})
}

// agent reads its member's state over the member's HTTP client port.
type agent struct {
	node   string
	member string // the member's client URL
	httpc  *http.Client
	names  map[uint64]string // member ID to node name

	said sdk.ChangeLog // the beliefs, each change once
}

// join waits until the member knows a leader, then learns the members'
// names.
func (a *agent) join() {
	for {
		st, err := a.status()
		if err == nil && st.Lead != 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for {
		body, err := a.call(http.MethodPost, etcd.MemberListPath, "{}")
		if err == nil {
			a.names, err = etcd.ParseMemberList(body)
		}
		if err == nil {
			log.Printf("%s: member of a cluster of %d", a.node, len(a.names))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (a *agent) status() (etcd.RaftStatus, error) {
	body, err := a.call(http.MethodGet, etcd.DebugVarsPath, "")
	if err != nil {
		return etcd.RaftStatus{}, err
	}
	return etcd.ParseDebugVars(body)
}

// call asks the member for path and returns the answer's body.
func (a *agent) call(method, path, body string) ([]byte, error) {
	req, err := http.NewRequest(method, a.member+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	res, err := a.httpc.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %s", method, path, res.Status)
	}
	return b, nil
}

// Leadership is the belief at the moment the node API asks, from the
// member's state read then: a member that stepped down is not believed a
// leader a poll later. A member that does not answer leads nothing the
// node can prove.
func (a *agent) Leadership() contract.Leadership {
	st, err := a.status()
	l := etcd.Belief(st, a.names)
	state := "follows " + l.LeaderID
	switch {
	case err != nil:
		state = "no Raft state: " + err.Error()
	case l.Leader:
		state = "leads"
	case l.LeaderID == "":
		state = "knows no leader"
	}
	a.said.Printf(state, "%s: %s (term %d)", a.node, state, st.Term)
	return l
}
