package harness

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"
)

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
			return &buildFailure{tag: tag, reason: msg.Error, output: out.String()}
		}
	}
}

// A buildFailure is a build that the engine ran and that failed: a step
// of its Dockerfile did.
type buildFailure struct {
	tag string
	// reason is the engine's ("The command '...' returned a non-zero
	// code: 1").
	reason string
	// output is the build's whole output, its steps' and theirs.
	output string
}

func (e *buildFailure) Error() string {
	return fmt.Sprintf("build %s failed: %s\n%s", e.tag, e.reason, tail([]byte(e.output), 15))
}
