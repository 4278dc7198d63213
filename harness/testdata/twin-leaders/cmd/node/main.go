// Command node plants a violation at a known time: n1 leads from the start
// with token 1, and n2 leads with the same token from 2 s to 3 s after it
// was first asked who leads, which is when the run's observer starts: the
// time from a container's start to the workload's varies with the
// machine's load, and two runs must plant it at the same run time. No node
// takes writes.
package main

import (
	"encoding/json"
	"net/http"
	"os"
	"sync"
	"time"
)

func main() {
	node := os.Getenv("SPLITBRAIN_NODE")
	var (
		asked sync.Once
		start time.Time
	)
	leads := func() bool {
		asked.Do(func() { start = time.Now() })
		since := time.Since(start)
		return node == "n1" || (node == "n2" && since >= 2*time.Second && since < 3*time.Second)
	}
	http.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {})
	http.HandleFunc("GET /leader", func(w http.ResponseWriter, _ *http.Request) {
		body := map[string]any{"node": node, "leader": leads()}
		if leads() {
			body["token"] = 1
		}
		json.NewEncoder(w).Encode(body)
	})
	http.HandleFunc("POST /write", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusConflict)
		w.Write([]byte(`{"error":"not-leader"}`))
	})
	if err := http.ListenAndServe(os.Getenv("SPLITBRAIN_ADDR"), nil); err != nil {
		os.Exit(1)
	}
}
