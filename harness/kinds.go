package harness

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/splitbrain/splitbrain/internal/parallel"
	"github.com/splitbrain/splitbrain/targets"
)

// A target's image is a program on at most one base (targets.Build).
// targets.Kinds describes each kind of either, with the manifest field
// that chooses it; here each kind has its maker, in a file of its own
// (kind_*.go), found by that field in programKinds or baseKinds.

// A programKind makes the image that runs a target's program.
type programKind interface {
	// build makes image tag of the program b names, from the target's
	// folder dir, on the image base: scratch when b names no base.
	build(ctx context.Context, d *Docker, tag, dir string, b targets.Build, base string) error
}

// A baseKind is a real system a program stands on. It takes minutes to
// make, so it is made once per machine and cached (cache.go).
type baseKind interface {
	// images are the heavy images of b's base, each made on the one
	// before it; the program goes on the last.
	images(b targets.Build) []heavyImage
}

// A compilerKind is a program compiled in heavy images of its own (a JDK
// on the program's Debian packages), made once per machine and cached as
// a base is.
type compilerKind interface {
	// compilers are the heavy images that compile b's program, each made
	// on the one before it.
	compilers(b targets.Build) []heavyImage
}

// programKinds and baseKinds make the kinds of targets.Kinds, by their fields.
var (
	programKinds = map[string]programKind{"go": goKind{}, "java": javaKind{}, "command": commandKind{}, "dockerfile": dockerfileKind{}}
	baseKinds    = map[string]baseKind{"debian": debianKind{}, "etcd": etcdKind{}, "kube-apiserver": kubeKind{}}
)

// BuildTargetImage builds an image of a target, its nodes' or a service's,
// as the valid build b in the manifest in dir says. A build that takes
// long says so (slowBuild).
func (d *Docker) BuildTargetImage(ctx context.Context, tag, dir string, b targets.Build) error {
	start := time.Now()
	base, err := d.baseImage(ctx, b)
	if err != nil {
		return err
	}
	err = programKinds[b.Program().Field].build(ctx, d, tag, dir, b, base)
	if took := time.Since(start); err == nil && took > slowBuild && d.Progress != nil {
		fmt.Fprintf(d.Progress, "splitbrain: built %s (%s, in %s) in %.1f s\n", tag, b.Program().Field, dir, took.Seconds())
	}
	return err
}

// slowBuild is how long a build of a target's image takes at most when
// its program's compile is cached (a Go link) and its image is a layer
// cache hit: two or three seconds beside other builds, measured. A build
// that took longer compiled or installed more, which a run or a test
// after `splitbrain images` should not have to.
const slowBuild = 5 * time.Second

// NodeImage is the name of the image of target m's nodes, and
// ServiceImage of its service s's.
func NodeImage(m targets.Manifest) string { return "splitbrain/" + m.Name + ":latest" }

func ServiceImage(m targets.Manifest, s targets.Service) string {
	return "splitbrain/" + m.Name + "/" + s.Name + ":latest"
}

// buildImageOnce builds image tag as b says from dir, once in this
// process (buildOnce) while the image is on the machine.
func (d *Docker) buildImageOnce(ctx context.Context, tag, dir string, b targets.Build) error {
	return d.buildOnce(ctx, tag, fmt.Sprintf("%s %+v", dir, b), func() error { return d.BuildTargetImage(ctx, tag, dir, b) })
}

// TargetImages builds the images of target m, its nodes' and each of its
// services', each once in this process (buildOnce) while it is on the
// machine, and with a clock libfaketime skews, copies out libfaketime's
// companions: it names their folder, "" when m has no such clock.
func (d *Docker) TargetImages(ctx context.Context, m targets.Manifest) (faketime string, err error) {
	image := func(tag string, b targets.Build) func() error {
		return func() error { return d.buildImageOnce(ctx, tag, m.Dir, b) }
	}
	builds := []func() error{image(NodeImage(m), nodeBuild(m))}
	for _, s := range m.Services {
		builds = append(builds, image(ServiceImage(m, s), serviceBuild(s)))
	}
	if usesFaketime(m) {
		builds = append(builds, func() (err error) {
			faketime, err = d.faketimeDir(ctx)
			return err
		})
	}
	err = parallel.Each(builds, func(build func() error) error { return build() })
	return faketime, err
}

// baseImage makes sure the base of b is on this machine, making it if it
// is not, and names it: scratch when b names none.
func (d *Docker) baseImage(ctx context.Context, b targets.Build) (string, error) {
	k, ok := b.Base()
	if !ok {
		return "scratch", nil
	}
	images := baseKinds[k.Field].images(b)
	return top(images).tag, d.cached(ctx, images...)
}

// nodeBuild is how a target's node image is made: the manifest's build,
// with libfaketime added for a node clock that follows it.
func nodeBuild(m targets.Manifest) targets.Build {
	b := m.Build
	if m.Clock == targets.ClockFaketime && len(b.Debian) > 0 {
		b.Debian = append(slices.Clone(b.Debian), "libfaketime")
	}
	return b
}

// serviceBuild is how a service's image is made, as nodeBuild.
func serviceBuild(s targets.Service) targets.Build {
	b := s.Build
	if s.Clock == targets.ClockFaketime {
		b.Debian = append(slices.Clone(b.Debian), "libfaketime")
	}
	return b
}

// serviceBuilds are how the images of target m's services are made, in
// the order of its services.
func serviceBuilds(m targets.Manifest) []targets.Build {
	builds := make([]targets.Build, len(m.Services))
	for i, s := range m.Services {
		builds[i] = serviceBuild(s)
	}
	return builds
}
