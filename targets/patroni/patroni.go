// Package patroni holds what the patroni target's agent decides without
// I/O: the Patroni configuration it writes for its node, how it reads
// Patroni's REST API, and the belief it serves from that and its
// PostgreSQL's own state. cmd/patroni-agent is the I/O around it.
package patroni

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/splitbrain/splitbrain/contract"
)

// Ports and names every node shares.
const (
	// RestPort is Patroni's REST API, where GET /primary and GET /cluster
	// are asked.
	RestPort = 8008
	// PGPort is PostgreSQL's.
	PGPort = 5432
	// Superuser is the PostgreSQL role Patroni bootstraps, rewinds and the
	// agent connects with.
	Superuser = "postgres"
	// Replicator is the role the replicas stream with.
	Replicator = "replicator"
	// RegisterTable is the own-data register: a row per key.
	RegisterTable = "register"
	// FencedTable takes the fenced writes on their way to the resource,
	// apart from the register, whose keys and values are the workload's
	// own data.
	FencedTable = "fenced"
)

// Settings are what one node's Patroni configuration is made from.
type Settings struct {
	Node      string // the node's name: Patroni's member name and host
	Scope     string // the cluster's name in the store
	Namespace string // the store's key prefix, /service/ by Patroni's default
	Store     Store  // where Patroni keeps its leader key
	Network   string // the nodes' network as a CIDR: who may connect
	DataDir   string // PostgreSQL's data directory
	BinDir    string // where initdb, pg_ctl and pg_rewind are
	PostInit  string // the script Patroni runs once the cluster is bootstrapped
	// TTL, LoopWait and RetryTimeout are Patroni's timings, in seconds.
	TTL, LoopWait, RetryTimeout int
	// Parameters are PostgreSQL settings added to the target's own.
	Parameters map[string]string
	Passwords  Passwords
}

// Store is the store Patroni keeps the cluster's state and its leader
// key in: the kind, as Patroni names its configuration section, and the
// host:port of every member.
type Store struct {
	Kind  string
	Hosts []string
}

// The stores the target runs Patroni on: etcd v3 (a lease of ttl
// seconds), ZooKeeper through kazoo (an ephemeral znode of a session
// that times out after ttl seconds) and the Kubernetes API (annotations
// of a ConfigMap that each member deems expired ttl seconds after it saw
// them change, by its own clock).
const (
	Etcd3      = "etcd3"
	ZooKeeper  = "zookeeper"
	Kubernetes = "kubernetes"
)

// Stores are the store kinds Settings accepts.
var Stores = []string{Etcd3, ZooKeeper, Kubernetes}

// On the Kubernetes API, Patroni keeps its keys as ConfigMaps of one
// namespace and finds its members as the Pods that carry its labels.
const (
	// KubeNamespace holds them: Patroni takes its top-level namespace
	// for the Kubernetes one, so /service/ would not do.
	KubeNamespace = "default"
	// KubeContext is the context of the kubeconfig the agent writes:
	// Patroni reads a named one, not the current one.
	KubeContext = "splitbrain"
	// kubeScopeLabel is the label Patroni adds with the scope as value.
	kubeScopeLabel = "cluster-name"
)

// kubeLabels are the labels of every member's Pod, the scope's among
// them: Patroni lists its members by them.
func kubeLabels(scope string) map[string]string {
	return map[string]string{"application": "splitbrain", kubeScopeLabel: scope}
}

// Passwords are the PostgreSQL roles' passwords.
type Passwords struct{ Superuser, Replicator string }

// PasswordsFrom derives the roles' passwords from the run's secret, which
// every node has: the same on every node of a run, committed nowhere.
func PasswordsFrom(secret string) Passwords {
	derive := func(role string) string {
		sum := sha256.Sum256([]byte(secret + "/" + role))
		return hex.EncodeToString(sum[:16])
	}
	return Passwords{Superuser: derive(Superuser), Replicator: derive(Replicator)}
}

