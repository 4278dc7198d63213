// Command patroni-agent is a node of the patroni target and its
// container's entry point: it writes Patroni's configuration for its node,
// runs Patroni (which runs PostgreSQL) as its child, and serves the node
// API from Patroni's REST API and PostgreSQL's own state (package patroni
// holds the rule).
//
// Environment, besides the SDK's: PG_TTL, PG_LOOP_WAIT, PG_RETRY_TIMEOUT
// (Patroni's timings in whole seconds, default 10, 2 and 4), PG_POLL (how
// often the agent asks Patroni and PostgreSQL, default 200ms),
// PG_PARAMETERS (PostgreSQL settings added to the target's own,
// name=value,name=value), PG_STORE (where Patroni keeps its leader key:
// etcd3, the default, zookeeper or kubernetes), PG_STORE_HOSTS (the
// store's members, host:port comma-separated, default every service in
// SPLITBRAIN_SERVICES; for kubernetes the API server, whose certificate
// and token come from SPLITBRAIN_SECRET as k8s-lease's server makes them), PG_SCOPE (the cluster's name in the store,
// default splitbrain). Not PATRONI_*: Patroni reads those itself.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/targets/patroni"
	"github.com/splitbrain/splitbrain/targets/sdk"
)

const (
	// dataDir survives a kill of the container: PostgreSQL's data
	// directory and Patroni's configuration.
	dataDir = "/data"
	// socketDir is where PostgreSQL puts its socket, which Patroni
	// connects through.
	socketDir = "/var/run/postgresql"
	// roundTimeout bounds one round of questions to Patroni and
	// PostgreSQL, both beside the agent: a Patroni that has not answered
	// by then (frozen, busy) is taken for one that does not say the node
	// leads. A second: on a loaded machine (a load of 30 on two cores)
	// Patroni's Python REST API took more than 500 ms now and then.
	roundTimeout = time.Second
	// readySay spaces the lines that tell, while the node is not ready,
	// what it still waits for: the end of the log says it when it never
	// becomes ready.
	readySay = 5 * time.Second
	// sqlStateReadOnly is PostgreSQL's read_only_sql_transaction: a
	// server in recovery refusing a write.
	sqlStateReadOnly = "25006"
)

func main() { sdk.AgentMain(build) }

// build configures the node's Patroni and makes the agent that serves its
// node API.
func build(env sdk.Env, s *sdk.Settings) (*sdk.Agent, error) {
	settings := patroni.Settings{
		Node:         env.Node,
		Scope:        s.String("PG_SCOPE", "splitbrain"),
		Namespace:    "/service/",
		DataDir:      filepath.Join(dataDir, "pg"),
		PostInit:     filepath.Join(dataDir, "post_init.sh"),
		TTL:          s.Int("PG_TTL", 10),
		LoopWait:     s.Int("PG_LOOP_WAIT", 2),
		RetryTimeout: s.Int("PG_RETRY_TIMEOUT", 4),
		Passwords:    patroni.PasswordsFrom(os.Getenv(contract.EnvSecret)),
	}
	poll := s.Duration("PG_POLL", 200*time.Millisecond)
	params := s.String("PG_PARAMETERS", "")
	settings.Store.Kind = s.String("PG_STORE", patroni.Etcd3)
	hosts := s.String("PG_STORE_HOSTS", strings.Join(slices.Sorted(maps.Values(env.Services)), ","))
	if err := s.Err(); err != nil {
		return nil, err
	}
	var err error
	if settings.Parameters, err = patroni.ParseParameters(params); err != nil {
		return nil, fmt.Errorf("PG_PARAMETERS: %w", err)
	}
	if hosts != "" {
		settings.Store.Hosts = strings.Split(hosts, ",")
	}
	if settings.BinDir, err = binDir(); err != nil {
		return nil, err
	}
	if settings.Network, err = network(); err != nil {
		return nil, err
	}
	pg, err := user.Lookup(patroni.Superuser)
	if err != nil {
		return nil, err
	}
	conf, err := prepare(settings, pg)
	if err != nil {
		return nil, err
	}
	if settings.Store.Kind == patroni.Kubernetes {
		if err := joinKubernetes(settings, pg, os.Getenv(contract.EnvSecret)); err != nil {
			return nil, err
		}
	}

	pool, err := connect(settings.Passwords.Superuser)
	if err != nil {
		return nil, err
	}
	a := &agent{node: env.Node, store: settings.Store, pool: pool, http: &http.Client{}}
	return &sdk.Agent{
		// tini, a subreaper, reaps the postmaster: Patroni starts it
		// through a helper that exits at once, as pg_ctl does, and leaves
		// it to be reaped by init, which the agent, PID 1 beside an
		// os/exec child of its own, is not fit to be. setpriv runs Patroni
		// as postgres (Patroni and PostgreSQL refuse root) with postgres's
		// own environment, and execs it: its command name is patroni.
		Server: []string{"tini", "-s", "-g", "--",
			"setpriv", "--reuid=" + pg.Uid, "--regid=" + pg.Gid, "--init-groups", "--reset-env",
			"patroni", conf},
		Elector: a,
		Ready: func() {
			a.waitUntilReady()
			log.Printf("%s: Patroni's cluster has a leader and PostgreSQL answers", env.Node)
		},
		Loop:   func() { a.loop(poll) },
		Polled: true,
	}, nil
}

