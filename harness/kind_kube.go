package harness

import (
	"bufio"
	"bytes"
	"strings"

	"github.com/splitbrain/splitbrain/targets"
)

// kube-apiserver is compiled here from Go modules (gowrapper.go): no
// registry holds its image and Debian has no package of it. Kubernetes'
// own go.mod points every staging module (k8s.io/api, k8s.io/client-go...)
// at a folder of its repository, which binds no module that requires it:
// the wrapper replaces each by its published release, v0.MINOR.PATCH for
// Kubernetes v1.MINOR.PATCH. The list is read from the release's go.mod as
// the image is made, so that the recipe is the release alone and a new
// release's new staging modules need no change here. About 2,000 packages:
// six to eight minutes on two cores with the modules downloaded, half a
// minute to download them (684 MB) through the module proxy.

// kubeWrapper is the wrapper module's main package.
const kubeWrapper = `// Command kube-apiserver is Kubernetes' API server, compiled by splitbrain from Go modules.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() { os.Exit(cli.Run(app.NewAPIServerCommand())) }
`

// kubeStagingRule says how the staging modules are replaced, for the
// recipe: a change of kubeReplaces changes it too.
const kubeStagingRule = "replace each ./staging/src/k8s.io module but sample-* by its v0 release"

// kubeKind is a Kubernetes release's kube-apiserver (build.kube-apiserver),
// compiled here.
type kubeKind struct{}

func (kubeKind) images(b targets.Build) []heavyImage {
	return []heavyImage{kubeImage(b.KubeAPIServer)}
}

// kubeImage is the image of Kubernetes release's kube-apiserver (v1.37.2):
// the server at /usr/local/bin/kube-apiserver, on nothing else.
func kubeImage(release string) heavyImage {
	// The version the server reports (/version, and the version skew
	// checks of its clients): a build from modules has no git tree to
	// read it from.
	ldflags := "-X k8s.io/component-base/version.gitVersion=" + release
	w := goWrapper{
		name: "kube-apiserver", module: "k8s.io/kubernetes", release: release, main: kubeWrapper, ldflags: ldflags,
		replaces: func(goMod []byte) []string { return kubeReplaces(goMod, "v0"+strings.TrimPrefix(release, "v1")) },
	}
	return w.image(kubeStagingRule)
}

// kubeReplaces are the wrapper's replace lines for Kubernetes' go.mod:
// each staging module it points at a folder of its own repository, at
// version instead. The sample-* modules are examples, part of no server.
func kubeReplaces(goMod []byte, version string) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(goMod))
	for sc.Scan() {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "replace "))
		if len(f) != 3 || f[1] != "=>" || !strings.HasPrefix(f[2], "./staging/") || strings.HasPrefix(f[0], "k8s.io/sample-") {
			continue
		}
		out = append(out, "replace "+f[0]+" => "+f[0]+" "+version)
	}
	return out
}
