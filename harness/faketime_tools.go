package harness

import (
	"archive/tar"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/splitbrain/splitbrain/targets"
)

// Debian bookworm's libfaketime (0.9.10) leaves monotonic clocks true when
// asked, yet still moves the deadlines of waits on them as if they were
// on its faked clock: a program that sleeps to a monotonic deadline
// (Python 3.11's time.sleep) fails with EINVAL, a monotonic condition
// variable (the JVM's sleeps and waits) times out at once, a monotonic
// timerfd fires off by the skew. So the harness compiles a companion
// preloaded just before it, monotonic.so, which hands those waits to
// glibc untouched, and a canary, which checks in each image whose clock
// libfaketime skews that waits keep true time and the wall clock follows
// the skew (harness/faketime/). Both are compiled once per machine with
// Debian's gcc, then copied out of their image into a folder of the host
// that those containers mount read-only at faketimeMount.
const faketimeMount = "/splitbrain-faketime"

//go:embed faketime/monotonic.c faketime/canary.c
var faketimeSources embed.FS

// faketimeImages are the images that make the companions: the Debian
// base, its gcc, and the companions compiled on it.
func faketimeImages() []heavyImage {
	images := debianImages(targets.DefaultDebianRelease, []string{"gcc", "libc6-dev"})
	gcc := top(images)
	files := map[string][]byte{}
	for _, name := range []string{"monotonic.c", "canary.c"} {
		files[name], _ = faketimeSources.ReadFile("faketime/" + name)
	}
	files["Dockerfile"] = fmt.Appendf(nil, "FROM %s\nCOPY monotonic.c canary.c /src/\n"+
		"RUN mkdir %[2]s && gcc -O2 -Wall -Wextra -Werror -shared -fPIC -o %[2]s/monotonic.so /src/monotonic.c && "+
		"gcc -O2 -Wall -Wextra -Werror -pthread -o %[2]s/canary /src/canary.c\n", gcc.tag, faketimeMount)
	hash := recipeHash(string(files["Dockerfile"]), string(files["monotonic.c"]), string(files["canary.c"]))
	tag := "splitbrain/faketime:" + hash
	return append(images, heavyImage{
		tag:    tag,
		making: "compiling the harness's companions to libfaketime",
		make: func(ctx context.Context, d *Docker) error {
			return d.buildContext(ctx, tag, map[string]string{LabelRecipe: hash}, "Dockerfile", files)
		},
	})
}

// faketimeDir makes sure the companions are in a folder of this machine,
// compiling them if they are not, and names it.
func (d *Docker) faketimeDir(ctx context.Context) (string, error) {
	images := faketimeImages()
	if err := d.cached(ctx, images...); err != nil {
		return "", err
	}
	tag := top(images).tag
	dir := filepath.Join(os.TempDir(), strings.NewReplacer("/", "-", ":", "-").Replace(tag)) // a bind's source has no colon
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	// Copied aside, then renamed into place: another process may be at
	// it too, and a container must never mount half of it.
	tmp, err := os.MkdirTemp(os.TempDir(), ".splitbrain-faketime-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil { // for a node that runs as another user
		return "", err
	}
	if err := d.copyOut(ctx, tag, faketimeMount, tmp); err != nil {
		return "", fmt.Errorf("copying the companions to libfaketime out of %s: %v", tag, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(dir); serr != nil {
			return "", err
		}
	}
	return dir, nil
}

// copyOut copies the files of folder src in image into dir.
func (d *Docker) copyOut(ctx context.Context, image, src, dir string) error {
	res, err := d.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &container.Config{
		Image: image, Cmd: []string{"never started"}, Labels: ownLabels(),
	}})
	if err != nil {
		return err
	}
	defer d.cli.ContainerRemove(context.WithoutCancel(ctx), res.ID, client.ContainerRemoveOptions{Force: true})
	cp, err := d.cli.CopyFromContainer(ctx, res.ID, client.CopyFromContainerOptions{SourcePath: src})
	if err != nil {
		return err
	}
	defer cp.Content.Close()
	tr := tar.NewReader(cp.Content)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, path.Base(hdr.Name)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, fs.FileMode(hdr.Mode).Perm())
		if err != nil {
			return err
		}
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
}

// canaryFile is the canary's own timestamp file, inside its container.
const canaryFile = "/tmp/splitbrain-canary.rc"

// checkFaketime runs the canary in a container of image, with env, the
// environment of a node or member of that image, and the companions
// mounted from dir: an error says how libfaketime, as the harness
// preloads it there, breaks waits or leaves the wall clock alone. It can
// tell that of glibc's waits (a sleep to a deadline, a condition
// variable, a timerfd), not of calls a target's runtime makes that glibc
// does not.
func (d *Docker) checkFaketime(ctx context.Context, runID, name, image, dir string, env map[string]string) error {
	env = maps.Clone(env)
	env["FAKETIME_TIMESTAMP_FILE"] = canaryFile
	var envList []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		envList = append(envList, k+"="+env[k])
	}
	code, out, err := d.runToEnd(ctx, runID, name, &container.Config{
		Image: image, Entrypoint: []string{faketimeMount + "/canary", canaryFile}, Env: envList,
	}, &container.HostConfig{NetworkMode: "none", Binds: []string{dir + ":" + faketimeMount + ":ro"}})
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("%s (exit %d)", strings.TrimSpace(tail(out, 3)), code)
	}
	return nil
}
