package harness

import (
	"maps"
	"testing"
)

// A package at one version is noted as it is, wherever it runs; one at two
// (curator-latch-trixie's node on trixie, its ZooKeeper servers on
// bookworm) keeps both, with whose each is, the nodes' first.
func TestMergeVersions(t *testing.T) {
	got := mergeVersions([]imageVersions{
		{whose: "nodes", versions: map[string]string{"default-jre-headless": "2:1.21-76", "libcurator-recipes-java": "5.7.1+ds-1"}},
		{whose: "zk", versions: map[string]string{"default-jre-headless": "2:1.17-74", "libzookeeper-java": "3.8.0-11+deb12u2"}},
		{whose: "etcd", versions: map[string]string{"default-jre-headless": "2:1.17-74"}},
	})
	want := map[string]string{
		"default-jre-headless":    "2:1.21-76 (nodes); 2:1.17-74 (zk, etcd)",
		"libcurator-recipes-java": "5.7.1+ds-1",
		"libzookeeper-java":       "3.8.0-11+deb12u2",
	}
	if !maps.Equal(got, want) {
		t.Errorf("mergeVersions = %v, want %v", got, want)
	}
	if got := mergeVersions([]imageVersions{{whose: "nodes"}}); got != nil {
		t.Errorf("no versions merged into %v, want none", got)
	}
}
