// Command redis-sentinel-agent is a node of the redis-sentinel target and
// its container's entrypoint: it runs redis-server beside itself and
// serves the node API from the server's ROLE and the Sentinels'
// configuration (package redissentinel holds the rule).
//
// Environment, besides the SDK's: REDIS_PRIMARY (the node whose server
// starts as the primary, default n1), REDIS_MASTER_NAME (the name the
// Sentinels monitor it by, default mymaster), REDIS_SENTINEL_POLL (how
// often the Sentinels are asked, default 200ms). Every service in
// SPLITBRAIN_SERVICES is a Sentinel.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/targets/internal/redisserver"
	redissentinel "github.com/splitbrain/splitbrain/targets/redis-sentinel"
	"github.com/splitbrain/splitbrain/targets/sdk"
)

const (
	redisPort = 6379
	// dataDir survives a kill of the container: the server's AOF, its
	// configuration and the agent's state.
	dataDir = "/data"
	// roleTimeout bounds a ROLE: the server is beside the agent, and a
	// belief that takes longer is not worth waiting for.
	roleTimeout = 500 * time.Millisecond
)

func main() { sdk.AgentMain(build) }

// build configures the node's redis-server and makes the agent that serves
// its node API from the server's ROLE and the Sentinels' answers.
func build(env sdk.Env, s *sdk.Settings) (*sdk.Agent, error) {
	primary := s.String("REDIS_PRIMARY", "n1")
	masterName := s.String("REDIS_MASTER_NAME", "mymaster")
	poll := s.Duration("REDIS_SENTINEL_POLL", 200*time.Millisecond)
	if err := s.Err(); err != nil {
		return nil, err
	}
	if len(env.Services) == 0 {
		return nil, errors.New("no Sentinels: SPLITBRAIN_SERVICES is empty")
	}

	// go-redis would log every failed dial, a round's worth each round
	// while a Sentinel is away: the agent logs what changes instead.
	logging.Disable()

	conf := filepath.Join(dataDir, "redis.conf")
	if err := writeConfig(conf, env.Node, primary); err != nil {
		return nil, err
	}
	rdb := redis.NewClient(&redis.Options{
		Addr: fmt.Sprintf("127.0.0.1:%d", redisPort),
		// One attempt: go-redis would retry a READONLY, which is the
		// answer the fenced write needs to see.
		MaxRetries:            -1,
		ContextTimeoutEnabled: true,
	})

	store := &sdk.FileStore[redissentinel.State]{Path: filepath.Join(dataDir, "agent.json")}
	st, err := store.Load()
	if err != nil {
		return nil, err
	}
	// The zero state is a first start: no node's state goes back to it,
	// since its epoch only rises.
	if st == (redissentinel.State{}) {
		st = redissentinel.Initial(env.Node, primary)
	}
	a := &agent{
		self:  redissentinel.Addr{Host: env.Node, Port: redisPort},
		rdb:   rdb,
		store: store,
		st:    st,
	}

	var sentinels []*sentinel
	for _, addr := range slices.Sorted(maps.Values(env.Services)) {
		sentinels = append(sentinels, &sentinel{addr: addr, c: redis.NewSentinelClient(&redis.Options{
			Addr:                  addr,
			MaxRetries:            -1,
			ContextTimeoutEnabled: true,
			// A Sentinel that is cut off or frozen must not hold up the
			// others' answers for longer than a round.
			DialTimeout: poll,
		})})
	}
	return &sdk.Agent{
		Server:  []string{"redis-server", conf},
		Elector: a,
		Ready: func() {
			redisserver.Await(rdb)
			log.Printf("%s: redis-server is up; state %+v", env.Node, st)
		},
		Loop:   func() { a.loop(sentinels, masterName, poll) },
		Polled: true,
	}, nil
}

// writeConfig writes the server's configuration on the node's first start
// only. Sentinel rewrites the file (CONFIG REWRITE, after every REPLICAOF
// it sends), so a restarted server comes back in the role Sentinel last
// gave it, as a deployed one does, not in its first one.
func writeConfig(path, self, primary string) error {
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
		// The Sentinels learn replicas from their primary's INFO: by host
		// name, since a restarted container may get another address.
		"replica-announce-ip " + self,
	}
	if self != primary {
		lines = append(lines, fmt.Sprintf("replicaof %s %d", primary, redisPort))
	}
	// Written aside and renamed: a kill midway leaves no half a file,
	// which would be kept for good.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// agent observes its server and the Sentinels and keeps the node's state.
