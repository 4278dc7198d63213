package harness

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/splitbrain/splitbrain/targets"
)

// Every kind a manifest may name has its maker, a program's among the
// programs and a base's among the bases, and no maker is left without its
// kind.
func TestEveryKindIsMade(t *testing.T) {
	made := 0
	for _, k := range targets.Kinds {
		_, program := programKinds[k.Field]
		_, base := baseKinds[k.Field]
		if program == k.Base || base != k.Base {
			t.Errorf("kind %s (a base: %v): a program's maker %v, a base's %v", k.Field, k.Base, program, base)
			continue
		}
		made++
	}
	if makers := len(programKinds) + len(baseKinds); makers != made {
		t.Errorf("%d makers for %d kinds of targets.Kinds", makers, made)
	}
}

// The names of the heavy images hold their recipes' hashes: a change that
// moves one makes every machine build it again. These are the names the
// images had before; a recipe changed on purpose changes them here too.
func TestHeavyImageNamesStay(t *testing.T) {
	for _, tc := range []struct {
		b    targets.Build
		want []string
	}{
		{targets.Build{Debian: []string{"redis-server", "libfaketime"}}, []string{"splitbrain/debian:bookworm-7c01919e47a9", "splitbrain/debian-packages:3321728fe97b"}},
		{targets.Build{Debian: []string{"redis-sentinel"}}, []string{"splitbrain/debian:bookworm-7c01919e47a9", "splitbrain/debian-packages:c0ef57dd7385"}},
		// Java's packages stand on one image of the Java runtime alone.
		{targets.Build{Debian: []string{"default-jre-headless", "libzookeeper-java"}}, []string{"splitbrain/debian:bookworm-7c01919e47a9", "splitbrain/debian-packages:97ae4e10b30d", "splitbrain/debian-packages:454eb03deeb5"}},
		{targets.Build{Debian: []string{"libzookeeper-java"}}, []string{"splitbrain/debian:bookworm-7c01919e47a9", "splitbrain/debian-packages:97ae4e10b30d", "splitbrain/debian-packages:ac0af7a18b2d"}},
		{targets.Build{Etcd: "v3.6.16"}, []string{"splitbrain/etcd:v3.6.16-ee37fdfc0e85"}},
		{targets.Build{KubeAPIServer: "v1.37.2"}, []string{"splitbrain/kube-apiserver:v1.37.2-5ccde356b4c5"}},
	} {
		k, _ := tc.b.Base()
		var got []string
		for _, img := range baseKinds[k.Field].images(tc.b) {
			got = append(got, img.tag)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%+v: images %v, want %v", tc.b, got, tc.want)
		}
	}
}

// The targets whose bases are compiled here are told from the others, by
// how many: Images makes the one with the most first.
func TestCompiledBases(t *testing.T) {
	for name, want := range map[string]int{"k8s-lease": 2, "etcd": 1, "zookeeper": 0, "raft": 0} {
		m, err := targets.Find("../targets", name)
		if err != nil {
			t.Fatal(err)
		}
		if got := compiledBases(m); got != want {
			t.Errorf("%s: %d compiled bases, want %d", name, got, want)
		}
	}
}

// vet and the binary compile with the flags the images' programs are
// compiled with (goGCFlags), so that on a new machine vet's compile of
// their packages is found again in the Go build cache by the images'.
func TestMakeCompilesAsImagesDo(t *testing.T) {
	b, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^STATICFLAGS := (.*)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("the Makefile sets no STATICFLAGS")
	}
	// make hands the line to sh, which takes the quotes away.
	if flags := strings.ReplaceAll(string(m[1]), `"`, ""); !strings.Contains(flags, goGCFlags) {
		t.Errorf("STATICFLAGS %s: want the images' %s in them", m[1], goGCFlags)
	}
}
