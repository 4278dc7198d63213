package engines

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseResolvesTLSAndDefaults(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"ca.pem", "cert.pem", "key.pem"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("pem"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f, err := Parse([]byte(`
engines:
  - name: a
    host: tcp://10.0.0.2:2376
    tls: {ca: ca.pem, cert: cert.pem, key: key.pem}
  - name: b
    host: unix:///var/run/docker.sock
    advertise: 10.0.0.3
`), dir)
	if err != nil {
		t.Fatal(err)
	}
	if f.MTU != DefaultMTU {
		t.Errorf("mtu %d, want the default %d", f.MTU, DefaultMTU)
	}
	if got := f.Engines[0].TLS.CA; got != filepath.Join(dir, "ca.pem") {
		t.Errorf("ca %q, want it found from the file's folder", got)
	}
	if a, b := f.Engines[0].AdvertiseAddr(), f.Engines[1].AdvertiseAddr(); a != "10.0.0.2" || b != "10.0.0.3" {
		t.Errorf("advertised %q and %q, want the tcp host and the one given", a, b)
	}
}

func TestParseRefusesWithOneLine(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{``, "no engines"},
		{"engines: []", "no engines"},
		{"engines:\n  - {name: a, host: tcp://h:1}\nmtu: 100", "mtu 100"},
		{"engines:\n  - {name: A, host: tcp://h:1}", `name "A"`},
		{"engines:\n  - {name: a, host: tcp://h:1}\n  - {name: a, host: tcp://g:1}", "engine a: named twice"},
		{"engines:\n  - {name: a, host: h:2375}", "want tcp://HOST:PORT"},
		{"engines:\n  - {name: a, host: tcp://h}", "want tcp://HOST:PORT"},
		{"engines:\n  - {name: a, host: 'unix:///s', tls: {ca: x, cert: y, key: z}}", "tls on a unix socket"},
		{"engines:\n  - {name: a, host: 'tcp://h:1', tls: {ca: x, cert: y}}", "tls: no key"},
		{"engines:\n  - {name: a, host: 'tcp://h:1', tls: {ca: x, cert: y, key: z}}", "tls ca:"},
		{"engines:\n  - {name: a, host: tcp://h:1}\nplacement: {n1: b}", `placement of n1: no engine "b"`},
		{"engines:\n  - {name: a, hots: tcp://h:1}", "field hots not found"},
	} {
		_, err := Parse([]byte(c.file), t.TempDir())
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v, want one line with %q", c.file, err, c.want)
		}
	}
}

func TestAssignSpreadsEachGroupFromTheFirstEngine(t *testing.T) {
	f := File{Engines: []Engine{{Name: "a"}, {Name: "b"}, {Name: "c"}}, Placement: map[string]string{"n2": "a", "zk1": "c"}}
	got, err := f.Assign([]string{"n1", "n2", "n3", "n4", "n5"}, []string{"zk1", "zk2", "zk3"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"resource": "a",
		"n1":       "a", "n2": "a", "n3": "b", "n4": "c", "n5": "a", // n2 placed, the others round-robin
		"zk1": "c", "zk2": "a", "zk3": "b",
	}
	if !maps.Equal(got, want) {
		t.Errorf("assigned %v\nwant        %v", got, want)
	}
	if _, err := f.Assign([]string{"n1"}); err == nil || !strings.Contains(err.Error(), "placement of n2: the run has no such container") {
		t.Errorf("a placement of no container: %v", err)
	}
	f.Placement = map[string]string{Resource: "b"}
	if got, _ := f.Assign(nil); got[Resource] != "b" {
		t.Errorf("the resource on %s, want where it is placed", got[Resource])
	}
}
