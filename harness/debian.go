package harness

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/splitbrain/splitbrain/targets"
)

// Images with Debian packages stand on a Debian minbase image that
// splitbrain makes itself, since no registry can be pulled from:
// debootstrap into a folder, then an import of that folder as an image.
// It takes about a minute, so it is made once per machine and found again
// by the hash of its recipe, which names it and is in its labels: a
// changed recipe makes a new image, an unchanged one is never rebuilt.
// Each set of packages on it is one more cached image, keyed the same way.
const (
	debianSuite   = "bookworm"
	debianVariant = "minbase"
	// LabelRecipe holds the hash of what an image was made from.
	LabelRecipe = "dev.splitbrain.recipe"
	// MirrorEnv names another Debian mirror than debianMirror.
	MirrorEnv    = "SPLITBRAIN_DEBIAN_MIRROR"
	debianMirror = "http://deb.debian.org/debian"
)

// debianBuilds serializes the making of Debian images: the builds of one
// run go in parallel, and two runs (two test packages) may start at once;
// one image must be made once. The mutex covers this process, a lock file
// the others.
var debianBuilds sync.Mutex

const debianLockFile = "/tmp/splitbrain-debian.lock"

func lockDebianBuilds() (unlock func(), err error) {
	debianBuilds.Lock()
	f, err := os.OpenFile(debianLockFile, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		debianBuilds.Unlock()
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		debianBuilds.Unlock()
		return nil, err
	}
	return func() { f.Close(); debianBuilds.Unlock() }, nil
}

// recipeHash names what an image is made from, in 12 hex digits.
func recipeHash(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:6])
}

// debianBaseRecipe is the hash of what the base image is made from.
var debianBaseRecipe = recipeHash("debootstrap", "--variant="+debianVariant, debianSuite)

// debianBaseTag is the base image's name: its recipe's hash is the tag.
var debianBaseTag = "splitbrain/debian:" + debianSuite + "-" + debianBaseRecipe

