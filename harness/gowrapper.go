package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Real servers written in Go (etcd, kube-apiserver) are compiled here from
// their Go modules: no registry holds their images. `go install
// module@version` fails on the replace directives of their own go.mod, so
// a wrapper module of ours requires the server's module and calls its
// main. Compiling takes minutes on two cores: the image is made once per
// machine and cached by its recipe (cache.go).

// A goWrapper is one such server at one release, and how it is compiled.
type goWrapper struct {
	// name is the server's binary ("etcd"), the last element of the
	// wrapper module's path and of the image's name.
	name string
	// module is the module whose release it is; release its version.
	module, release string
	// main is the wrapper module's main package.
	main string
	// replaces are the lines the wrapper's go.mod needs beside requiring
	// module, given module's own go.mod (a module's replace directives
	// bind only itself, not a module that requires it); nil for none.
	replaces func(goMod []byte) []string
	// ldflags are the linker flags beyond -s -w.
	ldflags string
}

// goMod is the wrapper module's go.mod before the server is required.
func (w goWrapper) goMod() string {
	return "module splitbrain.local/" + w.name + "\n\ngo 1.24\n"
}

// image is the image of w: the server at /usr/local/bin/<name>, on
// nothing else, cached by the recipe of w's fields, how go compiles it
// and rules, what a field cannot say of how w is made (a function's).
func (w goWrapper) image(rules ...string) heavyImage {
	recipe := recipeHash(append([]string{w.name, w.module, w.release, w.goMod(), w.main, w.ldflags, goGCFlags}, rules...)...)
	tag := "splitbrain/" + w.name + ":" + w.release + "-" + recipe
	return heavyImage{
		tag:      tag,
		making:   "compiling " + w.name + " " + w.release + " from Go modules",
		compiled: true,
		make: func(ctx context.Context, d *Docker) error {
			dir, err := os.MkdirTemp("", "splitbrain-"+w.name+"-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			bin, err := w.compile(ctx, dir)
			if err != nil {
				return err
			}
			// The versions file is what run.json and the report name the
			// real system by, as for Debian packages (SystemVersions).
			dockerfile := "FROM scratch\nCOPY " + w.name + " /usr/local/bin/" + w.name + "\nCOPY versions " + packagesFile + "\nENV PATH=/usr/local/bin\n"
			return d.buildContext(ctx, tag, map[string]string{LabelRecipe: recipe}, "Dockerfile", map[string][]byte{
				"Dockerfile": []byte(dockerfile),
				w.name:       bin,
				"versions":   []byte(w.name + " " + w.release + "\n"),
			})
		},
	}
}

// compile writes the wrapper module in dir, requires the server's module
// at its release there and compiles it static.
func (w goWrapper) compile(ctx context.Context, dir string) ([]byte, error) {
	for name, body := range map[string]string{"go.mod": w.goMod(), "main.go": w.main} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return nil, err
		}
	}
	goCmd := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = dir
		// GOTOOLCHAIN=local: the Go on this machine, never one downloaded
		// because a module asks for a newer one.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod")
		return cmd.Output()
	}
	what := fmt.Sprintf("compiling %s %s", w.name, w.release)
	// go mod download answers in JSON, its error included, and exits 1.
	out, err := goCmd("mod", "download", "-json", w.module+"@"+w.release)
	var got struct{ GoMod, Error string }
	if jerr := json.Unmarshal(out, &got); jerr != nil || got.Error != "" || err != nil {
		if unknownRelease([]byte(got.Error)) {
			return nil, badInput("%s %s: the Go module proxy has no such release of %s (%s)", w.name, w.release, w.module, firstLine([]byte(got.Error)))
		}
		return nil, fmt.Errorf("%s: go mod download %s@%s failed: %v %s\n%s", what, w.module, w.release, err, got.Error, tail(stderrOf(err), 8))
	}
	lines := []string{"require " + w.module + " " + w.release}
	if w.replaces != nil {
		body, err := os.ReadFile(got.GoMod)
		if err != nil {
			return nil, err
		}
		lines = append(lines, w.replaces(body)...)
	}
	f, err := os.OpenFile(filepath.Join(dir, "go.mod"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	_, err = f.WriteString("\n" + strings.Join(lines, "\n") + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if _, err := goCmd("mod", "tidy"); err != nil {
		return nil, fmt.Errorf("%s: go mod tidy failed: %v\n%s", what, err, tail(stderrOf(err), 8))
	}
	// Its modules are downloaded by now, beside other builds; its
	// compile waits for any other's to end.
	unlock, err := lock(ctx, compileLock)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := goCmd("build", "-trimpath", goGCFlags, "-ldflags=-s -w "+w.ldflags, "-o", w.name, "."); err != nil {
		return nil, fmt.Errorf("%s: go build failed: %v\n%s", what, err, tail(stderrOf(err), 15))
	}
	return os.ReadFile(filepath.Join(dir, w.name))
}

// stderrOf is what a failed command said on its standard error.
func stderrOf(err error) []byte {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.Stderr
	}
	return nil
}

// unknownRelease tells a version the module proxy does not have (it
// answers 403 "not available" or 404, or the version does not parse)
// from a proxy that cannot be reached.
func unknownRelease(goOutput []byte) bool {
	for _, s := range []string{"not available", "404 Not Found", "unknown revision", "invalid version", "no matching versions"} {
		if bytes.Contains(goOutput, []byte(s)) {
			return true
		}
	}
	return false
}

// firstLine is the first line of a tool's output, trimmed.
func firstLine(out []byte) string {
	line, _, _ := bytes.Cut(bytes.TrimSpace(out), []byte("\n"))
	return string(line)
}
