package targets

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Build says how an image is made: one program, which the image runs, on
// at most one base, the real system the program stands on. Each field
// chooses one kind of either (Kinds): exactly one of Go, Java, Command
// and Dockerfile, and under all but the last at most one base: Debian
// packages, an etcd or a kube-apiserver (Java and Command need one; Java
// needs Debian's).
type Build struct {
	// Go is a main package compiled with CGO_ENABLED=0 into a FROM scratch
	// image: a path relative to the target's folder (./cmd/node), or an
	// import path, built in the Go module that holds the folder. With
	// Debian packages it lands at /app on the Debian image instead: an
	// agent beside a real server.
	Go string `yaml:"go"`
	// Debian names Debian packages, installed on splitbrain's own Debian
	// minbase image of Release (built once per machine, then cached).
	Debian []string `yaml:"debian"`
	// Release is the Debian release the packages come from (DebianReleases,
	// DefaultDebianRelease when not given): one system at two versions is
	// one target on two releases.
	Release string `yaml:"release"`
	// Etcd is a release of etcd ("v3.6.16"), compiled here from Go
	// modules (once per machine, then cached) into a FROM scratch image
	// with the server at /usr/local/bin/etcd. A Go program lands beside it
	// at /app: an agent that runs the member.
	Etcd string `yaml:"etcd"`
	// Java is a Java program on Debian packages, in exec form: the source
	// file of its main class, relative to the target's folder
	// (./src/LatchNode.java), then the jars of /usr/share/java it runs
	// with (curator-recipes.jar), whose manifests name the jars they need
	// in turn, as Debian's Java policy has them. Every .java file of the
	// main file's folder and below is compiled with javac on the same
	// packages and a JDK (an image made once per machine, then cached);
	// the classes go to /app on the Debian image, whose packages must
	// hold a JRE, and its entry point is java -cp /app:JARS MAIN.
	Java []string `yaml:"java"`
	// KubeAPIServer is a release of Kubernetes ("v1.37.2") whose
	// kube-apiserver is compiled here from Go modules (once per machine,
	// then cached) into a FROM scratch image with the server at
	// /usr/local/bin/kube-apiserver. A Go program lands beside it at /app:
	// an agent that configures the server and becomes it.
	KubeAPIServer string `yaml:"kube-apiserver"`
	// Command is the program an image of Debian packages or of etcd runs,
	// in exec form (["redis-server", "--port", "6379"]), when there is no
	// Go program to run.
	Command []string `yaml:"command"`
	// Dockerfile is a Dockerfile relative to the target's folder, built
	// with the folder as its context. No registry is reachable: its base
	// images must already be on this machine, or be splitbrain's Debian
	// image (DebianImage), which is built when missing.
	Dockerfile string `yaml:"dockerfile"`
	// Dirs are directories the image must hold, the manifest's data
	// directories: a Go program's image, FROM scratch, is made with them.
	Dirs []string `yaml:"-"`
}

// DebianImage is the name under which splitbrain's Debian base image can
// be named in a Dockerfile's FROM.
const DebianImage = "splitbrain/debian:bookworm"

// The Debian releases a build's packages may come from (Build.Release).
const (
	Bookworm = "bookworm" // Debian 12
	Trixie   = "trixie"   // Debian 13
)

// DebianReleases are the Debian releases a build's packages may come
// from, oldest first.
var DebianReleases = []string{Bookworm, Trixie}

// DefaultDebianRelease is Build.Release when a manifest gives none.
const DefaultDebianRelease = Bookworm

// DebianRelease is the Debian release b's packages come from.
func (b Build) DebianRelease() string {
	if b.Release == "" {
		return DefaultDebianRelease
	}
	return b.Release
}

// A Kind is one way of making an image, chosen by one field of Build: a
// program, which the image runs, or a base, which the program stands on.
// The harness makes each kind (harness/kinds.go): a new kind is a field
// of Build, its entry in Kinds, and its maker there.
type Kind struct {
	// Field is the field of Build, as a manifest names it under build,
	// that chooses the kind.
	Field string
	// Base says the kind is a base, made once per machine and cached, on
	// which a program stands; otherwise it is a program.
	Base bool
	// needsBase: a program that runs what its base holds (a command, a
	// Java program's JRE).
	needsBase bool
	// onlyOn is the one base the program can stand on, if only one will
	// do: "" for any.
	onlyOn string
	// ownImage: a program that makes its whole image, on no base of ours
	// (a Dockerfile).
	ownImage bool
	// value is the field's value word by word: none when it is not given.
	value func(Build) []string
	// check says what is wrong with a value given, if anything; dir is the
	// target's folder.
	check func(value []string, dir string) error
	// Settings are the fields of Build that qualify the kind's value, not
	// kinds of their own (debian's release).
	Settings []string
}

// Kinds are the kinds of program and of base, in the order a manifest's
// errors name them.
var Kinds = []Kind{
	{Field: "go", value: func(b Build) []string { return word(b.Go) }},
	{Field: "java", needsBase: true, onlyOn: "debian", value: func(b Build) []string { return b.Java }, check: checkJava},
	{Field: "command", needsBase: true, value: func(b Build) []string { return b.Command }},
	{Field: "dockerfile", ownImage: true, value: func(b Build) []string { return word(b.Dockerfile) }, check: checkFile},
	{Field: "debian", Base: true, value: func(b Build) []string { return b.Debian }, check: checkPackages, Settings: []string{"release"}},
	{Field: "etcd", Base: true, value: func(b Build) []string { return word(b.Etcd) }, check: checkRelease},
	{Field: "kube-apiserver", Base: true, value: func(b Build) []string { return word(b.KubeAPIServer) }, check: checkKubeRelease},
}

