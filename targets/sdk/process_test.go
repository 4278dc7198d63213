package sdk

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// wait is p.Wait, bounded: a child that never exits fails the test.
func wait(t *testing.T, p *Process) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the child did not exit")
		return nil
	}
}

func TestStartServerExit(t *testing.T) {
	p, err := StartServer("sh", "-c", "exit 3")
	if err != nil {
		t.Fatal(err)
	}
	var exit *exec.ExitError
	if err := wait(t, p); !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("exit: %v", err)
	}
	if _, err := StartServer("/no/such/server"); err == nil {
		t.Error("a missing program started")
	}
}

// The child sees the agent's environment: LD_PRELOAD reaches a real server
// that way.
func TestStartServerEnvironment(t *testing.T) {
	t.Setenv("LD_PRELOAD_LIKE", "libfaketime.so.1")
	p, err := StartServer("sh", "-c", `test "$LD_PRELOAD_LIKE" = libfaketime.so.1`)
	if err != nil {
		t.Fatal(err)
	}
	if err := wait(t, p); err != nil {
		t.Errorf("the child did not inherit the environment: %v", err)
	}
}

// A SIGTERM to the agent (PID 1 in its container) stops the server.
func TestStartServerForwardsSIGTERM(t *testing.T) {
	p, err := StartServer("sleep", "30")
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var exit *exec.ExitError
	err = wait(t, p)
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Errorf("exit: %v", err)
	}
}

// Supervise ends the agent when its server ends, and so does an Agent with
// a Server, even while it waits for Ready. Each case runs this test again
// as the agent, whose server prints a line and exits with status 3.
func TestSupervise(t *testing.T) {
	server := []string{"sh", "-c", "echo the server speaks; exit 3"}
	agents := map[string]func(){
		"process": func() {
			p, err := StartServer(server[0], server[1:]...)
			if err != nil {
				t.Fatal(err)
			}
			p.Supervise()
			time.Sleep(time.Minute)
		},
		"agent": func() {
			a := &Agent{Server: server, Elector: &agent{}, Ready: func() { time.Sleep(time.Minute) }}
			t.Fatal(a.Run())
		},
	}
	if run, ok := agents[os.Getenv("SDK_TEST_SUPERVISED")]; ok {
		run()
		t.Fatal("the agent outlived its server")
	}
	for name := range agents {
		t.Run(name, func(t *testing.T) {
			// Well within the minute the agent would outlive its server.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSupervise$")
			cmd.Env = append(os.Environ(), "SDK_TEST_SUPERVISED="+name)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Errorf("the agent's exit: %v", err)
			}
			if !strings.Contains(stdout.String(), "the server speaks") {
				t.Errorf("the server's output did not reach the agent's: %q", stdout.String())
			}
			if !strings.Contains(stderr.String(), "sh exited: exit status 3") {
				t.Errorf("the agent's log does not say why it ended: %q", stderr.String())
			}
		})
	}
}
