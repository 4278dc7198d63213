// Command vdsoclock is splitbrain's clock sidecar. It runs in a container
// that shares one node's PID and network namespaces:
//
//	docker run --pid container:<node> --network container:<node> --cap-add SYS_PTRACE <image>
//
// and serves the vdsoclock package's Handler on port 7978 there. At start it
// takes the skew in the node's clock file, if it mounts one
// (SPLITBRAIN_CLOCK_FILE), so that a node restarted during a clock fault is
// skewed again; while a skew is in force it patches the processes that start
// later. On SIGTERM or SIGINT it heals every process before exiting. Build
// it static (CGO_ENABLED=0) for a FROM scratch image.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/nemesis/vdsoclock"
)

// rescanEvery is how soon a process started during a clock fault has the
// skew.
const rescanEvery = 100 * time.Millisecond

func main() {
	log.SetFlags(log.LstdFlags | log.Lmicroseconds | log.LUTC)
	if err := run(); err != nil {
		// Undated: the harness quotes this last line as the reason.
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	clocks, err := vdsoclock.New()
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	if file := os.Getenv(contract.EnvClockFile); file != "" {
		if s, err := vdsoclock.ReadSkew(file); err != nil {
			return fmt.Errorf("start: %w", err)
		} else if err := clocks.Set(s); err != nil {
			return fmt.Errorf("start: %w", err)
		}
	}
	srv := &http.Server{
		Addr:              ":" + strconv.Itoa(vdsoclock.Port),
		Handler:           vdsoclock.Handler(logged{clocks}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Printf("listening on %s", srv.Addr)
	tick := time.NewTicker(rescanEvery)
	defer tick.Stop()
	for {
		select {
		case err := <-errc:
			return errors.Join(err, clocks.Heal())
		case <-tick.C:
			if err := clocks.Rescan(); err != nil {
				log.Printf("rescan: %v", err)
			}
		case <-ctx.Done():
			log.Print("stopping: healing every process")
			shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = srv.Shutdown(shut) // let an in-flight PUT finish before healing after it
			return clocks.Heal()
		}
	}
}

// logged logs every skew given: what, to how many processes, how long it
// took, and why it failed.
type logged struct{ *vdsoclock.Clocks }

func (l logged) Set(s contract.Skew) error {
	start := time.Now()
	err := l.Clocks.Set(s)
	took := time.Since(start).Round(time.Microsecond)
	if err != nil {
		log.Printf("skew %+v: failed in %s, every process healed: %v", s, took, err)
		return err
	}
	log.Printf("skew %+v: in %s; %d processes hold the patch, %d keep monotonic time a rate gave them", s, took, l.Patched(), l.Keeping())
	return nil
}
