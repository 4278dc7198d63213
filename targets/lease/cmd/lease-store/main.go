// Command lease-store is the lease target's service: the compare-and-swap
// store of the lease record, saved to a file that survives a kill.
//
// Environment: LEASE_STORE_ADDR (default :2379), LEASE_STORE_FILE (default
// /data/lease.json).
package main

import (
	"log"
	"net/http"

	"github.com/splitbrain/splitbrain/targets/lease"
	"github.com/splitbrain/splitbrain/targets/sdk"
)

func main() {
	var s sdk.Settings
	addr := s.String("LEASE_STORE_ADDR", ":2379")
	file := s.String("LEASE_STORE_FILE", "/data/lease.json")
	if err := s.Err(); err != nil {
		log.Fatal(err)
	}
	store, err := lease.OpenStore(&sdk.FileStore[lease.Record]{Path: file})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /lease", store)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	log.Printf("lease store on %s, record in %s", addr, file)
	log.Fatal(http.ListenAndServe(addr, mux))
}
