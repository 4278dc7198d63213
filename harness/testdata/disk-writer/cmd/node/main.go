// Command node writes and reads files under /data on request, so that a
// test can tell what a disk fault did to each: PUT /files/NAME writes the
// body (?sync=1: and fsyncs it) and answers once the write returned, GET
// /files/NAME reads it. PUT /store/NAME saves the body as the SDK's file
// store does (?sync=0: as its Unsynced one), a new file renamed over the
// old. POST /loop?dir=D&n=N&size=S overwrites a file of S bytes in D (a
// data directory, or /bench, beside none) and fsyncs it, N times, and
// answers how long that took in nanoseconds: the cost of the disk-fault
// layer. It leads nothing: GET /health alone of the node API answers.
package main

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/targets/sdk"
)

const dir = "/data"

func main() {
	http.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {})
	http.HandleFunc("PUT /files/{name}", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err == nil {
			err = sdk.WriteFile(filepath.Join(dir, r.PathValue("name")), body, r.URL.Query().Get("sync") == "1")
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	http.HandleFunc("PUT /store/{name}", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err == nil {
			store := &sdk.FileStore[string]{Path: filepath.Join(dir, r.PathValue("name")), Unsynced: r.URL.Query().Get("sync") == "0"}
			err = store.Save(string(body))
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	http.HandleFunc("POST /loop", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		n, err1 := strconv.Atoi(q.Get("n"))
		size, err2 := strconv.Atoi(q.Get("size"))
		took, err := loop(q.Get("dir"), n, size)
		if err = errors.Join(err1, err2, err); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, took.Nanoseconds())
	})
	http.HandleFunc("GET /files/{name}", func(w http.ResponseWriter, r *http.Request) {
		b, err := os.ReadFile(filepath.Join(dir, r.PathValue("name")))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		w.Write(b)
	})
	log.Fatal(http.ListenAndServe(os.Getenv(contract.EnvAddr), nil))
}

// loop overwrites and fsyncs a file of size bytes in dir n times, and
// says how long the n took.
func loop(dir string, n, size int) (time.Duration, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "loop"), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	b := make([]byte, size)
	start := time.Now()
	for range n {
		if _, err := f.WriteAt(b, 0); err != nil {
			return 0, err
		}
		if err := f.Sync(); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}
