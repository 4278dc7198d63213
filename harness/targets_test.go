package harness_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/harness/harnesstest"
	"github.com/splitbrain/splitbrain/harness/record"
)

// copyTree copies the regular files below src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if e.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// runValid runs cfg and wants a valid verdict with nothing left behind.
func runValid(t *testing.T, cfg harness.Config) *record.Outcome {
	t.Helper()
	out, err := record.Run(harnesstest.Context(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	harnesstest.NothingLeft(t, out.Info.ID)
	if out.Report.Valid != checkers.Valid {
		t.Fatalf("verdict %v: %+v", out.Report.Valid, out.Report.Checkers)
	}
	return out
}

// A target copied out of the repository is a Go module of its own that
// gets the SDK through a replace directive, as targets/README.md tells a
// newcomer to do, and runs with --target-dir.
func TestTargetOutsideTheRepository(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "myraft")
	copyTree(t, "../targets/raft", dir)
	// Its own copy of the algorithm, not the repository's.
	rewrite(t, filepath.Join(dir, "cmd/raft-node/main.go"), `"github.com/splitbrain/splitbrain/targets/raft"`, `"example.com/myraft"`)
	rewrite(t, filepath.Join(dir, "target.yaml"), "name: raft\n", "name: myraft\n")
	gomod := "module example.com/myraft\n\ngo 1.26.8\n\nrequire github.com/splitbrain/splitbrain v0.0.0\n\nreplace github.com/splitbrain/splitbrain => " + repo + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.TargetDir = dir
	cfg.Nemesis = []string{"kill"}
	runValid(t, cfg)
}

// rewrite replaces from with to in the file at path, which must hold it.
func rewrite(t *testing.T, path, from, to string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), from) {
		t.Fatalf("%s does not hold %q", path, from)
	}
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(b), from, to)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A Dockerfile target builds on an image made on this machine; a base that
// is not here is named before the engine tries a registry.
func TestDockerfileTarget(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	ctx := context.Background()
	d, err := harness.ConnectDocker(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.BuildGoImage(ctx, "splitbrain/test-base:dockerfile", "../targets/raft", "./cmd/raft-node"); err != nil {
		t.Fatal(err)
	}
	cfg.TargetDir = "testdata/dockerfile"
	cfg.Nemesis = []string{"none"}
	cfg.TimeLimit = 3 * time.Second
	runValid(t, cfg)

	err = d.BuildDockerfileImage(ctx, "splitbrain/test:nobase", t.TempDir(), "Dockerfile")
	if err == nil {
		t.Fatal("built from a missing Dockerfile")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM splitbrain/no-such-base:never AS b\nFROM b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = d.BuildDockerfileImage(ctx, "splitbrain/test:nobase", dir, "Dockerfile")
	if err == nil || !strings.Contains(err.Error(), "base image splitbrain/no-such-base:never of") || !strings.Contains(err.Error(), "not on this machine") {
		t.Fatalf("missing base: %v", err)
	}
}

// A Go package outside any module cannot build; the error says what to do.
func TestGoTargetWithoutModule(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Docker")
	}
	d, err := harness.ConnectDocker(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = d.BuildGoImage(context.Background(), "splitbrain/test:nomodule", dir, ".")
	if err == nil || !strings.Contains(err.Error(), "Go module of its own") {
		t.Fatalf("got %v", err)
	}
}

// The lease target's store is a service container: started before the
// nodes, logged, and killed, frozen and cut off by the service faults,
// each of which takes effect without error, and a correct lease stays
// valid through them.
func TestServiceTarget(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Target = "lease"
	// Each of the three once, paced and bounded by them: on a rhythm (a
	// fault every 3 s for 10 s), a restart of the store that took 6 s on
	// a slow Engine left no time for the other two.
	cfg.Nemesis = []string{"kill-service", "pause-service", "partition-service"}
	cfg.NemesisInterval, cfg.Faults = 0, 3
	out, err := record.Run(harnesstest.Context(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	harnesstest.NothingLeft(t, out.Info.ID)
	if out.Report.Valid != checkers.Valid {
		t.Errorf("verdict %v: %+v", out.Report.Valid, out.Report.Checkers)
	}
	harnesstest.FaultsTookEffect(t, out.Info.Faults, cfg.Nemesis)
	if _, err := os.Stat(filepath.Join(out.Dir, "logs", "store.log")); err != nil {
		t.Errorf("the service's log: %v", err)
	}
}
