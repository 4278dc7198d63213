package targets

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestRepositoryTargetsLoad(t *testing.T) {
	all, err := List(".")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"raft":                 "overlap-bound: 2s",
		"raft-forgetful-vote":  "overlap-bound: 2s",
		"raft-small-quorum":    "overlap-bound: 2s",
		"raft-no-checkquorum":  "overlap-bound: 2s",
		"bully":                "fenced",
		"ring":                 "fenced",
		"lease":                "exclusive",
		"lease-python":         "exclusive",
		"redis-lease":          "exclusive",
		"redis-lease-volatile": "exclusive",
		"redis-sentinel":       "fenced",
		"curator-latch":        "overlap-bound: 2s",
	}
	for _, m := range all {
		if p, ok := want[m.Name]; ok && p != m.Promise {
			t.Errorf("%s promises %q, want %q", m.Name, m.Promise, p)
		}
		delete(want, m.Name)
		if m.Port != DefaultPort || !filepath.IsAbs(m.Dir) || m.Reaction <= 0 {
			t.Errorf("%s manifest: %+v", m.Name, m)
		}
	}
	if len(want) > 0 {
		t.Errorf("missing targets: %v", want)
	}
}

func TestUnknownTargetNamesTheKnownOnes(t *testing.T) {
	_, err := Find(".", "paxos")
	if err == nil || !strings.Contains(err.Error(), "raft") {
		t.Fatalf("got %v", err)
	}
}