// Check refuses timings Patroni would misbehave with. A primary renews its
// key every loop_wait and gives up on the store after retry_timeout; the
// key must outlive a renewal that took both, plus a retry of the store
// (Patroni's documentation: loop_wait + 2 × retry_timeout ≤ ttl), or a
// healthy primary loses its key between two renewals.
func (s Settings) Check() error {
	switch {
	case s.TTL <= 0 || s.LoopWait <= 0 || s.RetryTimeout <= 0:
		return fmt.Errorf("ttl %d, loop_wait %d, retry_timeout %d: each must be above 0", s.TTL, s.LoopWait, s.RetryTimeout)
	case s.LoopWait+2*s.RetryTimeout > s.TTL:
		return fmt.Errorf("loop_wait %d + 2 × retry_timeout %d > ttl %d: a primary could lose its key between two renewals", s.LoopWait, s.RetryTimeout, s.TTL)
	case !slices.Contains(Stores, s.Store.Kind):
		return fmt.Errorf("store %q: want one of %s", s.Store.Kind, strings.Join(Stores, ", "))
	case len(s.Store.Hosts) == 0:
		return fmt.Errorf("no %s hosts", s.Store.Kind)
	}
	return nil
}

// ParseParameters reads PostgreSQL settings written name=value,name=value.
func ParseParameters(s string) (map[string]string, error) {
	params := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		if strings.TrimSpace(kv) == "" {
			continue
		}
		name, value, ok := strings.Cut(kv, "=")
		if name = strings.TrimSpace(name); !ok || name == "" {
			return nil, fmt.Errorf("%q: want name=value", kv)
		}
		params[name] = strings.TrimSpace(value)
	}
	return params, nil
}

// Config is the node's Patroni configuration, as YAML.
func Config(s Settings) ([]byte, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	return yaml.Marshal(config(s))
}

// The configuration's shape, in Patroni's names.
type (
	patroniConfig struct {
		Scope     string         `yaml:"scope"`
		Namespace string         `yaml:"namespace"`
		Name      string         `yaml:"name"`
		RestAPI   restAPI        `yaml:"restapi"`
		Etcd3     *hosts         `yaml:"etcd3,omitempty"`
		ZooKeeper *hosts         `yaml:"zookeeper,omitempty"`
		Kube      *kube          `yaml:"kubernetes,omitempty"`
		Bootstrap bootstrap      `yaml:"bootstrap"`
		Postgres  postgresql     `yaml:"postgresql"`
		Watchdog  map[string]any `yaml:"watchdog"`
	}
	restAPI struct {
		Listen         string `yaml:"listen"`
		ConnectAddress string `yaml:"connect_address"`
	}
	hosts struct {
		Hosts []string `yaml:"hosts"`
	}
	kube struct {
		Namespace string            `yaml:"namespace"`
		Labels    map[string]string `yaml:"labels"`
		Context   string            `yaml:"context"`
		// ConfigMaps, not Endpoints: an Endpoints object would want
		// the Pods' addresses, which Pods no kubelet runs do not have.
		UseEndpoints bool `yaml:"use_endpoints"`
	}
	bootstrap struct {
		DCS      dcs    `yaml:"dcs"`
		InitDB   []any  `yaml:"initdb"`
		PostInit string `yaml:"post_init"`
	}
	dcs struct {
		TTL                  int           `yaml:"ttl"`
		LoopWait             int           `yaml:"loop_wait"`
		RetryTimeout         int           `yaml:"retry_timeout"`
		MaximumLagOnFailover int           `yaml:"maximum_lag_on_failover"`
		SynchronousMode      bool          `yaml:"synchronous_mode"`
		Postgres             dcsPostgresql `yaml:"postgresql"`
	}
	dcsPostgresql struct {
		UsePgRewind bool              `yaml:"use_pg_rewind"`
		UseSlots    bool              `yaml:"use_slots"`
		Parameters  map[string]string `yaml:"parameters"`
	}
	postgresql struct {
		Listen         string            `yaml:"listen"`
		ConnectAddress string            `yaml:"connect_address"`
		DataDir        string            `yaml:"data_dir"`
		BinDir         string            `yaml:"bin_dir"`
		Pgpass         string            `yaml:"pgpass"`
		UseUnixSocket  bool              `yaml:"use_unix_socket"`
		Authentication map[string]role   `yaml:"authentication"`
		Parameters     map[string]string `yaml:"parameters"`
		PgHBA          []string          `yaml:"pg_hba"`
		BaseBackup     []any             `yaml:"basebackup"`
	}
	role struct {
		Username string `yaml:"username"`
		Password string `yaml:"password"`
	}
)

