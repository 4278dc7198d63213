package main

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/splitbrain/splitbrain/harness/suite"
	"github.com/splitbrain/splitbrain/results"
)

// A suite of three runs, one of them must find the violation planted in
// twin-leaders: run whole, and as two shards one after the other then
// merged, it gives the same cases, table and JUnit report.
func TestSuiteShardsMergeAsOne(t *testing.T) {
	if testing.Short() {
		t.Skip("starts containers")
	}
	planted, err := filepath.Abs("../../harness/testdata/twin-leaders")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	file := filepath.Join(tmp, "nightly.yaml")
	os.WriteFile(file, []byte(`
defaults: {nodes: 3, time_limit: 4s, quiet_period: 1s, recovery_timeout: 5s, seed: 1}
rows:
  - {target: bully, family: none, expect: valid, runs: 2}
  - {target_dir: `+planted+`, family: none, time_limit: 30s, expect: invalid, by: [election-safety], may: [leader-overlap]}
`), 0o644)
	dir := func(name string) string { return filepath.Join(tmp, name) }

	if code := run([]string{"suite", file, "--results", dir("whole"), "--junit", dir("whole.xml"), "--parallel", "2", "--stop-on-violation"}); code != exitValid {
		t.Fatalf("the whole suite exited %d", code)
	}
	for _, shard := range []string{"1/2", "2/2"} {
		name := "shard" + shard[:1]
		if code := run([]string{"suite", "--shard", shard, "--stop-on-violation", "--results", dir(name), file}); code != exitValid {
			t.Fatalf("shard %s exited %d", shard, code)
		}
	}
	if code := run([]string{"merge", "--results", dir("merged"), "--junit", dir("merged.xml"), dir("shard1"), dir("shard2")}); code != exitValid {
		t.Fatalf("merge exited %d", code)
	}

	whole, err := results.ReadSuite(dir("whole"))
	if err != nil {
		t.Fatal(err)
	}
	merged, err := results.ReadSuite(dir("merged"))
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.Cases) != 3 || len(merged.Cases) != 3 {
		t.Fatalf("cases: %d whole, %d merged", len(whole.Cases), len(merged.Cases))
	}
	planted3 := whole.Cases[2]
	// Stopped at its violation, not at its 30 s limit: the time it took
	// is no proof on a loaded machine, the record of the stop is.
	if planted3.Verdict != "invalid" || !planted3.StoppedEarly {
		t.Errorf("the planted violation's run: %+v", planted3)
	}
	for i := range whole.Cases {
		w, m := whole.Cases[i], merged.Cases[i]
		if w.Name != m.Name || w.Outcome != m.Outcome || w.Verdict != m.Verdict || w.Command != m.Command {
			t.Errorf("case %d: whole %+v, merged %+v", i, w, m)
		}
		if _, err := os.Stat(m.Report(dir("merged"))); err != nil {
			t.Errorf("the merged folder lacks case %d's report: %v", i, err)
		}
	}
	if a, b := steady(suite.Summary(whole)), steady(suite.Summary(merged)); a != b {
		t.Errorf("tables differ:\n%s\n%s", a, b)
	}
	a, _ := os.ReadFile(dir("whole.xml"))
	b, _ := os.ReadFile(dir("merged.xml"))
	if steady(string(a)) != steady(strings.ReplaceAll(string(b), dir("merged"), dir("whole"))) {
		t.Errorf("JUnit reports differ:\n%s\n%s", a, b)
	}
	if strings.Contains(string(a), `<failure`) {
		t.Error("a suite that passed reported a failure")
	}

	// Shards of two suites, or missing a shard, do not merge.
	if code := run([]string{"merge", "--results", dir("part"), dir("shard1")}); code != exitBadInput {
		t.Errorf("merging one of two shards exited %d", code)
	}
}

// steady is a report with what differs between two runs of the same
// seeds blanked: times, run ids and timestamps.
func steady(s string) string {
	for _, re := range []string{`\d+\.\d+`, `\d{8}T\d{6}-[a-z-]+-[0-9a-f]{6}`, `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d`, `in \d+ s`} {
		s = regexp.MustCompile(re).ReplaceAllString(s, "#")
	}
	return s
}

// Suites and shards that are wrong are one line, exit 254, before
// anything starts.
func TestSuiteBadInput(t *testing.T) {
	tmp := t.TempDir()
	bad := filepath.Join(tmp, "bad.yaml")
	os.WriteFile(bad, []byte("rows:\n  - {target: raft, family: none, expect: valid}\n  - {target: paxos, family: none, expect: valid}\n"), 0o644)
	good := filepath.Join(tmp, "good.yaml")
	os.WriteFile(good, []byte("rows:\n  - {target: raft, family: none, expect: valid}\n"), 0o644)
	for _, args := range [][]string{
		{"suite"},
		{"suite", "/nonexistent/suite.yaml"},
		{"suite", bad},
		{"suite", good, "--shard", "3/2"},
		{"suite", good, "--shard", "0/4"},
		{"suite", good, "--expect", "maybe"},
		{"suite", good, "--target", "bully"},
		{"suite", good, "--parallel", "0"},
		{"suite", good, "--junit", "/nonexistent/dir/x.xml"},
		{"suite", good, "other.yaml"},
		{"merge", "--results", tmp},
		{"merge", "--results", filepath.Join(tmp, "m"), tmp},
		{"prune"},
		{"prune", "--keep", "-1"},
		{"run", "--stop-on", "stale-token"},
		{"run", "--results", "/proc"}, // a folder no file can be made in, even by root
		{"suite", good, "--results", "/proc"},
		{"run", "--stop-on-violation", "--stop-on", "availability"},
	} {
		if code := run(args); code != exitBadInput {
			t.Errorf("splitbrain %q exited %d, want %d", args, code, exitBadInput)
		}
	}
	if code := run([]string{"suite", "../../targets/catalogue.yaml", "--table"}); code != exitValid {
		t.Errorf("suite --table exited %d", code)
	}
	// The catalogue is a suite: every row expands and validates.
	if code := run([]string{"suite", "../../targets/catalogue.yaml", "--shard", "1/1", "--target", "no-such"}); code != exitBadInput {
		t.Errorf("a filter keeping nothing exited %d", code)
	}
}

// A results folder on a full disk is bad input before anything starts:
// an empty file still fits there, a run's history does not. The disk is a
// small tmpfs, filled up, which takes root to mount.
func TestFullResultsFolderIsBadInput(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs takes root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=256k"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	fill, err := os.Create(filepath.Join(dir, "fill"))
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = fill.Write(make([]byte, 4096))
	}
	fill.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling the tmpfs: %v", err)
	}
	for _, args := range [][]string{
		{"run", "--target", "raft", "--results", dir},
		{"suite", "../../targets/catalogue.yaml", "--target", "raft", "--results", dir},
	} {
		if code := run(args); code != exitBadInput {
			t.Errorf("splitbrain %q exited %d, want %d", args, code, exitBadInput)
		}
	}
}
