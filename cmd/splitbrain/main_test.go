package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad input must exit 254 before anything starts, with no Docker involved.
func TestBadInputExits254(t *testing.T) {
	unreachable := filepath.Join(t.TempDir(), "engines.yaml")
	os.WriteFile(unreachable, []byte("engines:\n  - {name: gone, host: 'tcp://127.0.0.1:1'}\n"), 0o644)
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"run", "--nodes", "0"},
		{"run", "--time-limit", "ten seconds"},
		{"run", "--target", "no-such-target"},
		{"run", "--resource", "sloppy"},
		{"run", "--nemesis", "meteor"},
		{"run", "--rate", "-1"},
		{"run", "stray-argument"},
		{"analyze"},
		{"analyze", "/nonexistent/run"},
		{"conform"},
		{"conform", "--target", "no-such-target"},
		{"conform", "--target", "raft", "--target-dir", "../../targets/raft"},
		{"conform", "--target", "raft", "--nodes", "1"},
		{"conform", "--target-dir", "/nonexistent/target"},
		{"engines"},
		{"engines", "/nonexistent/engines.yaml"},
		{"engines", unreachable},
		{"engines", unreachable, "--start", "10"},
		{"clean", "--engines", unreachable},
		{"clean", "--engines", unreachable, "--orphans"},
		{"run", "--target", "raft", "--engine", "gone"},
		{"run", "--target", "raft", "--engines", unreachable, "--engine", "elsewhere"},
	} {
		if code := run(args); code != exitBadInput {
			t.Errorf("splitbrain %q exited %d, want %d", args, code, exitBadInput)
		}
	}
}

// --help on every command prints each flag with its default and meaning,
// and exits 0: asking how is not bad input.
func TestHelpExitsZero(t *testing.T) {
	for _, cmd := range []string{"run", "conform", "analyze", "serve", "targets", "suite", "merge", "prune", "images", "clean", "engines"} {
		var code int
		out := captureStdout(t, func() { code = run([]string{cmd, "--help"}) })
		if code != exitValid {
			t.Errorf("splitbrain %s --help exited %d, want 0", cmd, code)
		}
		if !strings.HasPrefix(out, "usage: splitbrain "+cmd) {
			t.Errorf("splitbrain %s --help printed %q", cmd, out)
		}
	}
	out := captureStdout(t, func() { run([]string{"run", "-h"}) })
	for _, want := range []string{"-nemesis-interval duration", "healed once it reacted", "-seed uint", "(default random, kept in run.json)", "-resource string"} {
		if !strings.Contains(out, want) {
			t.Errorf("run --help does not say %q:\n%s", want, out)
		}
	}
}

// captureStdout returns what f printed on standard output.
func captureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); done <- b }()
	f()
	os.Stdout = stdout
	w.Close()
	return string(<-done)
}