// hasImage says whether ref is on this machine.
func (d *Docker) hasImage(ctx context.Context, ref string) (bool, error) {
	_, err := d.cli.ImageInspect(ctx, ref)
	if cerrdefs.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// DebianBase makes sure the Debian base image is on this machine, making
// it if it is not, and returns its name. It is also tagged
// targets.DebianImage, so that a target's Dockerfile can stand on it.
func (d *Docker) DebianBase(ctx context.Context) (string, error) {
	unlock, err := lockDebianBuilds()
	if err != nil {
		return "", err
	}
	defer unlock()
	return d.debianBase(ctx)
}

func (d *Docker) debianBase(ctx context.Context) (string, error) {
	tag := debianBaseTag
	ok, err := d.hasImage(ctx, tag)
	if err != nil {
		return "", err
	}
	if !ok {
		if err := d.bootstrap(ctx, tag, debianBaseRecipe, cmp.Or(os.Getenv(MirrorEnv), debianMirror)); err != nil {
			return "", err
		}
	}
	if _, err := d.cli.ImageTag(ctx, client.ImageTagOptions{Source: tag, Target: targets.DebianImage}); err != nil {
		return "", fmt.Errorf("tag %s: %v", targets.DebianImage, err)
	}
	return tag, nil
}

// bootstrap makes the base image tag, of the recipe whose hash is recipe,
// from mirror.
func (d *Docker) bootstrap(ctx context.Context, tag, recipe, mirror string) error {
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return errors.New("the Debian base image must be built once, and debootstrap is not installed: run `make deps` (apt-get install debootstrap)")
	}
	dir, err := os.MkdirTemp("", "splitbrain-debian-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	stop := d.say("building the Debian base image (debootstrap "+debianSuite+" from "+mirror+"), once for this machine", time.Now())
	cmd := exec.CommandContext(ctx, "debootstrap", "--variant="+debianVariant, debianSuite, dir, mirror)
	out, err := cmd.CombinedOutput()
	stop()
	if err != nil {
		return fmt.Errorf("building the Debian base image: debootstrap %s from %s failed (%v); its last lines:\n%s", debianSuite, mirror, err, tail(out, 8))
	}
	if err := d.importDir(ctx, dir, tag, recipe); err != nil {
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

// DebianPackages makes sure an image of the base with packages installed
// is on this machine, making it if it is not, and returns its name.
func (d *Docker) DebianPackages(ctx context.Context, packages []string) (string, error) {
	pkgs := slices.Clone(packages)
	slices.Sort(pkgs)
	pkgs = slices.Compact(pkgs)
	unlock, err := lockDebianBuilds()
	if err != nil {
		return "", err
	}
	defer unlock()
	base, err := d.debianBase(ctx)
	if err != nil {
		return "", err
	}
	// /data is where a real server keeps what must survive a kill; the
	// packages' versions are kept in the image for run.json.
	dockerfile := fmt.Sprintf("FROM %s\nRUN apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends %[2]s && rm -rf /var/lib/apt/lists/* && mkdir -p /data && dpkg-query -W -f '${Package} ${Version}\\n' %[2]s > %[3]s\n",
		base, strings.Join(pkgs, " "), packagesFile)
	hash := recipeHash(dockerfile)
	tag := "splitbrain/debian-packages:" + hash
	if ok, err := d.hasImage(ctx, tag); err != nil || ok {
		return tag, err
	}
	stop := d.say("installing Debian packages "+strings.Join(pkgs, ", ")+", once for this machine", time.Now())
	err = d.buildContext(ctx, tag, map[string]string{LabelRecipe: hash}, "Dockerfile", map[string][]byte{"Dockerfile": []byte(dockerfile)})
	stop()
	if err != nil {
		if m := unknownPackage.FindStringSubmatch(err.Error()); m != nil {
			return "", badInput("Debian package %q does not exist in %s (apt: %s)", m[1], debianSuite, strings.TrimSpace(m[0]))
		}
		return "", fmt.Errorf("installing Debian packages %s: %v", strings.Join(pkgs, ", "), err)
	}
	return tag, nil
}

// packagesFile lists, in an image of Debian packages, each package asked
// for with its version.
const packagesFile = "/etc/splitbrain-packages"

// PackageVersions reads the versions of the Debian packages that the
// container id's image was made with: none for an image of ours without.
func (d *Docker) PackageVersions(ctx context.Context, id string) (map[string]string, error) {
	res, err := d.cli.CopyFromContainer(ctx, id, client.CopyFromContainerOptions{SourcePath: packagesFile})
	if cerrdefs.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer res.Content.Close()
	tr := tar.NewReader(res.Content)
	if _, err := tr.Next(); err != nil {
		return nil, err
	}
	body, err := io.ReadAll(tr)
	if err != nil {
		return nil, err
	}
	versions := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
		if pkg, v, ok := strings.Cut(line, " "); ok {
			versions[pkg] = v
		}
	}
	return versions, nil
}

// BuildDebianImage builds an image of Debian packages with either a Go
// program at /app or a command to run.
func (d *Docker) BuildDebianImage(ctx context.Context, tag, dir string, b targets.Build) error {
	base, err := d.DebianPackages(ctx, b.Debian)
	if err != nil {
		return err
	}
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

// say prints what is being built, and every 15 s how long it has taken,
// until the returned stop is called, which prints the total.
func (d *Docker) say(what string, start time.Time) (stop func()) {
	if d.Progress == nil {
		return func() {}
	}
	fmt.Fprintf(d.Progress, "splitbrain: %s...\n", what)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(15 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(d.Progress, "splitbrain: %s: %.0f s...\n", what, time.Since(start).Seconds())
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		fmt.Fprintf(d.Progress, "splitbrain: %s: done in %.1f s\n", what, time.Since(start).Seconds())
	}
}
