package harness

import (
	"slices"
	"testing"
)

// Kubernetes' staging modules, in its go.mod's replace block or on lines
// of their own, are replaced by their published releases; other replaces
// and the sample modules are left alone.
func TestKubeReplaces(t *testing.T) {
	goMod := []byte(`module k8s.io/kubernetes

require k8s.io/api v0.0.0

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/client-go => ./staging/src/k8s.io/client-go
	k8s.io/sample-apiserver => ./staging/src/k8s.io/sample-apiserver
	github.com/x/y => github.com/x/y v1.2.3
)

replace k8s.io/kms => ./staging/src/k8s.io/kms
`)
	want := []string{
		"replace k8s.io/api => k8s.io/api v0.37.2",
		"replace k8s.io/client-go => k8s.io/client-go v0.37.2",
		"replace k8s.io/kms => k8s.io/kms v0.37.2",
	}
	if got := kubeReplaces(goMod, "v0.37.2"); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
