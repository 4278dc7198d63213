// Command etcd-member is the entrypoint of a member of an etcd service
// cluster: it configures etcd for this member of the cluster the harness
// started (SPLITBRAIN_MEMBER, SPLITBRAIN_MEMBERS) and becomes it, so that
// the container's process is etcd itself and every fault reaches it.
// ETCD_* variables of the manifest's env are passed on as they are.
//
// With -leads it instead exits 0 if the member beside it leads the
// cluster (its Raft state, from /debug/vars): the service's leader
// command.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/targets/etcd"
	"github.com/splitbrain/splitbrain/targets/sdk"
)

// servers are where an image keeps etcd's server: the etcd image
// compiled here, or Debian's etcd-server package.
var servers = []string{"/usr/local/bin/etcd", "/usr/bin/etcd"}

func main() {
	leads := flag.Bool("leads", false, "exit 0 if the member beside leads the cluster")
	flag.Parse()
	if *leads {
		os.Exit(leading())
	}
	self := os.Getenv(contract.EnvMember)
	all := os.Getenv(contract.EnvMembers)
	if self == "" || all == "" {
		log.Fatal("SPLITBRAIN_MEMBER and SPLITBRAIN_MEMBERS must be set: etcd-member runs as a member of a service cluster")
	}
	var members []string
	for _, addr := range strings.Split(all, ",") {
		members = append(members, sdk.PeerHost(addr))
	}
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	maps.Copy(env, etcd.MemberEnv(self, members, env))
	var list []string
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	for _, server := range servers {
		if _, err := os.Stat(server); err == nil {
			log.Fatal(syscall.Exec(server, []string{"etcd"}, list))
		}
	}
	log.Fatalf("no etcd server in this image (looked at %s)", strings.Join(servers, ", "))
}

// leading is the leader command: 0 when the member's Raft state is
// leader, 1 with what it said otherwise.
func leading() int {
	hc := &http.Client{Timeout: time.Second}
	resp, err := hc.Get(fmt.Sprintf("http://127.0.0.1:%d%s", etcd.ClientPort, etcd.DebugVarsPath))
	if err == nil {
		var body []byte
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		var st etcd.RaftStatus
		if st, err = etcd.ParseDebugVars(body); err == nil && st.State == etcd.StateLeader {
			return 0
		}
		if err == nil {
			err = fmt.Errorf("state %s", st.State)
		}
	}
	fmt.Println(err)
	return 1
}
