package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/splitbrain/splitbrain/targets"
)

// goKind is a Go program (build.go), compiled here: the whole of a FROM
// scratch image, or at /app on a base, an agent beside a real server.
type goKind struct{}

func (goKind) build(ctx context.Context, d *Docker, tag, dir string, b targets.Build, base string) error {
	return d.buildGo(ctx, tag, dir, b.Go, base, b.Dirs)
}

// BuildGoImage compiles the main package pkg (relative to dir, in the Go
// module that holds dir) with CGO_ENABLED=0 and builds a FROM scratch image
// tagged tag around it. The Go build cache makes a rebuild of unchanged
// code take well under a second.
func (d *Docker) BuildGoImage(ctx context.Context, tag, dir, pkg string) error {
	return d.buildGo(ctx, tag, dir, pkg, "scratch", nil)
}

// buildGo compiles pkg and puts it at /app, the entry point, on base,
// with empty directories dirs.
func (d *Docker) buildGo(ctx context.Context, tag, dir, pkg, base string, dirs []string) error {
	tmp, err := os.MkdirTemp("", "splitbrain-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "app")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", goGCFlags, "-ldflags=-s -w", "-o", bin, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := cmd.CombinedOutput(); err != nil {
		hint := ""
		if bytes.Contains(out, []byte("go.mod file not found")) {
			hint = "\na Go target outside splitbrain's repository is a Go module of its own: see targets/README.md"
		}
		return fmt.Errorf("build %s: go build %s in %s failed: %v\n%s%s", tag, pkg, dir, err, tail(out, 15), hint)
	}
	app, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	// The legacy builder is used: it needs nothing from a registry and no
	// BuildKit.
	dockerfile := "FROM " + base + "\nCOPY app /app\n" + makeDirs(dirs) + "ENTRYPOINT [\"/app\"]\n"
	return d.buildContext(ctx, tag, nil, "Dockerfile", map[string][]byte{"Dockerfile": []byte(dockerfile), "app": app})
}

// goGCFlags are the compiler's flags for every program compiled into an
// image (a target's, an etcd, a kube-apiserver). No DWARF: -s -w strips
// it from the binary anyway. No inlining: a quarter less CPU to compile
// (client-go's elector on an empty build cache: 94 s, 72 s without), the
// CPU a new machine spends most on before its tests (a kube-apiserver is
// 2,000 packages); the programs do the same a little slower, which their
// timers, tens of milliseconds and up, do not notice.
const goGCFlags = "-gcflags=all=-dwarf=false -l"

// makeDirs are the Dockerfile lines that make an image's data
// directories (targets.Build.Dirs).
func makeDirs(dirs []string) string {
	var b strings.Builder
	for _, d := range dirs {
		// FROM scratch has no mkdir to RUN: WORKDIR makes the folder.
		b.WriteString("WORKDIR " + d + "\n")
	}
	if len(dirs) > 0 {
		b.WriteString("WORKDIR /\n")
	}
	return b.String()
}
