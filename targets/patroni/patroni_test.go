package patroni

import (
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/splitbrain/splitbrain/contract"
)

func settings() Settings {
	return Settings{
		Node: "n2", Scope: "splitbrain", Namespace: "/service/",
		Store:   Store{Kind: Etcd3, Hosts: []string{"etcd1:2379", "etcd2:2379", "etcd3:2379"}},
		Network: "172.20.0.0/16",
		DataDir: "/data/pg", BinDir: "/usr/lib/postgresql/15/bin", PostInit: "/data/post_init.sh",
		TTL: 10, LoopWait: 2, RetryTimeout: 4,
		Passwords: PasswordsFrom("secret"),
	}
}

// The configuration Patroni reads: every field the target relies on, at
// the place Patroni looks for it.
func TestConfig(t *testing.T) {
	s := settings()
	s.Parameters = map[string]string{"shared_buffers": "32MB", "work_mem": "1MB"}
	c := parsed(t, s)
	for path, want := range map[string]any{
		"scope":                                          "splitbrain",
		"namespace":                                      "/service/",
		"name":                                           "n2",
		"restapi.listen":                                 "0.0.0.0:8008",
		"restapi.connect_address":                        "n2:8008",
		"bootstrap.dcs.ttl":                              10,
		"bootstrap.dcs.loop_wait":                        2,
		"bootstrap.dcs.retry_timeout":                    4,
		"bootstrap.dcs.synchronous_mode":                 false,
		"bootstrap.dcs.postgresql.use_pg_rewind":         true,
		"bootstrap.post_init":                            "/data/post_init.sh",
		"postgresql.data_dir":                            "/data/pg",
		"postgresql.bin_dir":                             "/usr/lib/postgresql/15/bin",
		"postgresql.connect_address":                     "n2:5432",
		"postgresql.authentication.superuser.username":   "postgres",
		"postgresql.authentication.replication.username": "replicator",
		"postgresql.parameters.shared_buffers":           "32MB", // the env's over the target's
		"postgresql.parameters.work_mem":                 "1MB",
		"postgresql.parameters.wal_log_hints":            "on",
		"watchdog.mode":                                  "off",
		"postgresql.basebackup.0.checkpoint":             "fast",
	} {
		if got := lookup(c, path); got != want {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}
	hosts, _ := lookup(c, "etcd3.hosts").([]any)
	if len(hosts) != 3 || hosts[0] != "etcd1:2379" {
		t.Errorf("etcd3.hosts = %v", hosts)
	}
	hba := strings.Join(toStrings(lookup(c, "postgresql.pg_hba")), "\n")
	for _, want := range []string{
		"host replication replicator 172.20.0.0/16 scram-sha-256",
		"host all postgres 172.20.0.0/16 scram-sha-256",
		"host all all 127.0.0.1/32 scram-sha-256",
		"host replication replicator 127.0.0.1/32 scram-sha-256",
	} {
		if !strings.Contains(hba, want) {
			t.Errorf("pg_hba has no %q:\n%s", want, hba)
		}
	}
	if strings.Contains(hba, "0.0.0.0/0") {
		t.Errorf("pg_hba lets everyone in:\n%s", hba)
	}
}

func lookup(m map[string]any, path string) any {
	var v any = m
	for _, k := range strings.Split(path, ".") {
		switch vv := v.(type) {
		case map[string]any:
			v = vv[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i >= len(vv) {
				return nil
			}
			v = vv[i]
		default:
			return nil
		}
	}
	return v
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// Timings a primary could lose its key with are refused: Patroni's rule
// loop_wait + 2 × retry_timeout <= ttl.
func TestCheckTimings(t *testing.T) {
	for _, tc := range []struct {
		ttl, loop, retry int
		ok               bool
	}{
		{10, 2, 4, true},
		{30, 10, 10, true},
		{10, 3, 4, false},
		{10, 0, 4, false},
		{0, 2, 4, false},
	} {
		s := settings()
		s.TTL, s.LoopWait, s.RetryTimeout = tc.ttl, tc.loop, tc.retry
		if err := s.Check(); (err == nil) != tc.ok {
			t.Errorf("ttl %d, loop_wait %d, retry_timeout %d: %v", tc.ttl, tc.loop, tc.retry, err)
		}
	}
	s := settings()
	s.Store.Hosts = nil
	if _, err := Config(s); err == nil {
		t.Error("a configuration with no etcd")
	}
	s = settings()
	s.Store.Kind = "consul"
	if _, err := Config(s); err == nil || !strings.Contains(err.Error(), "etcd3, zookeeper") {
		t.Errorf("a store Patroni is not run on here: %v", err)
	}
}

// On ZooKeeper the hosts go under Patroni's zookeeper section, and no
// etcd3 section is written that Patroni would try first.
func TestConfigOnZooKeeper(t *testing.T) {
	s := settings()
	s.Store = Store{Kind: ZooKeeper, Hosts: []string{"zk1:2181", "zk2:2181", "zk3:2181"}}
	c := parsed(t, s)
	if hosts := toStrings(lookup(c, "zookeeper.hosts")); strings.Join(hosts, ",") != "zk1:2181,zk2:2181,zk3:2181" {
		t.Errorf("zookeeper.hosts = %v", hosts)
	}
	if _, ok := c[Etcd3]; ok {
		t.Errorf("an etcd3 section beside ZooKeeper's: %v", c)
	}
}

func TestParseParameters(t *testing.T) {
	p, err := ParseParameters("shared_buffers=lots, work_mem = 1MB,")
	if err != nil || len(p) != 2 || p["shared_buffers"] != "lots" || p["work_mem"] != "1MB" {
		t.Errorf("got %v, %v", p, err)
	}
	if p, err := ParseParameters(""); err != nil || len(p) != 0 {
		t.Errorf("empty: %v, %v", p, err)
	}
	if _, err := ParseParameters("shared_buffers"); err == nil {
		t.Error("a setting without a value was taken")
	}
}

// The same secret makes the same passwords on every node, and another
// run's secret others.
func TestPasswordsFrom(t *testing.T) {
	a, b := PasswordsFrom("x"), PasswordsFrom("x")
	if a != b || a.Superuser == a.Replicator || a == PasswordsFrom("y") || len(a.Superuser) != 32 {
		t.Errorf("passwords %+v, %+v", a, PasswordsFrom("y"))
	}
}

func TestNetworkOf(t *testing.T) {
	_, lo, _ := net.ParseCIDR("127.0.0.1/8")
	lo.IP = net.ParseIP("127.0.0.1")
	v6 := &net.IPNet{IP: net.ParseIP("fd00::5"), Mask: net.CIDRMask(64, 128)}
	own := &net.IPNet{IP: net.ParseIP("172.20.0.5").To4(), Mask: net.CIDRMask(16, 32)}
	got, err := NetworkOf([]net.Addr{lo, v6, own})
	if err != nil || got != "172.20.0.0/16" {
		t.Errorf("got %q, %v", got, err)
	}
	if _, err := NetworkOf([]net.Addr{lo}); err == nil {
		t.Error("loopback alone made a network")
	}
}

// GET /cluster as Patroni 3.0.2 answers it.
func TestParseCluster(t *testing.T) {
	body := `{"members": [
		{"name": "n1", "role": "replica", "state": "streaming", "api_url": "http://n1:8008/patroni", "host": "n1", "port": 5432, "timeline": 2, "lag": 0},
		{"name": "n2", "role": "leader", "state": "running", "api_url": "http://n2:8008/patroni", "host": "n2", "port": 5432, "timeline": 2},
		{"name": "n3", "role": "replica", "state": "stopped", "api_url": "http://n3:8008/patroni", "host": "n3", "port": 5432, "lag": "unknown"}
	], "scope": "splitbrain"}`
	c, err := ParseCluster([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if c.Leader() != "n2" || len(c.Members) != 3 || c.Members[0].Timeline != 2 {
		t.Errorf("got %+v, leader %q", c, c.Leader())
	}
	c, err = ParseCluster([]byte(`{"members": [{"name": "n1", "role": "replica", "state": "starting"}]}`))
	if err != nil || c.Leader() != "" {
		t.Errorf("no leader: got %q, %v", c.Leader(), err)
	}
	if _, err := ParseCluster([]byte("<html>")); err == nil {
		t.Error("an answer that is not JSON was read")
	}
}

// A node leads only while Patroni says primary and PostgreSQL is out of
// recovery, with the timeline as its token.
func TestBelief(t *testing.T) {
	primary := Local{Timeline: 3}
	for _, tc := range []struct {
		name    string
		primary bool
		local   Local
		want    contract.Leadership
	}{
		{"primary", true, primary, contract.Leadership{Leader: true, Token: 3, LeaderID: "n1"}},
		{"Patroni says primary, PostgreSQL still in recovery (promoting)", true, Local{InRecovery: true}, contract.Leadership{LeaderID: "n1"}},
		{"out of recovery, Patroni does not say primary (hung, demoting)", false, primary, contract.Leadership{LeaderID: "n1"}},
		{"replica", false, Local{InRecovery: true}, contract.Leadership{LeaderID: "n1"}},
		{"PostgreSQL did not answer", true, Local{}, contract.Leadership{LeaderID: "n1"}},
	} {
		if got := Belief(tc.primary, tc.local, "n1"); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// On the Kubernetes API Patroni takes its keys' namespace from the
// top-level one, finds members by labels and reads a named context.
func TestConfigOnKubernetes(t *testing.T) {
	s := settings()
	s.Store = Store{Kind: Kubernetes, Hosts: []string{"apiserver:6443"}}
	c := parsed(t, s)
	for path, want := range map[string]any{
		"namespace":                     KubeNamespace,
		"kubernetes.namespace":          KubeNamespace,
		"kubernetes.context":            KubeContext,
		"kubernetes.use_endpoints":      false,
		"kubernetes.labels.application": "splitbrain",
	} {
		if got := lookup(c, path); got != want {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}
	if _, ok := c[Etcd3]; ok {
		t.Errorf("an etcd3 section beside the Kubernetes one: %v", c)
	}

	// The member's Pod carries the labels Patroni lists members by: its
	// own and the scope's.
	pod, err := MemberPod("n2", "splitbrain")
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Metadata struct {
			Name      string            `json:"name"`
			Namespace string            `json:"namespace"`
			Labels    map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(pod, &p); err != nil {
		t.Fatal(err)
	}
	if p.Metadata.Name != "n2" || p.Metadata.Namespace != KubeNamespace || p.Metadata.Labels["application"] != "splitbrain" || p.Metadata.Labels["cluster-name"] != "splitbrain" {
		t.Errorf("pod %s", pod)
	}

	kc, err := Kubeconfig("https://apiserver:6443", "/var/lib/postgresql/.kube/ca.crt", "tok")
	if err != nil {
		t.Fatal(err)
	}
	var k map[string]any
	if err := yaml.Unmarshal(kc, &k); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]any{
		"clusters.0.name":                          KubeContext,
		"clusters.0.cluster.server":                "https://apiserver:6443",
		"clusters.0.cluster.certificate-authority": "/var/lib/postgresql/.kube/ca.crt",
		"users.0.user.token":                       "tok",
		"contexts.0.name":                          KubeContext,
		"contexts.0.context.user":                  KubeContext,
	} {
		if got := lookup(k, path); got != want {
			t.Errorf("kubeconfig %s = %v, want %v", path, got, want)
		}
	}
}

// parsed is the configuration of s as Patroni would read it.
func parsed(t *testing.T, s Settings) map[string]any {
	t.Helper()
	b, err := Config(s)
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}
