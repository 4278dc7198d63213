package harness

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/splitbrain/splitbrain/targets"
)

func TestJavaMainClass(t *testing.T) {
	for _, tc := range []struct{ source, want string }{
		{"public class Node {}\n", "Node"},
		{"// a node\npackage dev.splitbrain.latch;\n\npublic class Node {}\n", "dev.splitbrain.latch.Node"},
		{"  package  x ;\npublic class Node {}\n", "x.Node"},
	} {
		if got := javaMainClass([]byte(tc.source), "/t/src/Node.java"); got != tc.want {
			t.Errorf("%q: %s, want %s", tc.source, got, tc.want)
		}
	}
}

// The image compiles on the JDK image and runs on the base, with the same
// jars on both class paths; the compiling stage is labelled as ours.
func TestJavaDockerfile(t *testing.T) {
	got := string(javaDockerfile("jdk:1", "base:2", []string{"curator-recipes.jar", "slf4j-simple.jar"}, "x.Node"))
	want := `FROM jdk:1 AS javac
LABEL dev.splitbrain=true
COPY sources /sources
COPY src /src
RUN ["ls","/usr/share/java/curator-recipes.jar","/usr/share/java/slf4j-simple.jar"]
RUN ["javac","-d","/app","-encoding","UTF-8","-cp","/usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-simple.jar","@/sources"]
FROM base:2
COPY --from=javac /app /app
ENTRYPOINT ["java","-cp","/app:/usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-simple.jar","x.Node"]
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if alone := string(javaDockerfile("jdk:1", "base:2", nil, "Node")); !strings.Contains(alone, `RUN ["javac","-d","/app","-encoding","UTF-8","@/sources"]`) ||
		!strings.Contains(alone, `ENTRYPOINT ["java","-cp","/app","Node"]`) {
		t.Errorf("without jars:\n%s", alone)
	}
}

// Every .java file of the folder and below is compiled, and nothing else.
func TestJavaSources(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"Node.java": "class Node {}", "json/Json.java": "class Json {}", "README": "no"} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, err := javaSources(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 || string(files["src/json/Json.java"]) != "class Json {}" || files["src/Node.java"] == nil {
		t.Errorf("files %v", files)
	}
	if got := string(files[javaSourceList]); got != "\"/src/Node.java\"\n\"/src/json/Json.java\"\n" {
		t.Errorf("sources list %q", got)
	}
}

// javac's errors in the sources are the user's: one line naming the file
// of the first, in the target's folder, then javac's last lines without
// the builder's; its other troubles are not.
func TestJavacError(t *testing.T) {
	if !javacFailed("The command 'javac -d /app -encoding UTF-8 @/sources' returned a non-zero code: 1") {
		t.Error("a compile error not told")
	}
	for _, reason := range []string{
		"The command 'javac -d /app -encoding UTF-8 @/sources' returned a non-zero code: 2",
		"The command '/bin/sh -c apt-get install x' returned a non-zero code: 1",
	} {
		if javacFailed(reason) {
			t.Errorf("%q taken for a compile error", reason)
		}
	}
	output := "Step 4/8 : COPY src /src\n ---> 1b2\nStep 5/8 : RUN [\"javac\"]\n ---> Running in 3c4\n" +
		"/src/json/Json.java:7: error: cannot find symbol\n    undefinedMethod();\n    ^\n  symbol:   method undefinedMethod()\n1 error\nRemoving intermediate container 5d6\n"
	err := javacError("/t/src", output)
	msg := err.Error()
	first, rest, _ := strings.Cut(msg, "\n")
	if !IsBadInput(err) || first != "build.java: /t/src/json/Json.java:7 does not compile: cannot find symbol; javac's last lines:" {
		t.Errorf("first line %q", first)
	}
	if !strings.HasPrefix(rest, "/src/json/Json.java:7: error") || !strings.HasSuffix(rest, "1 error") || strings.Contains(rest, "Running in") || strings.Contains(rest, "intermediate") {
		t.Errorf("javac's lines %q", rest)
	}
	if err := javacError("/t/src", "error: invalid flag: -Q\n"); !IsBadInput(err) || !strings.HasPrefix(err.Error(), "build.java: the Java sources in /t/src do not compile") {
		t.Errorf("no file named: %v", err)
	}
}

// The JDK image's name holds its recipe's hash, as the bases' do
// (TestHeavyImageNamesStay): the JDK on the packages of the program, on
// the Java runtime.
func TestJavaCompilerImageStays(t *testing.T) {
	var got []string
	for _, img := range (javaKind{}).compilers(targets.Build{Java: []string{"./src/Node.java"}, Debian: []string{"default-jre-headless", "libcurator-recipes-java"}}) {
		got = append(got, img.tag)
	}
	want := []string{"splitbrain/debian:bookworm-7c01919e47a9", "splitbrain/debian-packages:97ae4e10b30d", "splitbrain/debian-packages:64382248bd3b", "splitbrain/debian-packages:918ede763040"}
	if !slices.Equal(got, want) {
		t.Errorf("images %v, want %v", got, want)
	}
}
