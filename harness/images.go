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
	"sync"
	"time"

	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"

	"github.com/splitbrain/splitbrain/internal/parallel"
	"github.com/splitbrain/splitbrain/targets"
)

// Everything a run or a test builds is made ahead by Images (`splitbrain
// images`): the heavy bases (cache.go), every target's images, whose
// programs' compiles fill the Go build cache, the harness's own images
// and the tests'. After it, a run's build is a Go link and a layer cache
// hit.

// aheadBuilds is how many targets' images Images makes at once: enough
// that downloads of packages and modules go on beside a compile, few
// enough that two cores are not shared by more compiles than that.
const aheadBuilds = 3

// The images of the harness's own programs that a run starts beside a
// target's (the target's own are NodeImage and ServiceImage), and their
// main packages, relative to the repository root.
const (
	resourceImage   = "splitbrain/resource:latest"
	resourceMain    = "./workloads/resource/cmd/resource"
	netfilterImage  = "splitbrain/netfilter:latest"
	netfilterMain   = "./nemesis/netfilter/cmd/netfilter"
	vdsoclockImage  = "splitbrain/vdsoclock:latest"
	vdsoclockMain   = "./nemesis/vdsoclock/cmd/vdsoclock"
	procsignalImage = "splitbrain/procsignal:latest"
	procsignalMain  = "./nemesis/procsignal/cmd/procsignal"
	diskfsImage     = "splitbrain/diskfs:latest"
	diskfsMain      = "./nemesis/diskfs/cmd/diskfs"
	gatewayImage    = "splitbrain/gateway:latest"
	gatewayMain     = "./harness/gateway/cmd/gateway"
)

// harnessImage is the image of one of the harness's own programs, built
// from the package main, and the runs that start it.
type harnessImage struct {
	tag, main string
	startedBy func(*run) bool
}

// harnessImages are the resource, the packet-filter and the clock
// sidecars, the process signaller, the disk-fault layer and the gateway
// into an overlay: Images makes
// them all, a run those it starts.
var harnessImages = []harnessImage{
	{resourceImage, resourceMain, func(*run) bool { return true }},
	{netfilterImage, netfilterMain, (*run).partitions},
	{vdsoclockImage, vdsoclockMain, func(r *run) bool { return r.clockSidecars(false) || r.clockSidecars(true) }},
	{procsignalImage, procsignalMain, (*run).stopsProcesses},
	{diskfsImage, diskfsMain, (*run).faultsDisks},
	// A run over several engines starts it on their manager (spread.go).
	{gatewayImage, gatewayMain, func(r *run) bool { return r.cfg.Engines != "" }},
}

// Images makes every image that runs of targets ms build, from the
// repository at root, and with tests the images of the harness's tests
// (TestImages), aheadBuilds jobs at a time: first the target with the
// most bases compiled here (an etcd, a kube-apiserver), whose compiles
// take longest, then the harness's own images and its tests', then the
// other targets in order. The tests' images are mostly packages
// downloaded and a few small compiles: taken last, they began only once
// the kube-apiserver compile was done, and added 106 s to a cold
// `.ci/run` that they now spend beside it. Each job it finishes, and
// how long it took, it tells Progress.
func (d *Docker) Images(ctx context.Context, root string, ms []targets.Manifest, tests bool) error {
	type job struct {
		what string
		make func() error
	}
	target := func(m targets.Manifest) job {
		// Each of its images is made beside the others, its base first:
		// an etcd and a kube-apiserver compile at once, and a node's
		// program needs neither.
		return job{"target " + m.Name, func() error {
			_, err := d.TargetImages(ctx, m)
			return err
		}}
	}
	var jobs []job
	heaviest := -1
	for i, m := range ms {
		if heaviest < 0 || compiledBases(m) > compiledBases(ms[heaviest]) {
			heaviest = i
		}
	}
	if heaviest >= 0 {
		jobs = append(jobs, target(ms[heaviest]))
	}
	jobs = append(jobs, job{"the harness's own", func() error {
		return parallel.Each(harnessImages, func(h harnessImage) error {
			return d.BuildTargetImage(ctx, h.tag, root, targets.Build{Go: h.main})
		})
	}})
	if tests {
		jobs = append(jobs, job{"the harness's tests", func() error { return d.TestImages(ctx, root) }})
	}
	for i, m := range ms {
		if i != heaviest {
			jobs = append(jobs, target(m))
		}
	}
	// The jobs take their slots in order.
	slots := make(chan struct{}, aheadBuilds)
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			start := time.Now()
			if err := j.make(); err != nil {
				errs[i] = fmt.Errorf("the images of %s: %w", j.what, err)
			} else if d.Progress != nil {
				fmt.Fprintf(d.Progress, "splitbrain: the images of %s are made (%.1f s)\n", j.what, time.Since(start).Seconds())
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// compiledBases counts the bases of target m's images that are compiled
// here (heavyImage.compiled).
func compiledBases(m targets.Manifest) int {
	n := 0
	for _, b := range append([]targets.Build{nodeBuild(m)}, serviceBuilds(m)...) {
		if k, ok := b.Base(); ok {
			for _, img := range baseKinds[k.Field].images(b) {
				if img.compiled {
					n++
				}
			}
		}
	}
	return n
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
