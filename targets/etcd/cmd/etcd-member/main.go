// Command etcd-member is the entrypoint of a member of an etcd service
// cluster: it configures etcd for this member of the cluster the harness
// started (SPLITBRAIN_MEMBER, SPLITBRAIN_MEMBERS) and becomes it, so that
// the container's process is etcd itself and every fault reaches it.
// ETCD_* variables of the manifest's env are passed on as they are.
package main

import (
	"log"
	"maps"
	"os"
	"strings"
	"syscall"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/targets/etcd"
	"github.com/splitbrain/splitbrain/targets/sdk"
)

// server is where the etcd image keeps etcd's server.
const server = "/usr/local/bin/etcd"

func main() {
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
	log.Fatal(syscall.Exec(server, []string{"etcd"}, list))
}