// word is a field of one word as a value: none when it is empty.
func word(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// validPackage is Debian's rule for package names.
var validPackage = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+$`)

func checkPackages(packages []string, _ string) error {
	for _, p := range packages {
		if !validPackage.MatchString(p) {
			return fmt.Errorf("%q is not a Debian package name", p)
		}
	}
	return nil
}

var etcdRelease = regexp.MustCompile(`^v3\.[0-9]+\.[0-9]+$`)

func checkRelease(release []string, _ string) error {
	if !etcdRelease.MatchString(release[0]) {
		return fmt.Errorf("%q is not an etcd release: want v3.MINOR.PATCH, such as v3.6.16", release[0])
	}
	return nil
}

var kubeRelease = regexp.MustCompile(`^v1\.[0-9]+\.[0-9]+$`)

func checkKubeRelease(release []string, _ string) error {
	if !kubeRelease.MatchString(release[0]) {
		return fmt.Errorf("%q is not a Kubernetes release: want v1.MINOR.PATCH, such as v1.37.2", release[0])
	}
	return nil
}

func checkFile(file []string, dir string) error {
	if fi, err := os.Stat(filepath.Join(dir, file[0])); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("no file %s in %s", file[0], dir)
	}
	return nil
}

// Program is the kind of program b's image runs: a valid build gives one.
func (b Build) Program() Kind {
	k, _ := first(b.given(isProgram))
	return k
}

// Base is the kind of base b's program stands on; ok is false when it
// stands on none of ours (FROM scratch, or a Dockerfile's own).
func (b Build) Base() (k Kind, ok bool) {
	return first(b.given(isBase))
}

// given are the kinds that keep picks and b gives.
func (b Build) given(keep func(Kind) bool) []Kind {
	var out []Kind
	for _, k := range Kinds {
		if keep(k) && len(k.value(b)) > 0 {
			out = append(out, k)
		}
	}
	return out
}

func first(kinds []Kind) (Kind, bool) {
	if len(kinds) == 0 {
		return Kind{}, false
	}
	return kinds[0], true
}

func isProgram(k Kind) bool { return !k.Base }
func isBase(k Kind) bool    { return k.Base }

// standsOnBase says whether k is a program that a base may go under.
func standsOnBase(k Kind) bool { return !k.Base && !k.ownImage }

// System names the real system b's image runs, its base and the base's
// value ("etcd v3.6.16", "debian redis-server"), or "" for a program
// alone.
func (b Build) System() string {
	k, ok := b.Base()
	if !ok {
		return ""
	}
	system := k.Field + " " + strings.Join(k.value(b), " ")
	if k.Field == "debian" && b.DebianRelease() != DefaultDebianRelease {
		system = "debian " + b.DebianRelease() + " " + strings.Join(k.value(b), " ")
	}
	return system
}

func (b Build) validate(dir, field string) error {
	programs, bases := b.given(isProgram), b.given(isBase)
	switch {
	case len(programs) == 0:
		return fmt.Errorf("%s is missing: give %s, the program its image runs", field, sentence(fields(field, isProgram), "or"))
	case len(programs) > 1:
		return fmt.Errorf("%s: %s", field, oneOf(fields(field, isProgram)))
	case programs[0].needsBase && len(bases) == 0:
		need := sentence(fields(field, isBase), "or")
		if programs[0].onlyOn != "" {
			need = field + "." + programs[0].onlyOn
		}
		return fmt.Errorf("%s.%s needs %s: an image with nothing in it has no program to run", field, programs[0].Field, need)
	case programs[0].ownImage && len(bases) > 0:
		return fmt.Errorf("%s.%s makes its own image: %s go with %s", field, programs[0].Field, sentence(fields(field, isBase), "and"), sentence(fields(field, standsOnBase), "or"))
	case len(bases) > 1:
		return fmt.Errorf("%s: %s: a program stands on one base", field, oneOf(fields(field, isBase)))
	case programs[0].onlyOn != "" && bases[0].Field != programs[0].onlyOn:
		return fmt.Errorf("%s.%s stands on %s.%s, not %s.%s", field, programs[0].Field, field, programs[0].onlyOn, field, bases[0].Field)
	case b.Release != "" && len(b.Debian) == 0:
		return fmt.Errorf("%s.release is the Debian release of %s.debian, which is not given", field, field)
	case b.Release != "" && !slices.Contains(DebianReleases, b.Release):
		return fmt.Errorf("%s.release: %q is not a Debian release splitbrain builds on: want %s", field, b.Release, sentence(DebianReleases, "or"))
	}
	for _, k := range append(programs, bases...) {
		if k.check == nil {
			continue
		}
		if err := k.check(k.value(b), dir); err != nil {
			return fmt.Errorf("%s.%s: %v", field, k.Field, err)
		}
	}
	return nil
}

// BaseFields are the kinds of base an image may stand on, as a manifest
// names them under build: debian, etcd, kube-apiserver.
func BaseFields() []string { return fields("", isBase) }

// fields names, under field ("" for none), the fields of the kinds that
// keep picks.
func fields(field string, keep func(Kind) bool) []string {
	prefix := ""
	if field != "" {
		prefix = field + "."
	}
	var names []string
	for _, k := range Kinds {
		if keep(k) {
			names = append(names, prefix+k.Field)
		}
	}
	return names
}

// oneOf asks for one of names only.
func oneOf(names []string) string {
	if len(names) == 2 {
		return "give " + sentence(names, "or") + ", not both"
	}
	return "give one of " + sentence(names, "and") + ", not several"
}

// sentence joins names as a sentence does: "a, b or c".
func sentence(names []string, conj string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " " + conj + " " + names[len(names)-1]
}
