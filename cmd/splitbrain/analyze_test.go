package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/history"
	"github.com/splitbrain/splitbrain/results"
)

// analyze judges a stored run again: the same verdict from the same
// history, and a clear bad-input exit for a history cut short. It needs
// no Docker Engine: the one this test names does not exist.
func TestAnalyzeStoredRun(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	dir := t.TempDir()
	cfg := results.DefaultSettings()
	cfg.RecoveryTimeout = time.Second
	info := results.Info{ID: "stored", Target: "raft", Promise: "overlap-bound: 2s", Config: cfg}
	if err := results.WriteJSON(filepath.Join(dir, results.RunFile), info); err != nil {
		t.Fatal(err)
	}
	lines := []history.Event{
		{Type: history.Leader, Time: 1e6, Sent: 5e5, Node: "n1", IsLeader: true, Token: 1},
		{Type: history.Leader, Time: 1e6, Sent: 5e5, Node: "n2"},
		{Type: history.Invoke, Time: 2e6, Process: 1, F: history.Write, Key: "k1", Value: "p1-1", Node: "n1"},
		{Type: history.OK, Time: 3e6, Process: 1, F: history.Write, Key: "k1", Value: "p1-1", Node: "n1", Token: 1, Seq: 1},
		{Type: history.Leader, Time: 3e9, Sent: 3e9 - 5e5, Node: "n1", IsLeader: true, Token: 1},
		{Type: history.Leader, Time: 3e9, Sent: 3e9 - 5e5, Node: "n2"},
	}
	for i := range lines {
		lines[i].Index = int64(i)
	}
	writeLines(t, filepath.Join(dir, results.HistoryFile), lines)
	writeLines(t, filepath.Join(dir, results.ResourceFile), []history.Decision{
		{Seq: 1, Key: "k1", Value: "p1-1", Token: 1, Node: "n1", Accepted: true, Mode: "strict"},
	})
	if code := run([]string{"analyze", dir}); code != exitValid {
		t.Fatalf("analyze of a valid run exited %d", code)
	}

	// The same token claimed by another node: invalid, whatever the flags.
	lines = append(lines, history.Event{Index: int64(len(lines)), Type: history.Leader, Time: 4e9, Sent: 4e9 - 5e5, Node: "n2", IsLeader: true, Token: 1})
	writeLines(t, filepath.Join(dir, results.HistoryFile), lines)
	if code := run([]string{"analyze", dir, "--check-timeout", "5s"}); code != exitInvalid {
		t.Fatalf("analyze of an invalid run exited %d", code)
	}
	var rep checkers.Report
	if err := results.ReadJSON(filepath.Join(dir, results.ResultsFile), &rep); err != nil || rep.Valid != checkers.Invalid {
		t.Fatalf("results.json not rewritten: %v %+v", err, rep.Valid)
	}

	f, err := os.OpenFile(filepath.Join(dir, results.HistoryFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"index":7,"time":5000000000,"ty`)
	f.Close()
	// A last line cut short (a controller killed mid-write) is left out,
	// said so, and the complete lines judged: invalid, as before.
	if code := run([]string{"analyze", dir}); code != exitInvalid {
		t.Fatalf("analyze of a history cut short exited %d, want %d", code, exitInvalid)
	}
	rep = checkers.Report{}
	if err := results.ReadJSON(filepath.Join(dir, results.ResultsFile), &rep); err != nil {
		t.Fatal(err)
	}
	if want := []history.CutShort{{File: results.HistoryFile, Line: 8, Bytes: 32}}; !slices.Equal(rep.CutShort, want) {
		t.Errorf("results.json cut_short = %+v, want %+v", rep.CutShort, want)
	}
	if b, err := os.ReadFile(filepath.Join(dir, results.ReportFile)); err != nil || !strings.Contains(string(b), "line 8 of history.jsonl (32 bytes) was cut short") {
		t.Errorf("the report does not name the line left out (%v)", err)
	}

	// The same bad line in the middle is damage, not a cut: refused.
	b, err := os.ReadFile(filepath.Join(dir, results.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, results.HistoryFile), append(b, "\n"+`{"index":8,"time":6000000000,"type":"leader","node":"n1"}`+"\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"analyze", dir}); code != exitBadInput {
		t.Fatalf("analyze of a history with a bad line inside exited %d, want %d", code, exitBadInput)
	}
}

func writeLines[T any](t *testing.T, path string, vs []T) {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, v := range vs {
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
