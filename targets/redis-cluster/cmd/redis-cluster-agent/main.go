// Command redis-cluster-agent is a node of the redis-cluster target and
// its container's entrypoint: it runs redis-server in cluster mode beside
// itself, forms the cluster on the primary's first start, and serves the
// node API from its server's ROLE and CLUSTER NODES (package rediscluster
// holds the rule), with the server's own keys as the node's own data.
//
// Environment, besides the SDK's: REDIS_PRIMARY (the node whose server is
// the first primary of the shard under test and forms the cluster,
// default n1), REDIS_SHARDS (the other shards, service members by name:
// "shard2+shard1,shard4+shard3", each primary then its replicas),
// REDIS_CLUSTER_NODE_TIMEOUT_MS (cluster-node-timeout, default 2000),
// REDIS_POLL (how often the agent reads its server's role for its log,
// default 200ms).
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/targets/internal/redisserver"
	rediscluster "github.com/splitbrain/splitbrain/targets/redis-cluster"
	"github.com/splitbrain/splitbrain/targets/sdk"
)

const (
	redisPort = 6379
	// dataDir survives a kill of the container: the server's AOF, its
	// configuration and nodes.conf, the cluster as it last knew it.
	dataDir = "/data"
	// askTimeout bounds a question to the agent's own server: it is
	// beside the agent, and a belief that takes longer is not worth
	// waiting for.
	askTimeout = 500 * time.Millisecond
	// dataTimeout bounds each command of a read or write of the node's
	// own data, the redirected one too: the harness gives up after 1 s.
	dataTimeout = time.Second
	// fencedPrefix sets the fenced write's own key apart from the own
	// data's, in the same slot: a fenced write must not overwrite the
	// register the harness checks.
	fencedPrefix = rediscluster.HashTag + "fenced:"
)

func main() { sdk.AgentMain(build) }

// build configures the node's redis-server and makes the agent that serves
// its node API.
func build(env sdk.Env, s *sdk.Settings) (*sdk.Agent, error) {
	primary := s.String("REDIS_PRIMARY", "n1")
	shardSpec := s.String("REDIS_SHARDS", "")
	timeoutMS := s.Int("REDIS_CLUSTER_NODE_TIMEOUT_MS", 2000)
	poll := s.Duration("REDIS_POLL", 200*time.Millisecond)
	// Valkey's server speaks Redis's protocol under a name of its own.
	server := s.String("REDIS_SERVER", "redis-server")
	if err := s.Err(); err != nil {
		return nil, err
	}
	shards, err := rediscluster.ParseShards(shardSpec)
	if err != nil {
		return nil, err
	}
	for _, sh := range shards {
		for _, m := range append([]string{sh.Primary}, sh.Replicas...) {
			if env.Services[m] == "" {
				return nil, fmt.Errorf("REDIS_SHARDS names %s, which SPLITBRAIN_SERVICES does not", m)
			}
		}
	}
	var replicas []string
	for _, n := range append([]string{env.Node}, env.PeerIDs()...) {
		if n != primary {
			replicas = append(replicas, n)
		}
	}
	slot := rediscluster.Slot(rediscluster.HashTag)
	plan := rediscluster.NewPlan(rediscluster.Shard{Primary: primary, Replicas: replicas}, shards, slot)

	// go-redis would log every failed dial of a redirection while a peer
	// is cut off: the agent logs what changes instead.
	logging.Disable()

	// A server that starts with nodes.conf is back from a kill: the
	// cluster knows it already, and it must rejoin as it is.
	_, err = os.Stat(filepath.Join(dataDir, "nodes.conf"))
	restarted := err == nil
	conf := filepath.Join(dataDir, "redis.conf")
	if err := writeConfig(conf, env.Node, timeoutMS); err != nil {
		return nil, err
	}
	a := &agent{
		self:  env.Node,
		slot:  slot,
		local: client(fmt.Sprintf("127.0.0.1:%d", redisPort)),
		peers: map[string]*redis.Client{},
	}
	return &sdk.Agent{
		Server:  []string{server, conf},
		Elector: a,
		Ready: func() {
			redisserver.Await(a.local)
			switch {
			case restarted:
				log.Printf("%s: redis-server is up, restarted with the cluster it knew", env.Node)
				return
			case env.Node == primary:
				form(plan)
			}
			a.awaitFormed(env.Node == primary, len(replicas))
		},
		Loop:   func() { a.loop(poll) },
		Polled: true,
	}, nil
}

// writeConfig writes the server's configuration on the node's first
// start. The cluster's state is not in it but in nodes.conf, which Redis
// writes itself.
func writeConfig(path, self string, timeoutMS int) error {
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		return err
	}
	lines := []string{
		fmt.Sprintf("port %d", redisPort),
		// The run's network reaches the server, and no password is set:
		// protected mode would refuse everyone but loopback.
		"bind 0.0.0.0",
		"protected-mode no",
		"dir " + dataDir,
		// Every write in the append-only file, fsynced every second
		// (Redis's default): persistence as deployed.
		"appendonly yes",
		"cluster-enabled yes",
		"cluster-config-file " + filepath.Join(dataDir, "nodes.conf"),
		// Redis's default is 15 s; the run's faults last seconds.
		fmt.Sprintf("cluster-node-timeout %d", timeoutMS),
		// MOVED names the node by its host name, which outlives a
		// restart, and CLUSTER NODES gives every server's: the belief's
		// leader_id.
		"cluster-announce-hostname " + self,
		"cluster-preferred-endpoint-type hostname",
	}
	// Written aside and renamed: a kill midway leaves no half a file,
	// which would be kept for good.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// client is a connection pool to the server at addr that tries each
