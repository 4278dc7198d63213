// Command procsignal stops or continues the processes of a container by
// command name. It runs in a throwaway container in that container's PID
// namespace, with no network:
//
//	docker run --pid container:<node> --network none <image> stop etcd
//
// and prints procsignal.Result as JSON. It exits 0 when it did what it
// was asked (whether or not a process is named so: the Result says), 2
// when it could not. Build it static (CGO_ENABLED=0) for a FROM scratch
// image.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"syscall"

	"github.com/splitbrain/splitbrain/nemesis/procsignal"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: procsignal stop|continue|list COMMAND-NAME")
		os.Exit(2)
	}
	action, comm := os.Args[1], os.Args[2]
	ps, err := procsignal.Read("/proc")
	if err == nil {
		var r procsignal.Result
		r, err = procsignal.Do(action, comm, ps, func(pid int, s syscall.Signal) error { return syscall.Kill(pid, s) })
		if err == nil {
			err = json.NewEncoder(os.Stdout).Encode(r)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "procsignal:", err)
		os.Exit(2)
	}
}
