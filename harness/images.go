package harness

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"

	"github.com/splitbrain/splitbrain/targets"
)

// BuildTargetImage builds an image of a target, its nodes' or a service's,
// as b in the manifest in dir says.
func (d *Docker) BuildTargetImage(ctx context.Context, tag, dir string, b targets.Build) error {
	switch {
	case b.Dockerfile != "":
		return d.BuildDockerfileImage(ctx, tag, dir, b.Dockerfile)
	case len(b.Debian) > 0:
		base, err := d.DebianPackages(ctx, b.Debian)
		if err != nil {
			return err
		}
		return d.buildOn(ctx, tag, dir, b, base)
	case b.Etcd != "":
		base, err := d.EtcdImage(ctx, b.Etcd)
		if err != nil {
			return err
		}
		return d.buildOn(ctx, tag, dir, b, base)
	}
	return d.BuildGoImage(ctx, tag, dir, b.Go)
}

// buildOn builds, on a base image of a real system (Debian packages, an
// etcd), either a Go program at /app or an image that runs b.Command.
func (d *Docker) buildOn(ctx context.Context, tag, dir string, b targets.Build, base string) error {
	if b.Go != "" {
		return d.buildGo(ctx, tag, dir, b.Go, base)
	}
	entry, err := json.Marshal(b.Command)
	if err != nil {
		return err
	}
	dockerfile := fmt.Sprintf("FROM %s\nENTRYPOINT %s\n", base, entry)
	return d.buildContext(ctx, tag, nil, "Dockerfile", map[string][]byte{"Dockerfile": []byte(dockerfile)})
}

// BuildGoImage compiles the main package pkg (relative to dir, in the Go
// module that holds dir) with CGO_ENABLED=0 and builds a FROM scratch image
// tagged tag around it. The Go build cache makes a rebuild of unchanged
// code take well under a second.
func (d *Docker) BuildGoImage(ctx context.Context, tag, dir, pkg string) error {
	return d.buildGo(ctx, tag, dir, pkg, "scratch")
}

// buildGo compiles pkg and puts it at /app, the entry point, on base.
func (d *Docker) buildGo(ctx context.Context, tag, dir, pkg, base string) error {
	tmp, err := os.MkdirTemp("", "splitbrain-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "app")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, pkg)
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
	dockerfile := "FROM " + base + "\nCOPY app /app\nENTRYPOINT [\"/app\"]\n"
	return d.buildContext(ctx, tag, nil, "Dockerfile", map[string][]byte{"Dockerfile": []byte(dockerfile), "app": app})
}

// buildContext builds an image from a context of the files given, with
// labels besides ours.
func (d *Docker) buildContext(ctx context.Context, tag string, labels map[string]string, dockerfile string, files map[string][]byte) error {
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		body := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(body))}); err != nil {
			return err
		}
		if _, err := tw.Write(body); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return d.build(ctx, tag, labels, &ctxTar, dockerfile)
}

// BuildDockerfileImage builds dockerfile (relative to dir) with dir as the
// build context. Every base image must already be on this machine: there is
// no registry to pull from, and the engine's own error would only say that
// a pull failed.
func (d *Docker) BuildDockerfileImage(ctx context.Context, tag, dir, dockerfile string) error {
	df, err := os.ReadFile(filepath.Join(dir, dockerfile))
	if err != nil {
		return err
	}
	for _, base := range baseImages(df) {
		if base == targets.DebianImage {
			if _, err := d.DebianBase(ctx); err != nil {
				return err
			}
			continue
		}
		if _, err := d.cli.ImageInspect(ctx, base); cerrdefs.IsNotFound(err) {
			return fmt.Errorf("build %s: the base image %s of %s is not on this machine, and there is no registry to pull it from: build it first (see targets/README.md)",
				tag, base, filepath.Join(dir, dockerfile))
		} else if err != nil {
			return fmt.Errorf("build %s: %v", tag, err)
		}
	}
	var ctxTar bytes.Buffer
	if err := tarDir(&ctxTar, dir); err != nil {
		return fmt.Errorf("build %s: packing %s: %v", tag, dir, err)
	}
	return d.build(ctx, tag, nil, &ctxTar, filepath.ToSlash(dockerfile))
}

// build sends a tarred context to the engine's legacy builder, which needs
// no registry and no BuildKit.
func (d *Docker) build(ctx context.Context, tag string, labels map[string]string, buildCtx io.Reader, dockerfile string) error {
	labels = maps.Clone(labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelManaged] = "true"
	res, err := d.cli.ImageBuild(ctx, buildCtx, client.ImageBuildOptions{
		Tags:        []string{tag},
		Dockerfile:  dockerfile,
		Labels:      labels,
		Remove:      true,
		ForceRemove: true,
		Version:     build.BuilderV1,
	})
	if err != nil {
		return fmt.Errorf("build %s: %v", tag, err)
	}
	defer res.Body.Close()
	return buildOutcome(tag, res.Body)
}

// baseImages lists the images a Dockerfile builds FROM, leaving out
// scratch, earlier stages and names made of build arguments.
func baseImages(dockerfile []byte) []string {
	var bases []string
	stages := map[string]bool{"scratch": true}
	sc := bufio.NewScanner(bytes.NewReader(dockerfile))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || !strings.EqualFold(f[0], "FROM") {
			continue
		}
		f = f[1:]
		for len(f) > 1 && strings.HasPrefix(f[0], "--") { // --platform=...
			f = f[1:]
		}
		if image := f[0]; !stages[strings.ToLower(image)] && !strings.Contains(image, "$") {
			bases = append(bases, image)
		}
		if len(f) == 3 && strings.EqualFold(f[1], "AS") {
			stages[strings.ToLower(f[2])] = true
		}
	}
	return bases
}

// tarDir writes dir's regular files and folders as a build context.
func tarDir(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		if !e.Type().IsRegular() && !e.IsDir() {
			return nil // sockets, devices, links: not part of a context
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(fi, "")
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		hdr.Name = filepath.ToSlash(rel)
		if err := tw.WriteHeader(hdr); err != nil || e.IsDir() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

var ansiEscape = regexp.MustCompile("\x1b\\[[0-9;]*m")

// buildOutcome reads the engine's build stream to its end: an error in it is
// the build's error, shown with the tail of the output.
func buildOutcome(tag string, stream io.Reader) error {
	var out strings.Builder
	dec := json.NewDecoder(stream)
	for {
		var msg struct {
			Stream string `json:"stream"`
			Error  string `json:"error"`
		}
		if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("build %s: reading the engine's answer: %v", tag, err)
		}
		out.WriteString(ansiEscape.ReplaceAllString(msg.Stream, "")) // apt colours its errors
		if msg.Error != "" {
			return fmt.Errorf("build %s failed: %s\n%s", tag, msg.Error, tail([]byte(out.String()), 15))
		}
	}
}
