package harness

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/targets"
)

func needDebootstrap(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds images")
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("debootstrap is missing (make deps installs it)")
		}
		t.Skip("debootstrap is not installed (make deps)")
	}
}

// A mirror that cannot be reached fails the base image in one message
// that names the mirror, and leaves no image.
func TestDebianBaseFromNowhere(t *testing.T) {
	needDebootstrap(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := testDocker(t)
	const tag = "splitbrain/test-debian:nowhere"
	err := d.bootstrap(ctx, tag, targets.DefaultDebianRelease, "http://127.0.0.1:9/debian")
	if err == nil || !strings.Contains(err.Error(), "debootstrap bookworm from http://127.0.0.1:9/debian failed") {
		t.Fatalf("got %v", err)
	}
	if ok, _ := d.hasImage(ctx, tag); ok {
		t.Error("an image was left")
	}
}

// Packages are installed once on the base, which is made once: the second
// ask finds both by their recipes. A package Debian does not have is bad
// input that names it.
func TestDebianPackages(t *testing.T) {
	needDebootstrap(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	d := testDocker(t)
	tag, err := d.baseImage(ctx, targets.Build{Debian: []string{"redis-server", "libfaketime", "redis-server"}})
	if err != nil {
		t.Fatal(err)
	}
	first, err := d.cli.ImageInspect(ctx, tag)
	if err != nil {
		t.Fatal(err)
	}
	if first.Config.Labels[LabelManaged] != "true" || first.Config.Labels[LabelRecipe] == "" {
		t.Errorf("labels %v", first.Config.Labels)
	}
	again, err := d.baseImage(ctx, targets.Build{Debian: []string{"libfaketime", "redis-server"}})
	if err != nil || again != tag {
		t.Fatalf("asked again: %s, %v; want %s", again, err, tag)
	}
	if second, err := d.cli.ImageInspect(ctx, tag); err != nil || second.ID != first.ID {
		t.Errorf("rebuilt: %v", err)
	}
	base, err := d.cli.ImageInspect(ctx, targets.DebianImage)
	if err != nil || base.Config.Labels[LabelRecipe] != debianBaseRecipe(targets.DefaultDebianRelease) {
		t.Errorf("%s: %v %v", targets.DebianImage, err, base.Config.Labels)
	}

	_, err = d.baseImage(ctx, targets.Build{Debian: []string{"redis-server", "no-such-package-splitbrain"}})
	if !IsBadInput(err) || !strings.Contains(err.Error(), `"no-such-package-splitbrain" does not exist`) || strings.Count(err.Error(), "\n") > 0 {
		t.Errorf("unknown package: %v", err)
	}
}