func writeManifest(t *testing.T, dir, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestManifestErrors(t *testing.T) {
	const ok = "name: x\ndescription: d\nbuild: {go: ./x}\npromise: fenced\n"
	for _, tc := range []struct{ body, want string }{
		{"description: d\nbuild: {go: ./x}\npromise: fenced\n", "name is missing"},
		{"name: My Target\ndescription: d\nbuild: {go: ./x}\npromise: fenced\n", "lower case"},
		{"name: x\nbuild: {go: ./x}\npromise: fenced\n", "description"},
		{"name: x\ndescription: d\npromise: fenced\n", "build is missing"},
		{"name: x\ndescription: d\nbuild: {go: ./x, dockerfile: Dockerfile}\npromise: fenced\n", "not several"},
		{"name: x\ndescription: d\nbuild: {go: ./x, command: [a]}\npromise: fenced\n", "not several"},
		{"name: x\ndescription: d\nbuild: {command: [redis-server]}\npromise: fenced\n", "needs build.debian"},
		{"name: x\ndescription: d\nbuild: {debian: [redis-server]}\npromise: fenced\n", "build is missing"},
		{"name: x\ndescription: d\nbuild: {go: ./x, debian: [Redis Server]}\npromise: fenced\n", "not a Debian package name"},
		{ok + "clock: faketime\n", "needs libfaketime"},
		{"name: x\ndescription: d\nbuild: {go: ./x, etcd: v3.6.16}\nclock: faketime\npromise: fenced\n", "needs libfaketime"},
		{"name: x\ndescription: d\nbuild: {go: ./x, etcd: 3.6}\npromise: fenced\n", "not an etcd release"},
		{"name: x\ndescription: d\nbuild: {go: ./x, kube-apiserver: v0.37.2}\npromise: fenced\n", "not a Kubernetes release"},
		{"name: x\ndescription: d\nbuild: {go: ./x, kube-apiserver: v1.37.2, etcd: v3.6.16}\npromise: fenced\n", "a program stands on one base"},
		{"name: x\ndescription: d\nbuild: {go: ./x, etcd: v3.6.16, debian: [curl]}\npromise: fenced\n", "not several: a program stands on one base"},
		{"name: x\ndescription: d\nbuild: {dockerfile: D, etcd: v3.6.16}\npromise: fenced\n", "makes its own image"},
		{ok + "services: [{name: s, port: 1, members: 10, build: {go: ./e}}]\n", "members must be 1 to 9"},
		{ok + "services: [{name: s, port: 1, start: later, build: {go: ./e}}]\n", "want before-nodes or after-nodes"},
		{ok + "services: [{name: n, port: 1, members: 3, build: {go: ./e}}]\n", "nodes' names"},
		{ok + "services: [{name: s, port: 1, members: 2, build: {go: ./e}}, {name: s1, port: 2, build: {go: ./e}}]\n", "two containers would be named \"s1\""},
		{ok + "services: [{name: s, port: 1, beside: nodes, build: {go: ./e}}, {name: s42, port: 2, build: {go: ./e}}]\n", "two containers would be named \"s42\""},
		{ok + "services: [{name: s, port: 1, beside: somewhere, build: {go: ./e}}]\n", "services[0] (s): beside \"somewhere\": want nodes (a member beside every node) or a number of nodes from 1 to 99"},
		{ok + "services: [{name: s, port: 1, beside: 0, build: {go: ./e}}]\n", "beside \"0\""},
		{ok + "services: [{name: s, port: 1, beside: 100, build: {go: ./e}}]\n", "beside \"100\""},
		{ok + "services: [{name: s, port: 1, clock: ntp, build: {go: ./e}}]\n", "services[0] (s): clock \"ntp\": want faketime, process or nothing"},
		{ok + "services: [{name: s, port: 1, beside: nodes, clock: process, build: {go: ./e}}]\n", "services[0] (s): clock: process on a service placed beside nodes is not supported"},
		{ok + "services: [{name: s, port: 1, beside: 3, members: 3, build: {go: ./e}}]\n", "services[0] (s): members and beside: give one"},
		{ok + "data: [data]\n", "data: \"data\" is not a clean absolute path"},
		{ok + "data: [/a, /a/b]\n", "data: /a and /a/b overlap"},
		{ok + "services: [{name: s, port: 1, data: [/d/], build: {go: ./e}}]\n", "services[0].data: \"/d/\" is not a clean absolute path"},
		{ok + "services: [{name: s, port: 1, beside: nodes, data: [/d], build: {go: ./e}}]\n", "services[0] (s): data on a service placed beside nodes is not supported"},
		{ok + "services: [{name: n, port: 1, beside: nodes, build: {go: ./e}}]\n", "nodes' names"},
		{"name: x\ndescription: d\nbuild: {dockerfile: Nope}\npromise: fenced\n", "no file Nope"},
		{"name: x\ndescription: d\nbuild: {java: [Nope.java], debian: [default-jre-headless]}\npromise: fenced\n", "build.java: no file Nope.java"},
		{"name: x\ndescription: d\nbuild: {java: ./Node.java, debian: [default-jre-headless]}\npromise: fenced\n", "into []string"},
		{"name: x\ndescription: d\nbuild: {go: ./x}\n", "promise is missing"},
		{ok + "promise: sometimes\n", "mapping key \"promise\" already defined"},
		{"name: x\ndescription: d\nbuild: {go: ./x}\npromise: overlap-bound\n", "needs a duration"},
		{ok + "port: 70000\n", "out of range"},
		{ok + "env: {SPLITBRAIN_NODE: n9}\n", "harness's own"},
		{ok + "env: {\"A-B\": x}\n", "not a variable name"},
		{ok + "services: [{name: etcd, build: {go: ./e}}]\n", "port is missing"},
		{ok + "services: [{name: n2, port: 1, build: {go: ./e}}]\n", "taken by the harness"},
		{ok + "services: [{name: resource, port: 1, build: {go: ./e}}]\n", "taken by the harness"},
		{ok + "services: [{name: n1-netfilter, port: 1, build: {go: ./e}}]\n", "taken by the harness"},
		{ok + "services: [{name: Etcd, port: 1, build: {go: ./e}}]\n", "lower case"},
		{ok + "services: [{name: etcd, port: 1}]\n", "services[0].build is missing"},
		{ok + "services: [{name: etcd, port: 1, build: {go: ./e}, health: up}]\n", "path starting with /"},
		{ok + "services: [{name: etcd, port: 1, build: {go: ./e}, env: {SPLITBRAIN_X: y}}]\n", "services[0].env"},
		{ok + "services: [{name: a, port: 1, build: {go: ./e}}, {name: a, port: 2, build: {go: ./e}}]\n", "two containers would be named"},
		{ok + "services: [{name: a, port: 1, build: {go: ./e}, pot: 3}]\n", "field pot not found"},
		{ok + "buidl: {go: ./y}\n", "field buidl not found"},
		{ok + "clock: ntp\n", "want sdk, faketime, process or none"},
		{ok + "processes: [/usr/bin/etcd]\n", `processes: "/usr/bin/etcd" is not a command name`},
		{ok + "processes: [redis-sentinel-agent]\n", `give "redis-sentinel-"`},
		{ok + "services: [{name: s, port: 1, processes: [\"\"], build: {go: ./e}}]\n", "services[0].processes"},
		{ok + "stop_signal: SIGKILL\n", "stop_signal \"SIGKILL\": want one of SIGTERM"},
		{ok + "reaction: -1s\n", "must be positive"},
		{ok + "reaction: soon\n", "into time.Duration"},
		{ok + "start_timeout: -1s\n", "start_timeout -1s must be positive"},
		{"name: [x\n", "target.yaml"},
	} {
		dir := t.TempDir()
		writeManifest(t, dir, tc.body)
		if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), ManifestFile) {
			t.Errorf("%q: got %v, want %q", tc.body, err, tc.want)
		}
	}
	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), ManifestFile) {
		t.Errorf("missing manifest: %v", err)
	}
}

func TestDockerfileManifest(t *testing.T) {
	dir := t.TempDir()
	writeManifest(t, dir, "name: x\ndescription: d\nbuild: {dockerfile: Dockerfile}\nport: 8080\nenv: {X_TICK: 1s}\npromise: exclusive\n")
	os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\n"), 0o644)
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Build.Dockerfile != "Dockerfile" || m.Port != 8080 || m.Env["X_TICK"] != "1s" || m.Clock != ClockSDK {
		t.Fatalf("%+v", m)
	}
}

