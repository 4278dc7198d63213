// Command resource serves the fenced resource inside its container.
//
// Environment: SPLITBRAIN_RESOURCE_MODE (strict or unfenced),
// SPLITBRAIN_RESOURCE_LOG (the decision log file; each decision is one
// write(2), so it survives the death of this process or of the controller), SPLITBRAIN_RESOURCE_ADDR (default :7000).
package main

import (
	"io"
	"log"
	"net/http"
	"os"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/workloads/resource"
)

func main() {
	mode, ok := contract.ParseMode(os.Getenv(contract.EnvResourceMode))
	if !ok {
		log.Fatalf("SPLITBRAIN_RESOURCE_MODE must be strict or unfenced, not %q", os.Getenv(contract.EnvResourceMode))
	}
	addr := os.Getenv(contract.EnvResourceAddr)
	if addr == "" {
		addr = ":7000"
	}
	var decisions io.Writer
	if path := os.Getenv(contract.EnvResourceLog); path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			log.Fatalf("decision log: %v", err)
		}
		decisions = f
	}
	srv := resource.NewServer(mode, decisions)
	log.Printf("resource: %s mode, listening on %s", mode, addr)
	log.Fatal(http.ListenAndServe(addr, srv))
}
