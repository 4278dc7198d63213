package main

import "testing"

// Bad input must exit 254 before anything starts, with no Docker involved.
func TestBadInputExits254(t *testing.T) {
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
	} {
		if code := run(args); code != exitBadInput {
			t.Errorf("splitbrain %q exited %d, want %d", args, code, exitBadInput)
		}
	}
}
