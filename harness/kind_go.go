package harness

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	cerrdefs "github.com/containerd/errdefs"

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
	modules, err := systemModules(bin)
	if err != nil {
		return fmt.Errorf("build %s: %v", tag, err)
	}
	// The legacy builder is used: it needs nothing from a registry and no
	// BuildKit.
	dockerfile := "FROM " + base + "\nCOPY app /app\n"
	files := map[string][]byte{"app": app}
	var labels map[string]string
	if len(modules) > 0 {
		dockerfile += "COPY modules " + modulesFile + "\n"
		files["modules"] = []byte(strings.Join(modules, "\n") + "\n")
		labels = map[string]string{LabelModules: strings.Join(modules, ", ")}
	}
	dockerfile += makeDirs(dirs) + "ENTRYPOINT [\"/app\"]\n"
	files["Dockerfile"] = []byte(dockerfile)
	return d.buildContext(ctx, tag, labels, "Dockerfile", files)
}

// LabelModules, on the image of a Go program, lists the real systems' Go
// modules it was built with ("path version, ..."): `splitbrain targets`
// reads it without starting a container.
const LabelModules = "dev.splitbrain.modules"

// ImageModules reads the real systems' Go modules that target m's
// images were built with (LabelModules), node image first; ok is false
// when an image of m is not on this machine, whose modules are then
// unknown.
func (d *Docker) ImageModules(ctx context.Context, m targets.Manifest) (modules []string, ok bool, err error) {
	tags := []string{NodeImage(m)}
	for _, s := range m.Services {
		tags = append(tags, ServiceImage(m, s))
	}
	for _, tag := range tags {
		img, err := d.cli.ImageInspect(ctx, tag)
		if cerrdefs.IsNotFound(err) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		if img.Config == nil || img.Config.Labels[LabelModules] == "" {
			continue
		}
		for _, mod := range strings.Split(img.Config.Labels[LabelModules], ", ") {
			if !slices.Contains(modules, mod) {
				modules = append(modules, mod)
			}
		}
	}
	return modules, true, nil
}

// realModules are the Go modules of the real systems a target's program
// may embed (a consensus library, a client with an election recipe):
// what a run of it tested, as a Debian package's version is.
var realModules = []string{
	"github.com/hashicorp/raft",
	"github.com/hashicorp/raft-wal",
	"go.etcd.io/etcd/client/v3",
	"k8s.io/client-go",
	"github.com/go-zookeeper/zk",
	"github.com/redis/go-redis/v9",
}

// systemModules are the real systems' modules the Go program bin was
// built with, each "path version", in realModules' order.
func systemModules(bin string) ([]string, error) {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, path := range realModules {
		for _, dep := range info.Deps {
			if dep.Path != path {
				continue
			}
			if dep.Replace != nil {
				dep = dep.Replace
			}
			out = append(out, path+" "+dep.Version)
		}
	}
	return out, nil
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
