package targets

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Every field of Build is one kind, named as a manifest names the field,
// or a setting of one, and every kind is a field: a field without its
// kind would be read and never built. A field no manifest names (Dirs,
// which Load sets) is none.
func TestEveryBuildFieldIsAKind(t *testing.T) {
	var tags []string
	bt := reflect.TypeFor[Build]()
	for i := range bt.NumField() {
		if tag := bt.Field(i).Tag.Get("yaml"); tag != "-" {
			tags = append(tags, tag)
		}
	}
	var kinds []string
	for _, k := range Kinds {
		kinds = append(append(kinds, k.Field), k.Settings...)
	}
	slices.Sort(tags)
	slices.Sort(kinds)
	if !slices.Equal(tags, kinds) {
		t.Fatalf("Build's fields %v, Kinds %v", tags, kinds)
	}
}

func TestBuildKinds(t *testing.T) {
	for _, tc := range []struct {
		b       Build
		program string
		base    string
		system  string
	}{
		{Build{Go: "./cmd/n"}, "go", "", ""},
		{Build{Go: "./cmd/agent", Etcd: "v3.6.16"}, "go", "etcd", "etcd v3.6.16"},
		{Build{Go: "./cmd/agent", KubeAPIServer: "v1.37.2"}, "go", "kube-apiserver", "kube-apiserver v1.37.2"},
		{Build{Command: []string{"redis-server"}, Debian: []string{"redis-server", "redis-tools"}}, "command", "debian", "debian redis-server redis-tools"},
		{Build{Dockerfile: "Dockerfile"}, "dockerfile", "", ""},
		{Build{Go: "./cmd/agent", Debian: []string{"valkey-server"}, Release: "trixie"}, "go", "debian", "debian trixie valkey-server"},
		{Build{Go: "./cmd/agent", Debian: []string{"redis-server"}, Release: "bookworm"}, "go", "debian", "debian redis-server"},
		{Build{Java: []string{"./src/Node.java", "curator-recipes.jar"}, Debian: []string{"default-jre-headless"}}, "java", "debian", "debian default-jre-headless"},
	} {
		base, ok := tc.b.Base()
		if got := tc.b.Program().Field; got != tc.program || base.Field != tc.base || ok != (tc.base != "") || tc.b.System() != tc.system {
			t.Errorf("%+v: program %s, base %s %v, system %q", tc.b, got, base.Field, ok, tc.b.System())
		}
	}
}

// A Java program names its main class's source file, a file of the
// target's folder, and jars by their names in /usr/share/java; it stands
// on Debian packages, which hold its JRE, and on nothing else.
func TestJavaBuildErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "src", "Node.java"), []byte("class Node {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	jre := []string{"default-jre-headless"}
	if err := (Build{Java: []string{"./src/Node.java", "curator-recipes.jar"}, Debian: jre}).validate(dir, "build"); err != nil {
		t.Fatalf("a valid Java build: %v", err)
	}
	for _, tc := range []struct {
		b    Build
		want string
	}{
		{Build{Java: []string{"./src/Node.java"}}, "build.java needs build.debian: an image"},
		{Build{Java: []string{"./src/Node.java"}, Etcd: "v3.6.16"}, "build.java stands on build.debian, not build.etcd"},
		{Build{Java: []string{"./src/Node.java"}, Go: "./x", Debian: jre}, "not several"},
		{Build{Java: []string{"./src"}, Debian: jre}, `build.java: "./src" must be the source file of the main class`},
		{Build{Java: []string{"./src/Other.java"}, Debian: jre}, "build.java: no file ./src/Other.java in " + dir},
		{Build{Java: []string{"./src/Node.java", "/usr/share/java/guava.jar"}, Debian: jre}, `build.java: "/usr/share/java/guava.jar" is not a jar's file name in /usr/share/java`},
		{Build{Java: []string{"./src/Node.java", "guava"}, Debian: jre}, `"guava" is not a jar's file name`},
	} {
		if err := tc.b.validate(dir, "build"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.b, err, tc.want)
		}
	}
}

// A release qualifies Debian packages: one splitbrain builds on, and
// only with them.
func TestReleaseErrors(t *testing.T) {
	for _, tc := range []struct {
		b    Build
		want string
	}{
		{Build{Go: "./cmd/n", Release: "trixie"}, "build.release is the Debian release of build.debian, which is not given"},
		{Build{Go: "./cmd/n", Debian: []string{"redis-server"}, Release: "sid"}, `build.release: "sid" is not a Debian release splitbrain builds on: want bookworm or trixie`},
	} {
		if err := tc.b.validate(t.TempDir(), "build"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.b, err, tc.want)
		}
	}
}