// binDir is the newest PostgreSQL's programs: 15 on bookworm, 17 on
// trixie, so that one agent serves both.
func binDir() (string, error) {
	dirs, err := filepath.Glob("/usr/lib/postgresql/*/bin")
	if err != nil || len(dirs) == 0 {
		return "", fmt.Errorf("no PostgreSQL under /usr/lib/postgresql (%v)", err)
	}
	slices.SortFunc(dirs, func(a, b string) int { return version(a) - version(b) })
	return dirs[len(dirs)-1], nil
}

// version is the major version in /usr/lib/postgresql/V/bin.
func version(dir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return v
}

// network is the run's network, which pg_hba lets the other nodes in from.
func network() (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	return patroni.NetworkOf(addrs)
}

// prepare writes the configuration and the post-init script, and gives
// postgres what Patroni and PostgreSQL write to; it returns the
// configuration's path. Rewritten at every start: Patroni reads its
// bootstrap section only when it bootstraps, and the rest describes the
// node, which has not changed.
func prepare(s patroni.Settings, pg *user.User) (string, error) {
	uid, _ := strconv.Atoi(pg.Uid)
	gid, _ := strconv.Atoi(pg.Gid)
	for _, dir := range []string{dataDir, socketDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			return "", err
		}
	}
	conf, err := patroni.Config(s)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dataDir, "patroni.yml")
	if err := writeFile(path, conf, 0o600, uid, gid); err != nil {
		return "", err
	}
	return path, writeFile(s.PostInit, []byte(patroni.PostInitScript()), 0o755, uid, gid)
}

// writeFile writes a file aside and renames it, owned by uid and gid: a
// kill midway leaves no half a file for the next start to read.
func writeFile(path string, b []byte, mode os.FileMode, uid, gid int) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, mode); err != nil {
		return err
	}
	if err := os.Chown(tmp, uid, gid); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// connect makes the agent's pool of connections to its own PostgreSQL,
// over loopback as the superuser. Nothing is dialled yet.
func connect(password string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(fmt.Sprintf("host=127.0.0.1 port=%d user=%s dbname=postgres sslmode=disable connect_timeout=1",
		patroni.PGPort, patroni.Superuser))
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.Password = password
	cfg.MaxConns = 8
	// The simple protocol: no statement is prepared, so a server that
	// restarted or was promoted under a pooled connection costs no
	// "prepared statement does not exist".
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	return pgxpool.NewWithConfig(context.Background(), cfg)
}

// agent asks Patroni and PostgreSQL, a round each poll, and serves the
// belief of the last round.
type agent struct {
	node  string
	store patroni.Store // named while the node is not ready
	pool  *pgxpool.Pool
	http  *http.Client

	mu     sync.Mutex
	belief contract.Leadership
	said   string // the last belief logged
}

// Leadership is the belief of the last round, at most a poll and a
// round's timeout old: asking Patroni at every one of the observer's
// polls would cost its Python REST API a request every 50 ms per node.
func (a *agent) Leadership() contract.Leadership {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.belief
}

// loop runs a round every interval.
func (a *agent) loop(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for range t.C {
		a.round()
	}
}

// round asks Patroni and PostgreSQL at once and keeps the belief.
func (a *agent) round() {
	ctx, cancel := context.WithTimeout(context.Background(), roundTimeout)
	defer cancel()
	var (
		wg                            sync.WaitGroup
		cluster                       patroni.Cluster
		primary                       bool
		local                         patroni.Local
		clusterErr, primErr, localErr error
	)
	wg.Go(func() { cluster, clusterErr = a.cluster(ctx) })
	wg.Go(func() { primary, primErr = a.primary(ctx) })
	wg.Go(func() { local, localErr = a.local(ctx) })
	wg.Wait()
	l := patroni.Belief(primary, local, cluster.Leader())
	a.mu.Lock()
	a.belief = l
	a.mu.Unlock()
	a.tell(l, local, errors.Join(primErr, localErr, clusterErr))
}

