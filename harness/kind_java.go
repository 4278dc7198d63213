package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/splitbrain/splitbrain/targets"
)

// javaKind is a Java program (build.java) on Debian packages: compiled
// with javac in an image of those packages and a JDK, which takes minutes
// to make and is cached like a base (cache.go); then its classes are
// copied to /app on the packages' own image, which holds the JRE, in a
// second stage of the same Dockerfile. The JDK stays out of the nodes'
// image: it would double its size.
type javaKind struct{}

// javaRuntime is Debian's Java runtime.
const javaRuntime = "default-jre-headless"

// javaJDK is the package that brings javac to a release: the JDK of its
// default JRE. Bookworm's keeps the name its compiler image was first
// made with (OpenJDK 17), so that a machine's cached image still serves.
func javaJDK(release string) string {
	if release == targets.Bookworm {
		return "openjdk-17-jdk-headless"
	}
	return "default-jdk-headless"
}

// runsOnJava says whether Debian packages need a Java runtime: they name
// it, a JDK, or a Java library (Debian names them lib*-java).
func runsOnJava(packages []string) bool {
	return slices.ContainsFunc(packages, func(p string) bool {
		return p == javaRuntime || strings.HasPrefix(p, "openjdk-") || strings.HasSuffix(p, "-java")
	})
}

// compilers are the images that compile b's program: b's packages (on
// the Debian base and the Java runtime), and on them the JDK.
func (javaKind) compilers(b targets.Build) []heavyImage {
	images := debianImages(b.DebianRelease(), b.Debian)
	return append(images, debianPackages(b.DebianRelease(), top(images).tag, append(slices.Clone(b.Debian), javaJDK(b.DebianRelease()))))
}

func (k javaKind) build(ctx context.Context, d *Docker, tag, dir string, b targets.Build, base string) error {
	compilers := k.compilers(b)
	if err := d.cached(ctx, compilers...); err != nil {
		return err
	}
	mainFile := filepath.Join(dir, b.Java[0])
	source, err := os.ReadFile(mainFile)
	if err != nil {
		return err
	}
	srcDir := filepath.Dir(mainFile)
	files, err := javaSources(srcDir)
	if err != nil {
		return fmt.Errorf("build %s: reading the Java sources in %s: %v", tag, srcDir, err)
	}
	files["Dockerfile"] = javaDockerfile(top(compilers).tag, base, b.Java[1:], javaMainClass(source, mainFile))
	err = d.buildContext(ctx, tag, nil, "Dockerfile", files)
	var failed *buildFailure
	switch {
	case !errors.As(err, &failed):
		return err
	case strings.Contains(failed.reason, "'"+jarCheck+" "):
		return missingJars(failed.output, b.Debian)
	case javacFailed(failed.reason):
		return javacError(srcDir, failed.output)
	}
	return err
}

// javaSources are the .java files of dir and below, at src/ in a build
// context, with the list javac reads them from (its argument file).
func javaSources(dir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	var list strings.Builder
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() || !strings.HasSuffix(path, ".java") {
			return err
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		files["src/"+filepath.ToSlash(rel)] = body
		fmt.Fprintf(&list, "%q\n", "/src/"+filepath.ToSlash(rel))
		return nil
	})
	files[javaSourceList] = []byte(list.String())
	return files, err
}

// javaSourceList names, in a build context, the file listing the sources.
const javaSourceList = "sources"

// javaClassPath is the class path of jars, by their names in Debian's
// folder of jars. Each names the jars it needs in its manifest's
// Class-Path, which both javac and java follow.
func javaClassPath(jars []string) string {
	paths := make([]string, len(jars))
	for i, jar := range jars {
		paths[i] = targets.JavaJars + "/" + jar
	}
	return strings.Join(paths, ":")
}

// javaPackage finds a source file's package declaration.
var javaPackage = regexp.MustCompile(`(?m)^\s*package\s+([A-Za-z_$][A-Za-z0-9_$.]*)\s*;`)