// command once: go-redis would retry a refusal, which is the answer the
// node must see, and would follow no MOVED (a plain client does not).
func client(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:                  addr,
		MaxRetries:            -1,
		ContextTimeoutEnabled: true,
		// A peer cut off must cost a redirection less than the harness's
		// patience.
		DialTimeout: 250 * time.Millisecond,
	})
}

// agent serves the node API from its server.
type agent struct {
	self  string
	slot  int // the slot of every key the agent writes
	local *redis.Client

	mu    sync.Mutex
	peers map[string]*redis.Client // by host:port, for MOVED
	said  string                   // the last belief logged
}

// Leadership is the belief at the moment the node API asks, from ROLE and
// CLUSTER NODES asked then: a demoted server is not believed a leader a
// poll later.
func (a *agent) Leadership() contract.Leadership {
	ctx, cancel := context.WithTimeout(context.Background(), askTimeout)
	defer cancel()
	role, nodes, err := a.observe(ctx)
	l := sdk.Belief(false, "", 0)
	if err == nil {
		l = rediscluster.Belief(role, nodes, a.slot)
	}
	a.tell(l, role, err)
	return l
}

// observe reads the server's ROLE and CLUSTER NODES in one transaction,
// so that the two describe the same moment.
func (a *agent) observe(ctx context.Context) (rediscluster.Role, []rediscluster.Node, error) {
	var role *redis.Cmd
	var nodes *redis.StringCmd
	if _, err := a.local.TxPipelined(ctx, func(p redis.Pipeliner) error {
		role = p.Do(ctx, "ROLE")
		nodes = p.ClusterNodes(ctx)
		return nil
	}); err != nil {
		return rediscluster.Role{}, nil, err
	}
	reply, err := role.Slice()
	if err != nil {
		return rediscluster.Role{}, nil, err
	}
	r, err := rediscluster.ParseRole(reply)
	if err != nil {
		return r, nil, err
	}
	ns, err := rediscluster.ParseNodes(nodes.Val())
	return r, ns, err
}

// tell logs the belief when it changes, so the node's log tells its story.
func (a *agent) tell(l contract.Leadership, role rediscluster.Role, err error) {
	var said string
	switch {
	case err != nil:
		said = fmt.Sprintf("cannot read its server: %v", err)
	case l.Leader:
		said = fmt.Sprintf("leader, config epoch %d", l.Token)
	case role.Primary:
		said = "primary of no slot of ours, following " + l.LeaderID
	default:
		said = fmt.Sprintf("replica (link %s), following %s", role.Link, l.LeaderID)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if said != a.said {
		log.Printf("%s: %s", a.self, said)
		a.said = said
	}
}

// loop reads the belief every interval, so that the log tells a change
// though nobody asks.
func (a *agent) loop(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for range t.C {
		a.Leadership()
	}
}

// WriteLocal is the fenced write's first half: SET on this node's own
// server, which refuses it unless it holds the slot (MOVED), is in a
// cluster that is up (CLUSTERDOWN), and so on (rediscluster.Refusal). It
// follows no redirection: the leader writes to its own server.
func (a *agent) WriteLocal(ctx context.Context, key, value string) error {
	return refused(a.local.Set(ctx, fencedPrefix+key, value, 0).Err())
}

// WriteData is a write of the node's own data as a cluster client makes
// it through this node: SET on its own server, and on to the server a
// MOVED names.
func (a *agent) WriteData(ctx context.Context, key, value string) error {
	_, err := a.redirected(ctx, func(ctx context.Context, c *redis.Client) (string, error) {
		return "", c.Set(ctx, rediscluster.HashTag+key, value, 0).Err()
	})
	return err
}

// ReadData is a read of the node's own data, as WriteData writes it: ""
// for a key never written.
func (a *agent) ReadData(ctx context.Context, key string) (string, error) {
	return a.redirected(ctx, func(ctx context.Context, c *redis.Client) (string, error) {
		v, err := c.Get(ctx, rediscluster.HashTag+key).Result()
		if errors.Is(err, redis.Nil) {
			return "", nil
		}
		return v, err
	})
}

// redirected runs do on the node's own server and, when it answers MOVED,
// once more on the server it names, as a cluster client does when its
// map of the slots is stale. A second MOVED, or any other refusal, is
// ErrNotLeader: Redis did nothing. Each attempt has dataTimeout.
func (a *agent) redirected(ctx context.Context, do func(context.Context, *redis.Client) (string, error)) (string, error) {
	attempt := func(c *redis.Client) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, dataTimeout)
		defer cancel()
		return do(ctx, c)
	}
	v, err := attempt(a.local)
	var rerr redis.Error
	if errors.As(err, &rerr) {
		if _, addr, ok := rediscluster.Moved(rerr.Error()); ok {
			v, err = attempt(a.peer(addr))
		}
	}
	return v, refused(err)
}

// peer is the connection pool to the server at addr, made at first use.
func (a *agent) peer(addr string) *redis.Client {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.peers[addr]
	if c == nil {
		c = client(addr)
		a.peers[addr] = c
	}
	return c
}

// refused turns a refusal of Redis's (rediscluster.Refusal) into
// sdk.ErrNotLeader, the store refusing for want of a leader here; any
// other error (a timeout, a broken connection) leaves what Redis did
// unknown and is returned as it is.
func refused(err error) error {
	var rerr redis.Error
	if errors.As(err, &rerr) && rediscluster.Refusal(rerr.Error()) {
		return fmt.Errorf("%w: %v", sdk.ErrNotLeader, err)
	}
	return err
}