func config(s Settings) patroniConfig {
	params := map[string]string{
		// Small, as five of them share a machine with everything else.
		"shared_buffers":  "16MB",
		"max_connections": "50",
		// pg_rewind needs hint bits logged (or checksums, which initdb
		// turns on too): an old primary rejoins as a replica by rewinding
		// what it wrote past the promotion, not by a new base backup.
		"wal_log_hints": "on",
		// The socket Patroni connects through, created by the agent (a
		// container has no systemd-tmpfiles to make it).
		"unix_socket_directories": "/var/run/postgresql",
	}
	for name, value := range s.Parameters {
		params[name] = value
	}
	c := patroniConfig{
		Scope:     s.Scope,
		Namespace: s.Namespace,
		Name:      s.Node,
		RestAPI: restAPI{
			Listen:         fmt.Sprintf("0.0.0.0:%d", RestPort),
			ConnectAddress: fmt.Sprintf("%s:%d", s.Node, RestPort),
		},
		Bootstrap: bootstrap{
			DCS: dcs{
				TTL: s.TTL, LoopWait: s.LoopWait, RetryTimeout: s.RetryTimeout,
				// Patroni's default (1 MB): a replica further behind is not
				// promoted; what it lacks of the old primary's
				// acknowledged writes is lost, as asynchronous
				// replication allows.
				MaximumLagOnFailover: 1 << 20,
				SynchronousMode:      false,
				Postgres:             dcsPostgresql{UsePgRewind: true, UseSlots: true},
			},
			InitDB:   []any{map[string]string{"encoding": "UTF8"}, "data-checksums"},
			PostInit: s.PostInit,
		},
		Postgres: postgresql{
			Listen:         fmt.Sprintf("0.0.0.0:%d", PGPort),
			ConnectAddress: fmt.Sprintf("%s:%d", s.Node, PGPort),
			DataDir:        s.DataDir,
			BinDir:         s.BinDir,
			Pgpass:         "/tmp/pgpass",
			UseUnixSocket:  true,
			Authentication: map[string]role{
				"superuser":   {Username: Superuser, Password: s.Passwords.Superuser},
				"replication": {Username: Replicator, Password: s.Passwords.Replicator},
				// pg_rewind connects to the new primary as the superuser.
				"rewind": {Username: Superuser, Password: s.Passwords.Superuser},
			},
			Parameters: params,
			PgHBA:      pgHBA(s.Network),
			// A replica's base backup asks the primary for an immediate
			// checkpoint, not a spread one: 5 s less for every node to
			// start (measured on a loaded machine).
			BaseBackup: []any{map[string]string{"checkpoint": "fast"}},
		},
		// No softdog in a container: Patroni runs without a watchdog (the
		// cost is in the README).
		Watchdog: map[string]any{"mode": "off"},
	}
	store := &hosts{Hosts: s.Store.Hosts}
	switch s.Store.Kind {
	case Etcd3:
		c.Etcd3 = store
	case ZooKeeper:
		c.ZooKeeper = store
	case Kubernetes:
		// The server is the kubeconfig's (Kubeconfig), not a host list.
		labels := kubeLabels(s.Scope)
		delete(labels, kubeScopeLabel)
		c.Namespace = KubeNamespace
		c.Kube = &kube{Namespace: KubeNamespace, Labels: labels, Context: KubeContext}
	}
	return c
}

// Kubeconfig is the kubeconfig Patroni reaches the Kubernetes API with:
// server (https://host:port), the certificate it must present (caFile,
// its own CA) and a bearer token, under the context KubeContext.
func Kubeconfig(server, caFile, token string) ([]byte, error) {
	named := func(name, key string, v any) map[string]any { return map[string]any{"name": name, key: v} }
	return yaml.Marshal(map[string]any{
		"apiVersion":      "v1",
		"kind":            "Config",
		"current-context": KubeContext,
		"clusters":        []any{named(KubeContext, "cluster", map[string]string{"server": server, "certificate-authority": caFile})},
		"users":           []any{named(KubeContext, "user", map[string]string{"token": token})},
		"contexts":        []any{named(KubeContext, "context", map[string]string{"cluster": KubeContext, "user": KubeContext, "namespace": KubeNamespace})},
	})
}

// MemberPod is the Pod object of node on the Kubernetes API: Patroni
// finds its members as Pods with its labels, and keeps each member's
// state in its Pod's annotations. No kubelet runs it (it stays Pending):
// it is the member's record, as a Pod is in a real deployment, where
// Patroni runs in it.
func MemberPod(node, scope string) ([]byte, error) {
	return json.Marshal(map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata":   map[string]any{"name": node, "namespace": KubeNamespace, "labels": kubeLabels(scope)},
		"spec": map[string]any{
			"automountServiceAccountToken": false,
			// An image is required; none is ever pulled.
			"containers": []any{map[string]string{"name": "patroni", "image": "splitbrain/patroni"}},
		},
	})
}

