package harness

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"
)

// scratchDockerfile puts one static binary into an empty image. The legacy
// builder is used: it needs nothing from a registry and no BuildKit.
const scratchDockerfile = "FROM scratch\nCOPY app /app\nENTRYPOINT [\"/app\"]\n"

// BuildGoImage compiles the main package pkg (relative to dir) with
// CGO_ENABLED=0 and builds a FROM scratch image tagged tag around it. The Go
// build cache makes a rebuild of unchanged code take well under a second.
func (d *Docker) BuildGoImage(ctx context.Context, tag, dir, pkg string) error {
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
		return fmt.Errorf("build %s: go build %s in %s failed: %v\n%s", tag, pkg, dir, err, tail(out, 15))
	}
	app, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	for _, f := range []struct {
		name string
		mode int64
		body []byte
	}{{"Dockerfile", 0o644, []byte(scratchDockerfile)}, {"app", 0o755, app}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.body))}); err != nil {
			return err
		}
		if _, err := tw.Write(f.body); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	res, err := d.cli.ImageBuild(ctx, &ctxTar, client.ImageBuildOptions{
		Tags:        []string{tag},
		Labels:      map[string]string{LabelManaged: "true"},
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
		out.WriteString(msg.Stream)
		if msg.Error != "" {
			return fmt.Errorf("build %s failed: %s\n%s", tag, msg.Error, tail([]byte(out.String()), 15))
		}
	}
}
