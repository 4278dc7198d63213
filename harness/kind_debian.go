package harness

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/splitbrain/splitbrain/targets"
)

// Images with Debian packages stand on a Debian minbase image that
// splitbrain makes itself, since no registry can be pulled from:
// debootstrap into a folder, then an import of that folder as an image.
// It takes about a minute, so it is made once per machine and cached by
// its recipe (cache.go); each set of packages on it is one more cached
// image.
const (
	debianVariant = "minbase"
	// MirrorEnv names another Debian mirror than debianMirror.
	MirrorEnv    = "SPLITBRAIN_DEBIAN_MIRROR"
	debianMirror = "http://deb.debian.org/debian"
)

// debianBaseRecipe is the hash of what the base image of a release is
// made from.
func debianBaseRecipe(release string) string {
	return recipeHash("debootstrap", "--variant="+debianVariant, release)
}

// debianBaseTag is the name of the base image of a release: its recipe's
// hash is the tag.
func debianBaseTag(release string) string {
	return "splitbrain/debian:" + release + "-" + debianBaseRecipe(release)
}

// debianKind is Debian packages (build.debian), installed on the Debian
// base image of the build's release.
type debianKind struct{}

func (debianKind) images(b targets.Build) []heavyImage {
	return debianImages(b.DebianRelease(), b.Debian)
}

// debianImages are the images that make packages of release ready: the
// Debian base, then, when the packages run on Java, the Java runtime
// alone (every Java set stands on that one layer, which holds the bulk of
// their size and install time), then the packages on that.
func debianImages(release string, packages []string) []heavyImage {
	images := []heavyImage{debianBase(release)}
	if runsOnJava(packages) {
		images = append(images, debianPackages(release, top(images).tag, []string{javaRuntime}))
	}
	return append(images, debianPackages(release, top(images).tag, packages))
}

// debianBase is the Debian base image of release. The default release's
// is also tagged targets.DebianImage, so that a target's Dockerfile can
// stand on it.
func debianBase(release string) heavyImage {
	mirror := cmp.Or(os.Getenv(MirrorEnv), debianMirror)
	img := heavyImage{
		tag:    debianBaseTag(release),
		making: "building the Debian base image (debootstrap " + release + " from " + mirror + ")",
		make: func(ctx context.Context, d *Docker) error {
			return d.bootstrap(ctx, debianBaseTag(release), release, mirror)
		},
	}
	if release == targets.DefaultDebianRelease {
		img.alias = targets.DebianImage
	}
	return img
}

// bootstrap makes the base image of release, tag, from mirror.
func (d *Docker) bootstrap(ctx context.Context, tag, release, mirror string) error {
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return errors.New("the Debian base image must be built once, and debootstrap is not installed: run `make deps` (apt-get install debootstrap)")
	}
	dir, err := os.MkdirTemp("", "splitbrain-debian-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cmd := exec.CommandContext(ctx, "debootstrap", "--variant="+debianVariant, release, dir, mirror)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("building the Debian base image: debootstrap %s from %s failed (%v); its last lines:\n%s", release, mirror, err, tail(out, 8))
	}
	if err := d.importDir(ctx, dir, tag, debianBaseRecipe(release)); err != nil {
		return fmt.Errorf("building the Debian base image: %v", err)
	}
	return nil
}

// importDir makes image tag of the files in dir, labelled as ours and
// with its recipe's hash.
func (d *Docker) importDir(ctx context.Context, dir, tag, recipe string) error {
	tarCmd := exec.CommandContext(ctx, "tar", "-C", dir, "-c", ".")
	rootfs, err := tarCmd.StdoutPipe()
	if err != nil {
		return err
	}
	var tarErr bytes.Buffer
	tarCmd.Stderr = &tarErr
	if err := tarCmd.Start(); err != nil {
		return err
	}
	res, err := d.cli.ImageImport(ctx, client.ImageImportSource{Source: rootfs, SourceName: "-"}, tag, client.ImageImportOptions{
		Changes: []string{
			fmt.Sprintf("LABEL %s=true %s=%s", LabelManaged, LabelRecipe, recipe),
			"ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		},
	})
	if err != nil {
		_ = tarCmd.Process.Kill()
		_ = tarCmd.Wait()
		return fmt.Errorf("import: %v", err)
	}
	copyErr := buildOutcome(tag, res) // the same stream of messages as a build's
	res.Close()
	if err := tarCmd.Wait(); err != nil {
		return fmt.Errorf("tar: %v: %s", err, tarErr.String())
	}
	if copyErr != nil {
		return copyErr
	}
	return nil
}

// unknownPackage finds apt's word for a package it does not know.
var unknownPackage = regexp.MustCompile(`E: (?:Unable to locate package |Package '?)([a-z0-9][a-z0-9+.-]+)`)

// debianPackages is the image of packages of release installed on the
// image from, the Debian base of release or one made on it.
func debianPackages(release, from string, packages []string) heavyImage {
	pkgs := slices.Clone(packages)
	slices.Sort(pkgs)
	pkgs = slices.Compact(pkgs)
	// /data is where a real server keeps what must survive a kill; the
	// packages' versions are kept in the image for run.json.
	dockerfile := fmt.Sprintf("FROM %s\nRUN apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends %[2]s && rm -rf /var/lib/apt/lists/* && mkdir -p /data && dpkg-query -W -f '${Package} ${Version}\\n' %[2]s > %[3]s\n",
		from, strings.Join(pkgs, " "), packagesFile)
	hash := recipeHash(dockerfile)
	tag := "splitbrain/debian-packages:" + hash
	return heavyImage{
		tag:    tag,
		making: "installing Debian packages " + strings.Join(pkgs, ", "),
		make: func(ctx context.Context, d *Docker) error {
			err := d.buildContext(ctx, tag, map[string]string{LabelRecipe: hash}, "Dockerfile", map[string][]byte{"Dockerfile": []byte(dockerfile)})
			if err == nil {
				return nil
			}
			if m := unknownPackage.FindStringSubmatch(err.Error()); m != nil {
				return badInput("Debian package %q does not exist in %s (apt: %s)", m[1], release, strings.TrimSpace(m[0]))
			}
			return fmt.Errorf("installing Debian packages %s: %v", strings.Join(pkgs, ", "), err)
		},
	}
}

// modulesFile lists, in the image of a Go program, the real systems' Go
// modules it was built with (systemModules), one "path version" a line,
// beside packagesFile, which a Debian base may hold.
const modulesFile = "/etc/splitbrain-modules"

// packagesFile lists, in an image of Debian packages, each package asked
// for with its version.
const packagesFile = "/etc/splitbrain-packages"

// SystemVersions reads the versions of what the container id's image
// runs of real systems: the Debian packages it was made with
// (packagesFile) and the Go modules its program was built with
// (modulesFile); none for an image of ours without either.
func (d *Docker) SystemVersions(ctx context.Context, id string) (map[string]string, error) {
	versions := map[string]string{}
	for _, file := range []string{packagesFile, modulesFile} {
		res, err := d.cli.CopyFromContainer(ctx, id, client.CopyFromContainerOptions{SourcePath: file})
		if cerrdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		body, err := firstFile(res.Content)
		res.Content.Close()
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
			if pkg, v, ok := strings.Cut(line, " "); ok {
				versions[pkg] = v
			}
		}
	}
	return versions, nil
}

// firstFile is the content of the first file of a tar stream.
func firstFile(r io.Reader) ([]byte, error) {
	tr := tar.NewReader(r)
	if _, err := tr.Next(); err != nil {
		return nil, err
	}
	return io.ReadAll(tr)
}
