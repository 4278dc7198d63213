package harness

import (
	"github.com/splitbrain/splitbrain/targets"
)

// etcd is compiled here from Go modules (gowrapper.go): Debian's
// etcd-server is 3.4, older than the releases people run. Compiling it
// takes about two minutes on two cores.

// etcdWrapper is the wrapper module's main package.
const etcdWrapper = `// Command etcd is etcd's server, compiled by splitbrain from Go modules.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
`

// etcdKind is an etcd release (build.etcd), compiled here.
type etcdKind struct{}

func (etcdKind) images(b targets.Build) []heavyImage {
	return []heavyImage{etcdImage(b.Etcd)}
}

// etcdImage is the image of etcd release (v3.6.16): the server at
// /usr/local/bin/etcd, on nothing else.
func etcdImage(release string) heavyImage {
	w := goWrapper{name: "etcd", module: "go.etcd.io/etcd/server/v3", release: release, main: etcdWrapper}
	return w.image()
}
