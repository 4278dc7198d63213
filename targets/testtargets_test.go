package targets

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// testPackages are the folders whose tests start containers, and so run
// targets: the Makefile's CONTAINER_PKGS.
var testPackages = []string{"../harness", "../e2e", "../cmd"}

// kubeBase is the base make test leaves out (Build's KubeAPIServer).
const kubeBase = "kube-apiserver"

// make test makes ahead the images of the targets in the Makefile's
// TEST_TARGETS only, so a test that runs another target would compile
// it inside its own timeout. Every target a container test names (as a
// quoted string) is in the list, but those on a kube-apiserver, which make
// test never builds (their tests read the manifest only); every name in
// the list is a target.
func TestMakeTestMakesItsTargets(t *testing.T) {
	b, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^TEST_TARGETS := ((?:.*\\\n)*.*)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("the Makefile sets no TEST_TARGETS")
	}
	listed := strings.Fields(strings.ReplaceAll(string(m[1]), "\\\n", " "))
	var sources strings.Builder
	for _, dir := range testPackages {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			sources.Write(src)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	all, err := List(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range all {
		named := strings.Contains(sources.String(), `"`+target.Name+`"`)
		if named && !slices.Contains(listed, target.Name) && !target.StandsOn(kubeBase) {
			t.Errorf("a container test names target %s, which the Makefile's TEST_TARGETS lacks: make test would not make its images ahead", target.Name)
		}
	}
	for _, name := range listed {
		if !slices.ContainsFunc(all, func(m Manifest) bool { return m.Name == name }) {
			t.Errorf("TEST_TARGETS names %s, which is no target", name)
		}
	}
}