// pgHBA lets Patroni in through the socket as the OS user it runs as,
// the agent in over loopback, Patroni's replication connection to its
// own server over loopback (it reads a rewound server's timeline through
// it: without it, an old primary rewound after a failover never
// restarts), and the other nodes in from their network to stream
// (replication) and to rewind (the superuser); nothing else.
func pgHBA(network string) []string {
	return []string{
		"local all all peer",
		"host all all 127.0.0.1/32 scram-sha-256",
		"host all all ::1/128 scram-sha-256",
		fmt.Sprintf("host replication %s 127.0.0.1/32 scram-sha-256", Replicator),
		fmt.Sprintf("host replication %s ::1/128 scram-sha-256", Replicator),
		fmt.Sprintf("host replication %s %s scram-sha-256", Replicator, network),
		fmt.Sprintf("host all %s %s scram-sha-256", Superuser, network),
	}
}

// PostInitScript is what Patroni runs once it bootstrapped the cluster,
// with a connection string to the new primary as its argument: the
// agent's tables, made before any node can lead. It is idempotent, as a
// bootstrap retried after a failure runs it again.
func PostInitScript() string {
	return fmt.Sprintf(`#!/bin/sh
set -e
exec psql "$1" -v ON_ERROR_STOP=1 -c 'CREATE TABLE IF NOT EXISTS %s (key text PRIMARY KEY, value text NOT NULL)' -c 'CREATE TABLE IF NOT EXISTS %s (key text PRIMARY KEY, value text NOT NULL)'
`, RegisterTable, FencedTable)
}

// NetworkOf is the network of the first IPv4 address that is not
// loopback, as a CIDR: the run's network, which every node is on.
func NetworkOf(addrs []net.Addr) (string, error) {
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.IsLoopback() || n.IP.To4() == nil {
			continue
		}
		return (&net.IPNet{IP: n.IP.Mask(n.Mask), Mask: n.Mask}).String(), nil
	}
	return "", errors.New("no IPv4 address but loopback")
}

// Member is one member of GET /cluster's answer.
type Member struct {
	Name     string `json:"name"`
	Role     string `json:"role"`
	State    string `json:"state"`
	Timeline int64  `json:"timeline"`
}

// Cluster is GET /cluster's answer: the members Patroni knows, from the
// store as this member last read it.
type Cluster struct {
	Members []Member `json:"members"`
}

// ParseCluster reads GET /cluster's body.
func ParseCluster(body []byte) (Cluster, error) {
	var c Cluster
	if err := json.Unmarshal(body, &c); err != nil {
		return Cluster{}, fmt.Errorf("GET /cluster: %w", err)
	}
	return c, nil
}

// Leader is the member holding the leader key ("leader" in Patroni 3 and
// 4), or "" when none does.
func (c Cluster) Leader() string {
	i := slices.IndexFunc(c.Members, func(m Member) bool { return m.Role == "leader" })
	if i < 0 {
		return ""
	}
	return c.Members[i].Name
}

// Local is what the node's own PostgreSQL says of itself.
type Local struct {
	InRecovery bool  // pg_is_in_recovery(): a replica, or a primary still starting
	Timeline   int64 // the timeline it writes on; 0 in recovery
}

// LocalQuery asks PostgreSQL whether it is in recovery and, if not, the
// timeline it writes WAL on: the first eight hex digits of the current
// WAL file's name, as Patroni reads its own timeline. The checkpoint's
// timeline (pg_control_checkpoint) would lag a promotion until the next
// checkpoint.
const LocalQuery = `SELECT pg_is_in_recovery(),
	CASE WHEN pg_is_in_recovery() THEN 0
	ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int END`

// Belief is the node's belief: it leads while Patroni says it is the
// primary holding the leader key (primary: GET /primary answered 200)
// and its PostgreSQL is out of recovery, with the timeline as its token.
// Either alone is not enough: Patroni answers from its last loop, and a
// PostgreSQL out of recovery may be a demoted primary Patroni has not yet
// stopped, or one whose Patroni hangs (patroni#2779).
func Belief(primary bool, local Local, leader string) contract.Leadership {
	lead := primary && !local.InRecovery && local.Timeline > 0
	l := contract.Leadership{Leader: lead, LeaderID: leader}
	if lead {
		l.Token = local.Timeline
	}
	return l
}
