package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/splitbrain/splitbrain/results"
)

// A shrink of what it cannot shrink, or with flags it cannot follow, is
// bad input before anything starts: it needs no Docker Engine.
func TestShrinkBadInputExits254(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	old := t.TempDir() // a run of a splitbrain that wrote down no schedule
	info := results.Info{Format: results.Format, ID: "old", Target: "raft", Promise: "exclusive", Config: results.DefaultSettings()}
	if err := results.WriteJSON(filepath.Join(old, results.RunFile), info); err != nil {
		t.Fatal(err)
	}
	valid := t.TempDir() // a run that found nothing
	if err := os.CopyFS(valid, os.DirFS(old)); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{results.ScheduleFile: `{"faults": []}`, results.ResultsFile: `{"format": 3, "valid": true, "checkers": {}}`} {
		if err := os.WriteFile(filepath.Join(valid, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "out")
	for _, args := range [][]string{
		{"shrink"},
		{"shrink", "/nonexistent/run"},
		{"shrink", old, "--out", out},
		{"shrink", valid, "--out", out},
		{"shrink", valid, "--reproduce", "1.5"},
		{"shrink", valid, "--runs", "0"},
		{"shrink", valid, "--violation", "overlap"},
		{"run", "--schedule", "/nonexistent/schedule.json"},
	} {
		if code := run(args); code != exitBadInput {
			t.Errorf("splitbrain %q exited %d, want %d", args, code, exitBadInput)
		}
	}
}