// cluster asks Patroni's GET /cluster: the members and who holds the key.
func (a *agent) cluster(ctx context.Context) (patroni.Cluster, error) {
	status, body, err := a.get(ctx, "/cluster")
	if err != nil {
		return patroni.Cluster{}, err
	}
	if status != http.StatusOK {
		return patroni.Cluster{}, fmt.Errorf("GET /cluster: status %d", status)
	}
	return patroni.ParseCluster(body)
}

// primary asks Patroni's GET /primary: 200 when Patroni runs its
// PostgreSQL as the primary and holds the leader key, 503 otherwise.
func (a *agent) primary(ctx context.Context) (bool, error) {
	status, _, err := a.get(ctx, "/primary")
	return status == http.StatusOK, err
}

func (a *agent) get(ctx context.Context, path string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", patroni.RestPort, path), nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("Patroni: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// local asks the node's PostgreSQL whether it is in recovery, and its
// timeline.
func (a *agent) local(ctx context.Context) (patroni.Local, error) {
	var l patroni.Local
	err := a.pool.QueryRow(ctx, patroni.LocalQuery).Scan(&l.InRecovery, &l.Timeline)
	if err != nil {
		return patroni.Local{}, fmt.Errorf("PostgreSQL: %w", err)
	}
	return l, nil
}

// tell logs the belief when it changes, so the node's log tells its story.
func (a *agent) tell(l contract.Leadership, local patroni.Local, err error) {
	var said string
	switch {
	case l.Leader:
		said = fmt.Sprintf("leader, timeline %d", l.Token)
	case err != nil:
		said = fmt.Sprintf("not leading: %v", err)
	case !local.InRecovery:
		// PostgreSQL takes writes here, but Patroni does not say it
		// holds the leader key: starting, demoting, or hung.
		said = fmt.Sprintf("PostgreSQL out of recovery on timeline %d, but Patroni does not say primary", local.Timeline)
	default:
		said = "replica; leader " + l.LeaderID
	}
	if said != a.said {
		log.Printf("%s: %s", a.node, said)
		a.said = said
	}
}

// waitUntilReady returns once Patroni's cluster has a leader and the
// node's PostgreSQL answers (a replica: it streams from the primary, or
// it could not answer in recovery with hot_standby). While not, it says
// what it waits for, every readySay.
func (a *agent) waitUntilReady() {
	last := time.Now()
	for {
		err := a.ready()
		if err == nil {
			return
		}
		if time.Since(last) >= readySay {
			log.Printf("%s: not ready (Patroni's store: %s at %s): %v", a.node, a.store.Kind, strings.Join(a.store.Hosts, ","), err)
			last = time.Now()
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (a *agent) ready() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := a.cluster(ctx)
	if err != nil {
		return err
	}
	if c.Leader() == "" {
		return errors.New("Patroni's cluster has no leader")
	}
	_, err = a.local(ctx)
	return err
}

// WriteLocal is the write a client of PostgreSQL makes before the fenced
// one: an upsert on the node's own server, which a replica refuses.
func (a *agent) WriteLocal(ctx context.Context, key, value string) error {
	return a.upsert(ctx, patroni.FencedTable, key, value)
}

// WriteData is the own register's write: an upsert on the node's own
// server, acknowledged once PostgreSQL committed it there (replication is
// asynchronous: the replicas may not have it yet).
func (a *agent) WriteData(ctx context.Context, key, value string) error {
	return a.upsert(ctx, patroni.RegisterTable, key, value)
}

func (a *agent) upsert(ctx context.Context, table, key, value string) error {
	_, err := a.pool.Exec(ctx, fmt.Sprintf(
		"INSERT INTO %s (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", table),
		key, value)
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == sqlStateReadOnly {
		return sdk.ErrNotLeader
	}
	return err
}

// ReadData reads the register on the node's own server, only where it is
// out of recovery: a replica would answer what it has replayed so far, a
// read that may be stale, which clients of a Patroni cluster send to the
// primary for that reason. A replica refuses (409).
func (a *agent) ReadData(ctx context.Context, key string) (string, error) {
	var (
		inRecovery bool
		value      string
	)
	err := a.pool.QueryRow(ctx, fmt.Sprintf(
		"SELECT pg_is_in_recovery(), coalesce((SELECT value FROM %s WHERE key = $1), '')", patroni.RegisterTable),
		key).Scan(&inRecovery, &value)
	switch {
	case err != nil:
		return "", err
	case inRecovery:
		return "", sdk.ErrNotLeader
	}
	return value, nil
}
