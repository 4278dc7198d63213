// Command gateway is the proxy of a run spread over several engines: it listens on SPLITBRAIN_GATEWAY_ADDR (default :7070) and opens connections into SPLITBRAIN_GATEWAY_SUBNET, the run's overlay, for the controller.
package main

import (
	"fmt"
	"net/http"
	"net/netip"
	"os"

	"github.com/splitbrain/splitbrain/harness/gateway"
)

func main() {
	subnet, err := netip.ParsePrefix(os.Getenv("SPLITBRAIN_GATEWAY_SUBNET"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "gateway: SPLITBRAIN_GATEWAY_SUBNET: %v\n", err)
		os.Exit(2)
	}
	addr := os.Getenv("SPLITBRAIN_GATEWAY_ADDR")
	if addr == "" {
		addr = ":7070"
	}
	fmt.Fprintf(os.Stderr, "gateway: on %s, into %s\n", addr, subnet)
	if err := http.ListenAndServe(addr, gateway.Server{Subnet: subnet}); err != nil {
		fmt.Fprintf(os.Stderr, "gateway: %v\n", err)
		os.Exit(1)
	}
}
