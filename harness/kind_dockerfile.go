package harness

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/splitbrain/splitbrain/targets"
)

// dockerfileKind is a target's own Dockerfile (build.dockerfile), which
// makes its whole image: it stands on no base of ours, though it may
// stand on the Debian base by name (targets.DebianImage).
type dockerfileKind struct{}

func (dockerfileKind) build(ctx context.Context, d *Docker, tag, dir string, b targets.Build, _ string) error {
	return d.BuildDockerfileImage(ctx, tag, dir, b.Dockerfile)
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
			if err := d.cached(ctx, debianBase(targets.DefaultDebianRelease)); err != nil {
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
