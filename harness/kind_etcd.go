package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/splitbrain/splitbrain/targets"
)

// etcd is compiled here from Go modules: no registry holds its image, and
// Debian's etcd-server is 3.4, older than the releases people run. `go
// install etcd@version` fails on the replace directives of etcd's own
// modules, so a wrapper module of ours requires the server's module and
// calls its main. Compiling it takes about two minutes on two cores: the
// image is made once per machine and cached by its recipe (cache.go).

// etcdModule is the module that holds etcd's server.
const etcdModule = "go.etcd.io/etcd/server/v3"

// etcdWrapper is the wrapper module's main package.
const etcdWrapper = `// Command etcd is etcd's server, compiled by splitbrain from Go modules.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
`

// etcdGoMod is the wrapper module's go.mod before the server is required.
const etcdGoMod = "module splitbrain.local/etcd\n\ngo 1.24\n"

// etcdKind is an etcd release (build.etcd), compiled here.
type etcdKind struct{}

func (etcdKind) images(b targets.Build) []heavyImage {
	return []heavyImage{etcdImage(b.Etcd)}
}

// etcdImage is the image of etcd release (v3.6.16): the server at
// /usr/local/bin/etcd, on nothing else.
func etcdImage(release string) heavyImage {
	recipe := recipeHash("etcd", release, etcdGoMod, etcdWrapper)
	tag := "splitbrain/etcd:" + release + "-" + recipe
	return heavyImage{
		tag:    tag,
		making: "compiling etcd " + release + " from Go modules",
		make: func(ctx context.Context, d *Docker) error {
			dir, err := os.MkdirTemp("", "splitbrain-etcd-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			for name, body := range map[string]string{"go.mod": etcdGoMod, "main.go": etcdWrapper} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					return err
				}
			}
			bin, err := compileEtcd(ctx, dir, release)
			if err != nil {
				return err
			}
			// The versions file is what run.json and the report name the
			// real system by, as for Debian packages (PackageVersions).
			dockerfile := "FROM scratch\nCOPY etcd /usr/local/bin/etcd\nCOPY versions " + packagesFile + "\nENV PATH=/usr/local/bin\n"
			return d.buildContext(ctx, tag, map[string]string{LabelRecipe: recipe}, "Dockerfile", map[string][]byte{
				"Dockerfile": []byte(dockerfile),
				"etcd":       bin,
				"versions":   []byte("etcd " + release + "\n"),
			})
		},
	}
}

// compileEtcd requires etcd's server at release in the wrapper module in
// dir and compiles it static.
func compileEtcd(ctx context.Context, dir, release string) ([]byte, error) {
	goCmd := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = dir
		// GOTOOLCHAIN=local: the Go on this machine, never one downloaded
		// because a module asks for a newer one.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod")
		return cmd.CombinedOutput()
	}
	if out, err := goCmd("get", etcdModule+"@"+release); err != nil {
		if unknownRelease(out) {
			return nil, badInput("etcd %s: the Go module proxy has no such release of %s (%s)", release, etcdModule, firstLine(out))
		}
		return nil, fmt.Errorf("compiling etcd %s: go get %s@%s failed: %v\n%s", release, etcdModule, release, err, tail(out, 8))
	}
	if out, err := goCmd("mod", "tidy"); err != nil {
		return nil, fmt.Errorf("compiling etcd %s: go mod tidy failed: %v\n%s", release, err, tail(out, 8))
	}
	if out, err := goCmd("build", "-trimpath", "-ldflags=-s -w", "-o", "etcd", "."); err != nil {
		return nil, fmt.Errorf("compiling etcd %s: go build failed: %v\n%s", release, err, tail(out, 15))
	}
	return os.ReadFile(filepath.Join(dir, "etcd"))
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