type agent struct {
	self  redissentinel.Addr
	rdb   *redis.Client
	store *sdk.FileStore[redissentinel.State]

	// mu makes observations one at a time, in the order of their ROLEs.
	mu      sync.Mutex
	st      redissentinel.State
	answers []redissentinel.Answer // the Sentinels' answers of the last round
	said    string                 // the last belief logged
}

// Leadership is the belief at the moment the node API asks, from a ROLE
// asked then: a demoted server is not believed a leader a poll later.
func (a *agent) Leadership() contract.Leadership {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.observe()
}

// WriteLocal is the write a client of Redis makes: SET on this node's
// server, which a replica refuses.
func (a *agent) WriteLocal(ctx context.Context, key, value string) error {
	err := a.rdb.Set(ctx, key, value, 0).Err()
	if redis.IsReadOnlyError(err) {
		return sdk.ErrNotLeader
	}
	return err
}

// observe asks the server's ROLE, learns from it and the Sentinels' last
// answers, and returns the belief. a.mu is held.
func (a *agent) observe() contract.Leadership {
	ctx, cancel := context.WithTimeout(context.Background(), roleTimeout)
	defer cancel()
	role, roleErr := a.role(ctx)
	if next := redissentinel.Learn(a.st, a.self, role, a.answers); next != a.st {
		// Saved before it is believed: a node restarted after leading
		// with an epoch must not lead with an older one.
		if err := a.store.Save(next); err != nil {
			log.Printf("%s: cannot keep state %+v, staying at %+v: %v", a.self.Host, next, a.st, err)
		} else {
			a.st = next
		}
	}
	l := redissentinel.Belief(a.st, a.self, role)
	a.tell(l, role, roleErr)
	return l
}

func (a *agent) role(ctx context.Context) (redissentinel.Role, error) {
	reply, err := a.rdb.Do(ctx, "ROLE").Slice()
	if err != nil {
		return redissentinel.Role{}, err
	}
	return redissentinel.ParseRole(reply)
}

// tell logs the belief when it changes, so the node's log tells its story.
func (a *agent) tell(l contract.Leadership, role redissentinel.Role, roleErr error) {
	var said string
	switch {
	case roleErr != nil:
		said = fmt.Sprintf("ROLE: %v", roleErr)
	case l.Leader:
		said = fmt.Sprintf("leader, token %d", l.Token)
	case role.Primary:
		// Redis takes writes here, but the node has no token of its own
		// to write to the resource with (redissentinel.Learn).
		said = "primary, not leading: no Sentinel has named it primary yet"
		if a.st.Past {
			said = fmt.Sprintf("primary again, not leading: no Sentinel has named it primary in an epoch above %d yet", a.st.Epoch)
		}
	default:
		said = "replica of " + role.Master
	}
	if said != a.said {
		log.Printf("%s: %s", a.self.Host, said)
		a.said = said
	}
}

// sentinel is one Sentinel the agent asks.
type sentinel struct {
	addr   string
	c      *redis.SentinelClient
	silent bool // its last round brought no answer (logged once)
}

// loop asks every Sentinel for its configuration, a round each interval,
// and learns from the answers.
func (a *agent) loop(sentinels []*sentinel, masterName string, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for range t.C {
		answers := ask(sentinels, masterName, every)
		a.mu.Lock()
		a.answers = answers
		a.observe()
		a.mu.Unlock()
	}
}

// ask asks every Sentinel for SENTINEL MASTER at once, each for at most
// timeout, and returns the answers that came.
func ask(sentinels []*sentinel, masterName string, timeout time.Duration) []redissentinel.Answer {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	answers := make([]redissentinel.Answer, len(sentinels))
	errs := make([]error, len(sentinels))
	var wg sync.WaitGroup
	for i, s := range sentinels {
		wg.Go(func() {
			fields, err := s.c.Master(ctx, masterName).Result()
			if err == nil {
				answers[i], err = redissentinel.ParseMaster(fields)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	var got []redissentinel.Answer
	for i, s := range sentinels {
		switch {
		case errs[i] == nil:
			got = append(got, answers[i])
			if s.silent {
				log.Printf("%s answers again", s.addr)
			}
		case !s.silent:
			log.Printf("%s: no answer: %v", s.addr, errs[i])
		}
		s.silent = errs[i] != nil
	}
	return got
}
