// Command redis-lease-node runs the seeds' Redis elector as a node of the system under test, on the target's service named redis.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/splitbrain/splitbrain/contract"
	redislease "github.com/splitbrain/splitbrain/targets/redis-lease"
	"github.com/splitbrain/splitbrain/targets/sdk"
)

// acquireScript is the seed's acquire: take the lock if it is free and,
// only then, raise the counter whose value is the token; 0 when the lock
// was held.
const acquireScript = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
	return redis.call('INCR', KEYS[2])
end
return 0`

func main() {
	sdk.AgentMain(func(env sdk.Env, s *sdk.Settings) (*sdk.Agent, error) {
		// A round every renew interval: an acquire, or the leader's renewal.
		renew := s.Duration("REDIS_LEASE_RENEW", 300*time.Millisecond)
		// A leader whose renewal fails by its timeout steps down within
		// renew + timeout of its last renewal: before the TTL frees the lock
		// for the others as long as that is shorter than the TTL (600 ms of
		// 1 s by default), so partitions and a dead Redis make no two leaders.
		timeout := s.Duration("REDIS_LEASE_TIMEOUT", renew)
		cfg := redislease.Config{
			ID:  env.Node,
			Key: s.String("REDIS_LEASE_KEY", "splitbrain:leader"),
			TTL: s.Duration("REDIS_LEASE_TTL", time.Second),
		}
		addr, ok := env.Services["redis"]
		if !ok {
			return nil, fmt.Errorf("no service redis in SPLITBRAIN_SERVICES (%v)", env.Services)
		}
		e, err := redislease.New(cfg)
		if err != nil {
			return nil, err
		}
		rdb := redis.NewClient(&redis.Options{
			Addr: addr,
			// One attempt per request, bounded by its context: the next round
			// is the retry, as in the seed's loop.
			MaxRetries:            -1,
			ContextTimeoutEnabled: true,
			// After a run of failed dials (Redis killed), the pool stops
			// dialing and probes in the background, once a second, each probe
			// as long as this: the default 5 s would keep every node from a
			// restarted Redis for seconds.
			DialTimeout: timeout,
		})
		n := &node{id: env.Node, elector: e, rdb: rdb, timeout: timeout}
		return &sdk.Agent{Elector: n, Loop: func() { n.loop(renew) }}, nil
	})
}

// node drives the elector: one request to Redis at a time, a round every
// renew interval.
type node struct {
	id      string
	rdb     *redis.Client
	timeout time.Duration

	mu      sync.Mutex
	elector *redislease.Elector
}

// Leadership is the elector's belief: the seed's, which no clock ends.
func (n *node) Leadership() contract.Leadership {
	n.mu.Lock()
	defer n.mu.Unlock()
	st := n.elector.Status()
	var lead string
	if st.Leader {
		lead = n.id
	}
	return sdk.Belief(st.Leader, lead, st.Token)
}

func (n *node) loop(renew time.Duration) {
	t := time.NewTicker(renew)
	defer t.Stop()
	var was redislease.Status
	for range t.C {
		for more := true; more; {
			n.mu.Lock()
			req := n.elector.Next()
			n.mu.Unlock()

			a, err := n.do(req)
			if err != nil {
				log.Printf("%s: %s: %v", n.id, req.Op, err)
			}

			n.mu.Lock()
			more = n.elector.Done(req, a, err == nil)
			st := n.elector.Status()
			n.mu.Unlock()
			switch {
			case st == was:
			case st.Leader:
				log.Printf("%s: leader, token %d", n.id, st.Token)
			case err != nil:
				log.Printf("%s: not leader: its %s failed", n.id, req.Op)
			case req.Op == redislease.Get:
				log.Printf("%s: not leader: the lock names %q", n.id, a.Holder)
			default:
				log.Printf("%s: not leader: the lock was gone before its %s", n.id, req.Op)
			}
			was = st
		}
	}
}

// do sends req to Redis.
func (n *node) do(req redislease.Request) (redislease.Answer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), n.timeout)
	defer cancel()
	var (
		a   redislease.Answer
		err error
	)
	switch req.Op {
	case redislease.Acquire:
		a.Token, err = n.rdb.Eval(ctx, acquireScript, []string{req.Key, req.Counter}, req.Value, req.TTL.Milliseconds()).Uint64()
	case redislease.Get:
		a.Holder, err = n.rdb.Get(ctx, req.Key).Result()
		if errors.Is(err, redis.Nil) {
			err = nil // no lock: nobody holds it
		}
	case redislease.Expire:
		a.Set, err = n.rdb.PExpire(ctx, req.Key, req.TTL).Result()
	}
	return a, err
}