func TestServicesManifest(t *testing.T) {
	dir := t.TempDir()
	writeManifest(t, dir, "name: x\ndescription: d\nbuild: {go: ./x}\npromise: exclusive\n"+
		"services:\n  - {name: store, build: {go: ./cmd/store}, port: 2379, health: /health, env: {STORE_DATA: /data}}\n  - {name: redis-1, build: {go: ./r}, port: 6379}\n")
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []Service{
		{Name: "store", Build: Build{Go: "./cmd/store"}, Port: 2379, Health: "/health", Env: map[string]string{"STORE_DATA": "/data"}, Start: StartBeforeNodes},
		{Name: "redis-1", Build: Build{Go: "./r"}, Port: 6379, Start: StartBeforeNodes},
	}
	if !reflect.DeepEqual(m.Services, want) {
		t.Fatalf("services %+v, want %+v", m.Services, want)
	}
}

// A service cluster: members named after the service, Debian packages
// with a command to run, started after the nodes.
func TestServiceClusterManifest(t *testing.T) {
	dir := t.TempDir()
	writeManifest(t, dir, "name: x\ndescription: d\nbuild: {go: ./agent, debian: [redis-server]}\nclock: faketime\npromise: fenced\n"+
		"services:\n  - {name: sentinel, members: 3, start: after-nodes, build: {debian: [redis-sentinel], command: [redis-sentinel, /data/s.conf]}, port: 26379, data: [/data]}\n  - {name: redis, build: {go: ./r}, port: 6379}\n")
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := m.Services[0]
	if s.Start != StartAfterNodes || !slices.Equal(s.Build.Debian, []string{"redis-sentinel"}) || !slices.Equal(s.Build.Command, []string{"redis-sentinel", "/data/s.conf"}) {
		t.Fatalf("%+v", s)
	}
	// Its image is built with its data directory, which its command needs.
	if !slices.Equal(s.Build.Dirs, []string{"/data"}) || m.Services[1].Build.Dirs != nil {
		t.Errorf("image directories %v and %v, want [/data] and none", s.Build.Dirs, m.Services[1].Build.Dirs)
	}
	if got, want := slices.Concat(s.MemberNames(5), m.Services[1].MemberNames(5)), []string{"sentinel1", "sentinel2", "sentinel3", "redis"}; !slices.Equal(got, want) {
		t.Errorf("containers %v, want %v", got, want)
	}
}

// Members beside the nodes: one beside each node the run has, or beside
// the first N, named after the node they share a host with.
func TestServiceBesideNodes(t *testing.T) {
	dir := t.TempDir()
	writeManifest(t, dir, "name: x\ndescription: d\nbuild: {go: ./agent}\npromise: fenced\n"+
		"services:\n  - {name: sentinel, beside: nodes, start: after-nodes, build: {go: ./s}, port: 26379}\n"+
		"  - {name: etcd, beside: 2, build: {go: ./e}, port: 2379}\n  - {name: store, build: {go: ./r}, port: 80}\n")
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []Member
	for _, s := range m.Services {
		got = append(got, s.Placed(3)...)
	}
	want := []Member{
		{"sentinel1", "n1"}, {"sentinel2", "n2"}, {"sentinel3", "n3"},
		{"etcd1", "n1"}, {"etcd2", "n2"},
		{"store", ""},
	}
	if !slices.Equal(got, want) {
		t.Errorf("placed %v, want %v", got, want)
	}
	if err := m.Fits(2); err != nil {
		t.Errorf("2 nodes: %v", err)
	}
	if err := m.Fits(1); err == nil || !strings.Contains(err.Error(), "services[1] (etcd): beside 2 needs at least 2 nodes, not 1") || !strings.Contains(err.Error(), ManifestFile) {
		t.Errorf("1 node: %v", err)
	}
}

func TestListRefusesTwoTargetsOfOneName(t *testing.T) {
	root := t.TempDir()
	for _, sub := range []string{"a", "b"} {
		os.Mkdir(filepath.Join(root, sub), 0o755)
		writeManifest(t, filepath.Join(root, sub), "name: x\ndescription: d\nbuild: {go: ./x}\npromise: fenced\n")
	}
	if _, err := List(root); err == nil || !strings.Contains(err.Error(), `both named "x"`) {
		t.Fatalf("got %v", err)
	}
}

// A target stands on a base when any of its images does, a service's too.
func TestStandsOn(t *testing.T) {
	m := Manifest{Build: Build{Go: "./node"}, Services: []Service{
		{Name: "etcd", Build: Build{Etcd: "v3.6.16", Go: "./member"}},
		{Name: "apiserver", Build: Build{KubeAPIServer: "v1.37.2", Go: "./member"}},
	}}
	for base, want := range map[string]bool{"kube-apiserver": true, "etcd": true, "debian": false, "go": false} {
		if got := m.StandsOn(base); got != want {
			t.Errorf("StandsOn(%q) = %v", base, got)
		}
	}
	if (Manifest{Build: Build{Debian: []string{"redis-server"}, Command: []string{"redis-server"}}}).StandsOn("kube-apiserver") {
		t.Error("a Debian target stands on a kube-apiserver")
	}
}
