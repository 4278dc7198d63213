// Command netfilter is splitbrain's partition sidecar. It runs in a container
// that shares one node's network namespace:
//
//	docker run --network container:<node> --cap-add NET_ADMIN <image>
//
// and serves the netfilter package's Handler on port 7979 there. On SIGTERM
// or SIGINT it removes its table (and an impairment's queue and qdisc)
// before exiting, so stopping the sidecar heals the node. Build it static
// (CGO_ENABLED=0) for a FROM scratch image.
//
// With -probe, in a throwaway container of its own (--network none,
// NET_ADMIN), it tries each mechanism of an impairment instead, prints
// netfilter.Probed as JSON and exits.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/splitbrain/splitbrain/nemesis/netfilter"
)

func main() {
	log.SetFlags(log.LstdFlags | log.Lmicroseconds | log.LUTC)
	probe := flag.Bool("probe", false, "try the mechanisms of an impairment in this (throwaway) namespace, print what works as JSON, and exit")
	flag.Parse()
	if *probe {
		if err := json.NewEncoder(os.Stdout).Encode(netfilter.Probe()); err != nil {
			log.Fatal(err)
		}
		return
	}
	if err := run(); err != nil {
		log.Print(err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	// Start clean: a table left by an earlier sidecar in this namespace
	// (one that was SIGKILLed) would otherwise keep a partition nobody asked for.
	if err := netfilter.Clear(); err != nil {
		return fmt.Errorf("start: %w (is NET_ADMIN granted?)", err)
	}
	if ts, err := netfilter.Tables(); err == nil {
		log.Printf("tables at start: %q", ts)
	}

	srv := &http.Server{
		Addr:              ":" + strconv.Itoa(netfilter.Port),
		Handler:           logRules(netfilter.Handler()),
		ReadHeaderTimeout: 5 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Printf("listening on %s", srv.Addr)

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Print("stopping: clearing table")
	shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(shut) // let an in-flight PUT finish before clearing after it
	if err := netfilter.Clear(); err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// logRules logs every change of rules in one line: who asked, the outcome,
// how long it took, and the rule set.
func logRules(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/rules" || (r.Method != http.MethodPut && r.Method != http.MethodDelete) {
			next.ServeHTTP(w, r)
			return
		}
		// Keep a copy of the body for the log line; the handler decodes its own.
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		start := time.Now()
		next.ServeHTTP(rec, r)
		took := time.Since(start).Round(time.Microsecond)

		what := "clear"
		if r.Method == http.MethodPut {
			var rules netfilter.Rules
			if json.Unmarshal(body, &rules) == nil {
				what = "apply " + rules.String()
			} else {
				what = "apply (unparsable body)"
			}
		}
		log.Printf("%s from %s: %d in %s", what, r.RemoteAddr, rec.code, took)
	})
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}
