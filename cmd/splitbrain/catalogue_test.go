package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/targets"
)

// A bad catalogue or selection exits 254 before any run starts.
func TestCatalogueBadInput(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(bad, []byte("rows:\n  - {target: raft, family: none, expect: valid, nemesis_interval: -1s}\n"), 0o644)
	for _, args := range [][]string{
		{"catalogue", "--runs", "0"},
		{"catalogue", "--target", "paxos"},
		{"catalogue", "--family", "meteor"},
		{"catalogue", "--file", "/nonexistent/catalogue.yaml"},
		{"catalogue", "--file", bad},
		{"run", "--promise", "sometimes"},
	} {
		if code := run(args); code != exitBadInput {
			t.Errorf("splitbrain %q exited %d, want %d", args, code, exitBadInput)
		}
	}
	if code := run([]string{"catalogue", "--table"}); code != exitValid {
		t.Errorf("catalogue --table exited %d", code)
	}
}

func TestRowCommand(t *testing.T) {
	r := targets.Row{Target: "bully", Family: "partition", Promise: "exclusive", Nemesis: []string{"partition-leader"}}
	cfg := rowConfig(targets.RunSettings{Nodes: 3, TimeLimit: 20 * time.Second, Seed: 7, Resource: "unfenced"}, r, "/repo", "results")
	if cfg.Nodes != 3 || cfg.Seed != 7 || cfg.Resource != "unfenced" || cfg.Promise != "exclusive" || cfg.TargetsRoot != "/repo/targets" {
		t.Fatalf("config %+v", cfg)
	}
	if cfg.NemesisInterval != harness.DefaultConfig().NemesisInterval {
		t.Errorf("unset interval not the default: %s", cfg.NemesisInterval)
	}
	want := `splitbrain run --target=bully --promise="exclusive" --nodes=3 --nemesis=partition-leader --time-limit=20s --quiet-period=10s --recovery-timeout=30s --resource=unfenced --seed=7`
	if got := command(cfg); got != want {
		t.Errorf("command:\n got %s\nwant %s", got, want)
	}
}

func TestDetection(t *testing.T) {
	for _, tc := range []struct {
		firsts []time.Duration
		runs   int
		want   string
	}{
		{nil, 2, "no violation in 2/2 runs"},
		{[]time.Duration{9 * time.Second}, 1, "violation in 1/1 runs, first after 9.0 s"},
		{[]time.Duration{12 * time.Second, 6 * time.Second, 30 * time.Second}, 5, "violation in 3/5 runs, first after 12.0 s (median of 6.0, 12.0, 30.0)"},
		{[]time.Duration{8 * time.Second, 6 * time.Second}, 2, "violation in 2/2 runs, first after 7.0 s (median of 6.0, 8.0)"},
	} {
		if got := detection(tc.firsts, tc.runs); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}