// javaMainClass names the class of the source file file, which holds
// source: Java names a public class's file by the class, in the package
// the file declares.
func javaMainClass(source []byte, file string) string {
	class := strings.TrimSuffix(filepath.Base(file), ".java")
	if m := javaPackage.FindSubmatch(source); m != nil {
		return string(m[1]) + "." + class
	}
	return class
}

// javaDockerfile compiles the sources listed in the context with javac on the image
// jdk, against jars, then copies the classes to /app on base, whose entry
// point runs class main with the same jars. The compiling stage is
// labelled as ours: the legacy builder keeps it as an image, which a
// rebuild of the same sources reuses.
func javaDockerfile(jdk, base string, jars []string, main string) []byte {
	javac := []string{"javac", "-d", "/app", "-encoding", "UTF-8"}
	run := []string{"java", "-cp", "/app", main}
	var check string
	if len(jars) > 0 {
		classPath := javaClassPath(jars)
		javac = append(javac, "-cp", classPath)
		run[2] += ":" + classPath
		// javac and java pass over a jar that is not there in silence, and
		// the error would be a class not found.
		check = "RUN " + execForm(append([]string{jarCheck}, strings.Split(classPath, ":")...)) + "\n"
	}
	javac = append(javac, "@/"+javaSourceList)
	return fmt.Appendf(nil, "FROM %s AS javac\nLABEL %s=true\nCOPY %s /%[3]s\nCOPY src /src\n%sRUN %s\nFROM %s\nCOPY --from=javac /app /app\nENTRYPOINT %s\n",
		jdk, LabelManaged, javaSourceList, check, execForm(javac), base, execForm(run))
}

// jarCheck is the command that lists the jars a program names, failing
// for one the packages did not install.
const jarCheck = "ls"

// missingJar finds ls's word for a jar that is not there.
var missingJar = regexp.MustCompile(`cannot access '([^']+)'`)

// missingJars is the user's error of naming jars that none of packages
// installs: one line naming them, from the build's output.
func missingJars(output string, packages []string) error {
	var jars []string
	for _, m := range missingJar.FindAllStringSubmatch(output, -1) {
		jars = append(jars, m[1])
	}
	return badInput("build.java: no %s among the jars of the Debian packages %s: name jars those packages install (dpkg -L PACKAGE lists them), or add the package that has them",
		strings.Join(jars, ", "), strings.Join(packages, ", "))
}

// execForm writes a command in a Dockerfile's exec form.
func execForm(args []string) string {
	b, _ := json.Marshal(args)
	return string(b)
}

// javacFailed says whether a failed build's step was javac finding the
// sources wrong: javac exits 1 for errors in them, 2 and above for its own
// troubles (a bad flag, no memory).
func javacFailed(reason string) bool {
	return strings.Contains(reason, "'javac ") && strings.HasSuffix(strings.TrimSpace(reason), "non-zero code: 1")
}

// javacComplaint is the first line of a compile error, in a file of the
// sources at /src.
var javacComplaint = regexp.MustCompile(`(?m)^/src/(\S+\.java):([0-9]+): error: (.*)$`)

// javacError is a compile error, the user's to fix: one line naming the
// file, line and complaint (the sources are in srcDir), then the end of
// what javac said, from the build's output.
func javacError(srcDir, output string) error {
	said := output
	if i := strings.LastIndex(said, " ---> Running in "); i >= 0 {
		_, said, _ = strings.Cut(said[i:], "\n")
	}
	said, _, _ = strings.Cut(said, "Removing intermediate container ")
	m := javacComplaint.FindStringSubmatch(said)
	if m == nil {
		return badInput("build.java: the Java sources in %s do not compile; javac's last lines:\n%s", srcDir, tail([]byte(said), 15))
	}
	return badInput("build.java: %s:%s does not compile: %s; javac's last lines:\n%s", filepath.Join(srcDir, filepath.FromSlash(m[1])), m[2], m[3], tail([]byte(said), 15))
}
