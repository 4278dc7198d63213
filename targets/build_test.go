package targets

import (
	"reflect"
	"slices"
	"testing"
)

// Every field of Build is one kind, named as a manifest names the field,
// and every kind is a field: a field without its kind would be read and
// never built.
func TestEveryBuildFieldIsAKind(t *testing.T) {
	var tags []string
	bt := reflect.TypeFor[Build]()
	for i := range bt.NumField() {
		tags = append(tags, bt.Field(i).Tag.Get("yaml"))
	}
	var kinds []string
	for _, k := range Kinds {
		kinds = append(kinds, k.Field)
	}
	slices.Sort(tags)
	slices.Sort(kinds)
	if !slices.Equal(tags, kinds) {
		t.Fatalf("Build's fields %v, Kinds %v", tags, kinds)
	}
}

func TestBuildKinds(t *testing.T) {
	for _, tc := range []struct {
		b       Build
		program string
		base    string
		system  string
	}{
		{Build{Go: "./cmd/n"}, "go", "", ""},
		{Build{Go: "./cmd/agent", Etcd: "v3.6.16"}, "go", "etcd", "etcd v3.6.16"},
		{Build{Command: []string{"redis-server"}, Debian: []string{"redis-server", "redis-tools"}}, "command", "debian", "debian redis-server redis-tools"},
		{Build{Dockerfile: "Dockerfile"}, "dockerfile", "", ""},
	} {
		base, ok := tc.b.Base()
		if got := tc.b.Program().Field; got != tc.program || base.Field != tc.base || ok != (tc.base != "") || tc.b.System() != tc.system {
			t.Errorf("%+v: program %s, base %s %v, system %q", tc.b, got, base.Field, ok, tc.b.System())
		}
	}
}
