package sdk

import (
	"log"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// Process is a real server (a redis-server, an etcd) that an agent runs as
// its child, in the same container, and serves the node API for.
type Process struct {
	name string
	done chan struct{}
	err  error // how it exited, once done is closed
}

// StartServer starts the program name with args as the agent's child.
//
// The child inherits the agent's environment: the harness's LD_PRELOAD of
// libfaketime reaches the server through it (the agent, a static Go
// binary, ignores it), so clock faults do too. It writes to the agent's
// standard output and error, the container's log. And it gets the SIGTERM
// and SIGINT the agent gets: the agent is PID 1 of its container, so a
// stop signal reaches the agent alone and must be passed on for the
// server to shut down cleanly.
func StartServer(name string, args ...string) (*Process, error) {
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	// Caught before the child starts, so that no stop signal falls between.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	if err := cmd.Start(); err != nil {
		signal.Stop(sigs)
		return nil, err
	}
	p := &Process{name: name, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		signal.Stop(sigs)
		close(p.done)
	}()
	go func() {
		for {
			select {
			case sig := <-sigs:
				_ = cmd.Process.Signal(sig) // an error: it has just exited
			case <-p.done:
				return
			}
		}
	}()
	return p, nil
}

// Wait waits for the server to exit and says how it did: nil for status
// 0, else an *exec.ExitError.
func (p *Process) Wait() error {
	<-p.done
	return p.err
}

// Supervise ends the agent, with an error on its log, when the server
// exits, however it does: an agent whose server is gone would go on
// serving a node API with nothing behind it, where the container should
// die, visibly. It returns at once.
func (p *Process) Supervise() {
	go func() {
		err := p.Wait()
		if err == nil {
			log.Fatalf("%s exited (status 0)", p.name)
		}
		log.Fatalf("%s exited: %v", p.name, err)
	}()
}
