package harness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// Some images take minutes to make (a Debian base, an etcd compiled from
// its modules). Each is made once per machine and found again by the hash
// of its recipe, which is in its tag and its labels (LabelRecipe): a
// changed recipe makes a new image, an unchanged one is never rebuilt.

// LabelRecipe holds the hash of what an image was made from.
const LabelRecipe = "dev.splitbrain.recipe"

// Each image is made once: the builds of one run go in parallel, two
// runs (two test packages) may start at once, and `splitbrain images`
// makes many targets' images side by side. So an image is made under a
// lock of its own, named by its tag: images that do not share one are
// made at the same time (a compile beside a download of packages).
//
// A lock is a lock file under the temporary folder, held with flock(2):
// it serves this process and every other on the machine alike (each take
// opens the file anew, and flock locks open files, not processes), and
// it is let go by the kernel when its holder dies.

// lockPoll is how often a lock that is held is tried again.
const lockPoll = 200 * time.Millisecond

// lock takes the lock called name, waiting while another holds it, until
// ctx ends.
func lock(ctx context.Context, name string) (unlock func(), err error) {
	file := filepath.Join(os.TempDir(), "splitbrain-"+strings.NewReplacer("/", "-", ":", "-").Replace(name)+".lock")
	f, err := os.OpenFile(file, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %v", file, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for the lock %s: %w", file, ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}

// compileLock is held by the compiles of real servers from Go modules
// (gowrapper.go): each keeps both cores busy for minutes, so two at once
// would each take twice as long and starve the builds beside them.
const compileLock = "go-compile"

// recipeHash names what an image is made from, in 12 hex digits.
func recipeHash(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:6])
}

// hasImage says whether ref is on this machine.
func (d *Docker) hasImage(ctx context.Context, ref string) (bool, error) {
	_, err := d.cli.ImageInspect(ctx, ref)
	if cerrdefs.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// say prints what is being built, and every 15 s how long it has taken,
// until the returned stop is called with the build's error, which prints
// the total.
func (d *Docker) say(what string, start time.Time) (stop func(error)) {
	if d.Progress == nil {
		return func(error) {}
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
	return func(err error) {
		close(done)
		wg.Wait()
		outcome := "done"
		if err != nil {
			outcome = "failed"
		}
		fmt.Fprintf(d.Progress, "splitbrain: %s: %s in %.1f s\n", what, outcome, time.Since(start).Seconds())
	}
}

// A heavyImage is one that takes minutes to make, a base of a target's
// images: made once per machine, under a name that holds the hash of its
// recipe.
type heavyImage struct {
	// tag names the image with its recipe's hash, which its label
	// LabelRecipe holds too.
	tag string
	// alias is a name the image is tagged with too, whenever it is asked
	// for, so that a Dockerfile can stand on it; "" for none.
	alias string
	// making says what making it does: "compiling etcd v3.6.16 from Go
	// modules".
	making string
	// compiled says it is compiled here from source, keeping the cores
	// busy for minutes (gowrapper.go).
	compiled bool
	// make makes the image tag, labelled with its recipe; the images
	// before it in the same cached call are on the machine.
	make func(ctx context.Context, d *Docker) error
}

// top is the last of images, the one a chain of them makes.
func top(images []heavyImage) heavyImage { return images[len(images)-1] }

// cached makes sure images are on this machine, making in order those
// that are not (each may stand on those before it), each under its own
// lock.
func (d *Docker) cached(ctx context.Context, images ...heavyImage) error {
	for _, img := range images {
		if err := d.cache(ctx, img); err != nil {
			return err
		}
	}
	return nil
}

// cache makes sure img is on this machine, making it if it is not.
func (d *Docker) cache(ctx context.Context, img heavyImage) error {
	unlock, err := lock(ctx, "image-"+img.tag)
	if err != nil {
		return err
	}
	defer unlock()
	ok, err := d.hasImage(ctx, img.tag)
	if err != nil {
		return err
	}
	if !ok {
		stop := d.say(img.making+", once for this machine", time.Now())
		err := img.make(ctx, d)
		stop(err)
		if err != nil {
			return err
		}
	}
	if img.alias != "" {
		if _, err := d.cli.ImageTag(ctx, client.ImageTagOptions{Source: img.tag, Target: img.alias}); err != nil {
			return fmt.Errorf("tag %s: %v", img.alias, err)
		}
	}
	return nil
}

// A run's own images (its nodes', the resource's, the sidecars') are
// built from the source as the run starts, which costs a Go link and an
// image of the binary: a second or two alone, ten or more beside other
// runs. The runs of one process (a suite's) build each once, keyed by what
// it is built from, and find it again while it is on the machine: a suite
// tests its source as it was when it started.
var built sync.Map // key -> *builtOnce

type builtOnce struct {
	once sync.Once
	err  error
}

// buildOnce runs build for tag unless this process built it from key
// already and the image is still there. A failed build is tried again by
// the next run.
func (d *Docker) buildOnce(ctx context.Context, tag, key string, build func() error) error {
	key = tag + "\x00" + key
	if v, ok := built.Load(key); ok {
		if have, _ := d.hasImage(ctx, tag); !have {
			built.CompareAndDelete(key, v)
		}
	}
	v, _ := built.LoadOrStore(key, &builtOnce{})
	b := v.(*builtOnce)
	b.once.Do(func() { b.err = build() })
	if b.err != nil {
		built.CompareAndDelete(key, v)
	}
	return b.err
}
