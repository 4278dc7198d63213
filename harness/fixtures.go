package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/splitbrain/splitbrain/targets"
)

// The harness's own tests run small programs of testdata/ in images of
// their own, on heavy images of their own (Debian's gcc, its JVM and
// Python with libfaketime), and run fixture targets (testdata/*/) on
// bases. TestImages makes all of them ahead, by the recipes the tests
// build them by, so that no test's timeout pays for a build.

// faketimeRuntimes are the images the tests run a small program of each
// kind of program clock faketime serves on (testdata/faketime): Debian's
// JVM and Python, with libfaketime; the C one is compiled with the gcc of
// faketimeImages.
func faketimeRuntimes() []heavyImage {
	return debianImages(targets.DefaultDebianRelease, []string{javaRuntime, "libfaketime", "python3"})
}

// testRuntimes makes sure the heavy images the tests' programs stand on
// are on this machine, making those that are not, and the image of an
// engine in a container (enginebox.go), which the swarm's tests start.
func (d *Docker) testRuntimes(ctx context.Context) error {
	return d.cached(ctx, slices.Concat(faketimeImages(), faketimeRuntimes(), boxImages())...)
}

// A testProgram is a kind of small program of testdata/ that the tests
// run, and how its image runs it.
type testProgram struct {
	kind  string
	entry string // the image's ENTRYPOINT; "" for a static Go binary's own
}

// waiters are the kinds of program clock: faketime serves (README.md), each
// a small program of testdata/faketime that waits 100 ms at a time on the
// monotonic clock.
var waiters = []testProgram{
	{"c", `["/usr/local/bin/waiter"]`},
	{"python", `["python3", "/src/waiter.py"]`},
	{"jvm", `["java", "-cp", "/src", "Waiter"]`},
}

// readers are the kinds of process a clock sidecar reaches, each a program
// of testdata/vdsoclock that prints every 20 ms true time, read where no
// patch reaches, then its realtime and monotonic readings (the C one also
// gettimeofday's and time's).
var readers = []testProgram{
	{"go", ""},
	{"c", `["/usr/local/bin/reader"]`},
	{"jvm", `["java", "-cp", "/src", "Reader"]`},
}

// waiterImages builds an image of each waiter on the runtimes of the
// tests (programImage), from the repository at root, and names each by
// its kind.
func (d *Docker) waiterImages(ctx context.Context, root string) (map[string]string, error) {
	images := map[string]string{}
	for _, w := range waiters {
		images[w.kind] = "splitbrain/test-faketime-" + w.kind + ":latest"
		if err := d.programImage(ctx, root, images[w.kind], "faketime", "waiter", []string{"waiter.py"}, w.entry); err != nil {
			return nil, err
		}
	}
	return images, nil
}

// readerImages builds the clock sidecar and an image of each reader, from
// the repository at root: the Go one static, FROM scratch; the C and Java
// ones on the runtimes of the tests (programImage).
func (d *Docker) readerImages(ctx context.Context, root string) (map[string]string, error) {
	if err := d.BuildGoImage(ctx, vdsoclockImage, root, vdsoclockMain); err != nil {
		return nil, err
	}
	images := map[string]string{}
	for _, r := range readers {
		images[r.kind] = "splitbrain/test-vdsoclock-" + r.kind + ":latest"
		var err error
		if r.entry == "" {
			err = d.BuildGoImage(ctx, images[r.kind], root, "./harness/testdata/vdsoclock/"+readerName)
		} else {
			err = d.programImage(ctx, root, images[r.kind], "vdsoclock", readerName, nil, r.entry)
		}
		if err != nil {
			return nil, err
		}
	}
	return images, nil
}

// readerName names the readers' sources in testdata/vdsoclock: reader/
// (Go), reader.c, Reader.java.
const readerName = "reader"

// programImage builds image tag of the test programs of
// harness/testdata/dir, in the repository at root, on the runtimes of the
// tests: the C program name.c compiled in a build stage with Debian's
// gcc, at /usr/local/bin/name; the Java one, Name.java, compiled by the
// compiler Debian's JRE holds, in /src with the files more; entry its
// ENTRYPOINT.
func (d *Docker) programImage(ctx context.Context, root, tag, dir, name string, more []string, entry string) error {
	if err := d.testRuntimes(ctx); err != nil {
		return err
	}
	gcc, runtimes := faketimeImages()[1], top(faketimeRuntimes())
	java := strings.ToUpper(name[:1]) + name[1:] + ".java"
	files := map[string][]byte{}
	for _, f := range append([]string{name + ".c", java}, more...) {
		b, err := os.ReadFile(filepath.Join(root, "harness", "testdata", dir, f))
		if err != nil {
			return err
		}
		files[f] = b
	}
	files["Dockerfile"] = fmt.Appendf(nil, "FROM %[1]s AS c\nCOPY %[3]s.c /src/\nRUN gcc -O2 -Wall -Wextra -Werror -pthread -o /%[3]s /src/%[3]s.c\n"+
		"FROM %[2]s\nCOPY --from=c /%[3]s /usr/local/bin/%[3]s\nCOPY %[4]s /src/\n"+
		"RUN java -m jdk.compiler/com.sun.tools.javac.Main -d /src /src/%[5]s\nENTRYPOINT %[6]s\n",
		gcc.tag, runtimes.tag, name, strings.Join(append([]string{java}, more...), " "), java, entry)
	return d.buildContext(ctx, tag, nil, "Dockerfile", files)
}

// TestImages makes, from the repository at root, the images the
// harness's own tests build: the runtimes and programs of the clock
// tests, and the fixture targets' images with their bases. A fixture
// that does not build is passed over, saying so: some are made to fail
// (a release that does not exist, a program that does not compile, a
// base their test makes) and their tests expect it; one that should
// build fails in its own test all the same.
func (d *Docker) TestImages(ctx context.Context, root string) error {
	if err := d.testRuntimes(ctx); err != nil {
		return err
	}
	if _, err := d.waiterImages(ctx, root); err != nil {
		return err
	}
	if _, err := d.readerImages(ctx, root); err != nil {
		return err
	}
	fixtures, err := targets.List(filepath.Join(root, "harness", "testdata"))
	if err != nil {
		return err
	}
	for _, m := range fixtures {
		if _, err := d.TargetImages(ctx, m); err != nil && d.Progress != nil {
			first, _, _ := strings.Cut(err.Error(), "\n")
			fmt.Fprintf(d.Progress, "splitbrain: fixture %s: not made ahead: %s\n", m.Name, first)
		}
	}
	return ctx.Err()
}
