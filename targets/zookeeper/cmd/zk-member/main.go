// Command zk-member is the entrypoint of a member of a ZooKeeper service
// cluster: it configures ZooKeeper for this member of the cluster the
// harness started (SPLITBRAIN_MEMBER, SPLITBRAIN_MEMBERS, and the ZK_*
// settings of package zookeeper) and becomes the JVM that runs it, so that
// the container's process is ZooKeeper itself and every fault, clock
// faults through libfaketime included, reaches it.
//
// With -ready it instead asks the member beside it whether it serves as
// part of an ensemble with a quorum, and exits 0 if it does: the
// service's ready command. With -leads it exits 0 if that member says
// "Mode: leader" (srvr): the service's leader command.
package main

import (
	"cmp"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/targets/sdk"
	"github.com/splitbrain/splitbrain/targets/zookeeper"
)

func main() {
	ready := flag.Bool("ready", false, "exit 0 once the member beside serves with a quorum")
	leads := flag.Bool("leads", false, "exit 0 if the member beside leads the ensemble")
	flag.Parse()
	switch {
	case *ready:
		os.Exit(check(zookeeper.Status.Serving))
	case *leads:
		os.Exit(check(func(s zookeeper.Status) bool { return s.Mode == "leader" }))
	}
	self := os.Getenv(contract.EnvMember)
	all := os.Getenv(contract.EnvMembers)
	if self == "" || all == "" {
		log.Fatal("SPLITBRAIN_MEMBER and SPLITBRAIN_MEMBERS must be set: zk-member runs as a member of a service cluster")
	}
	var s sdk.Settings
	settings := zookeeper.ReadSettings(&s)
	if err := s.Err(); err != nil {
		log.Fatal(err)
	}
	// SPLITBRAIN_MEMBERS names each member with its client port: zoo.cfg
	// wants the host names alone, each ending in its myid.
	var servers []string
	for _, addr := range strings.Split(all, ",") {
		servers = append(servers, sdk.PeerHost(addr))
	}
	if err := zookeeper.Prepare(self, servers, settings); err != nil {
		log.Fatal(err)
	}
	argv := zookeeper.Command(settings)
	java, err := exec.LookPath(argv[0])
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(syscall.Exec(java, argv, os.Environ()))
}

// check is the ready and the leader command: 0 when the member's srvr
// holds, 1 with what it said otherwise.
func check(holds func(zookeeper.Status) bool) int {
	answer, err := zookeeper.Ask(fmt.Sprintf("127.0.0.1:%d", zookeeper.ClientPort), "srvr", time.Second)
	if err == nil {
		var st zookeeper.Status
		if st, err = zookeeper.ParseSrvr(answer); err == nil && holds(st) {
			return 0
		}
		if err == nil {
			err = fmt.Errorf("mode %q", cmp.Or(st.Mode, "not serving: no quorum yet"))
		}
	}
	fmt.Println(err)
	return 1
}
