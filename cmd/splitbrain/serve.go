package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"

	"github.com/splitbrain/splitbrain/results"
)

// serveUsage is the usage of `splitbrain serve`.
const serveUsage = `  splitbrain serve [--addr 127.0.0.1:8080] [--results DIR]`

// serveCmd serves a results folder over HTTP until Ctrl-C.
func serveCmd(ctx context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address (loopback by default)")
	dir := fs.String("results", "results", "results folder")
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	h, err := resultsHandler(*dir)
	if err != nil {
		return 0, err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return 0, badInput("serve: %v", err)
	}
	fmt.Printf("splitbrain: serving %s on http://%s/\n", *dir, ln.Addr())
	srv := &http.Server{Handler: h}
	go func() { <-ctx.Done(); srv.Close() }()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return 0, err
	}
	return exitValid, nil
}

// resultsHandler serves a results folder with its index as the home page.
// The index is rewritten first, so runs analyzed again or copied in since
// the last run are listed as they are now.
func resultsHandler(dir string) (http.Handler, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, badInput("serve: %s is not a results folder (a run creates it; --results names another)", dir)
	}
	if err := results.WriteIndex(results.Store{Root: dir}); err != nil {
		return nil, fmt.Errorf("serve: %v", err)
	}
	return http.FileServer(http.Dir(dir)), nil
}
