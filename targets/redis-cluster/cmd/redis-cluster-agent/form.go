package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	rediscluster "github.com/splitbrain/splitbrain/targets/redis-cluster"
)

// formEvery is how often a step of forming the cluster that must wait
// (for a server to answer, for gossip to spread) looks again.
const formEvery = 200 * time.Millisecond

// server is one Redis server of the plan, as the forming agent reaches it.
type server struct {
	name string
	c    *redis.Client
}

// form makes the plan's cluster, as redis-cli --cluster create would: once
// every server answers PING, it gives each a configuration epoch of its
// own (only a server that knows no other takes one), has the primary meet
// every other server, gives each primary its slots and makes each replica
// replicate its primary, then waits until the primary sees them all in
// place. Each step does only what is not done yet, so that a start cut
// short is taken up again; a server that nodes.conf brought back is never
// formed again (build).
func form(plan rediscluster.Plan) {
	var servers []server
	for _, name := range plan.Servers() {
		servers = append(servers, server{name, client(net.JoinHostPort(name, strconv.Itoa(redisPort)))})
	}
	first := servers[0]
	steps := []struct {
		what string
		do   func(ctx context.Context) (bool, error)
	}{
		{"every server answers", func(ctx context.Context) (bool, error) { return everyAnswers(ctx, servers) }},
		{"every server has its epoch", func(ctx context.Context) (bool, error) { return true, setEpochs(ctx, plan, servers) }},
		{first.name + " has met every server", func(ctx context.Context) (bool, error) { return meet(ctx, first, servers[1:]) }},
		{"every primary holds its slots", func(ctx context.Context) (bool, error) { return true, addSlots(ctx, plan, servers) }},
		{"every replica replicates its primary", func(ctx context.Context) (bool, error) { return replicate(ctx, plan, servers) }},
		{first.name + " sees the cluster formed", func(ctx context.Context) (bool, error) { return formed(ctx, plan, first) }},
	}
	for _, s := range steps {
		var said string
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			done, err := s.do(ctx)
			cancel()
			if done && err == nil {
				log.Printf("forming the cluster: %s", s.what)
				break
			}
			// Logged once per change: the harness shows the end of a
			// log that never became healthy.
			if now := fmt.Sprintf("forming the cluster: waiting until %s: %v", s.what, err); err != nil && now != said {
				log.Print(now)
				said = now
			}
			time.Sleep(formEvery)
		}
	}
	for _, s := range servers {
		_ = s.c.Close()
	}
}

// everyAnswers says whether every server answers PING.
func everyAnswers(ctx context.Context, servers []server) (bool, error) {
	for _, s := range servers {
		if err := s.c.Ping(ctx).Err(); err != nil {
			return false, fmt.Errorf("%s: %v", s.name, err)
		}
	}
	return true, nil
}

// view is a server's CLUSTER NODES.
func view(ctx context.Context, s server) ([]rediscluster.Node, error) {
	reply, err := s.c.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("%s: %v", s.name, err)
	}
	return rediscluster.ParseNodes(reply)
}

// myself is a server's own line of its CLUSTER NODES.
func myself(ctx context.Context, s server) (rediscluster.Node, []rediscluster.Node, error) {
	nodes, err := view(ctx, s)
	if err != nil {
		return rediscluster.Node{}, nil, err
	}
	me, ok := rediscluster.Myself(nodes)
	if !ok {
		return me, nil, fmt.Errorf("%s: no line of its own in CLUSTER NODES", s.name)
	}
	return me, nodes, nil
}

// setEpochs gives every server that knows no other and has no epoch yet
// the plan's: CLUSTER SET-CONFIG-EPOCH, which Redis takes only then.
func setEpochs(ctx context.Context, plan rediscluster.Plan, servers []server) error {
	for _, s := range servers {
		me, nodes, err := myself(ctx, s)
		if err != nil {
			return err
		}
		if len(nodes) > 1 || me.Epoch != 0 {
			continue
		}
		if err := s.c.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", plan.Epoch(s.name)).Err(); err != nil {
			return fmt.Errorf("%s: CLUSTER SET-CONFIG-EPOCH: %v", s.name, err)
		}
	}
	return nil
}

// meet has first meet every other server it does not know yet, by
// address: Redis 7.0's CLUSTER MEET takes no host name. Done once first
// knows them all; gossip then tells everyone of everyone.
func meet(ctx context.Context, first server, others []server) (bool, error) {
	nodes, err := view(ctx, first)
	if err != nil {
		return false, err
	}
	known := 0
	for _, s := range others {
		ips, err := net.DefaultResolver.LookupHost(ctx, s.name)
		if err != nil || len(ips) == 0 {
			return false, fmt.Errorf("%s: no address: %v", s.name, err)
		}
		addr := net.JoinHostPort(ips[0], strconv.Itoa(redisPort))
		if slices.ContainsFunc(nodes, func(n rediscluster.Node) bool { return n.Addr == addr }) {
			known++
			continue
		}
		if err := first.c.ClusterMeet(ctx, ips[0], strconv.Itoa(redisPort)).Err(); err != nil {
			return false, fmt.Errorf("%s: CLUSTER MEET %s: %v", first.name, s.name, err)
		}
	}
	return known == len(others), nil
}

// addSlots gives each primary of the plan its range, unless it holds
// slots already.
func addSlots(ctx context.Context, plan rediscluster.Plan, servers []server) error {
	for i, sh := range plan.Shards {
		s := servers[slices.IndexFunc(servers, func(s server) bool { return s.name == sh.Primary })]
		me, _, err := myself(ctx, s)
		if err != nil {
			return err
		}
		if len(me.Slots) > 0 {
			continue
		}
		r := plan.Ranges[i]
		if err := s.c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", r.From, r.To).Err(); err != nil {
			return fmt.Errorf("%s: CLUSTER ADDSLOTSRANGE %s: %v", s.name, r, err)
		}
	}
	return nil
}

// replicate makes every replica of the plan CLUSTER REPLICATE its primary
// once it has learnt of it by gossip. Done once each replicates it.
func replicate(ctx context.Context, plan rediscluster.Plan, servers []server) (bool, error) {
	ids := map[string]string{}
	for _, sh := range plan.Shards {
		s := servers[slices.IndexFunc(servers, func(s server) bool { return s.name == sh.Primary })]
		id, err := s.c.ClusterMyID(ctx).Result()
		if err != nil {
			return false, fmt.Errorf("%s: CLUSTER MYID: %v", s.name, err)
		}
		ids[sh.Primary] = id
	}
	var waiting []string
	for _, s := range servers {
		primary := plan.PrimaryOf(s.name)
		if primary == "" {
			continue
		}
		me, nodes, err := myself(ctx, s)
		switch {
		case err != nil:
			return false, err
		case me.MasterID == ids[primary]:
			continue
		case !slices.ContainsFunc(nodes, func(n rediscluster.Node) bool { return n.ID == ids[primary] }):
			waiting = append(waiting, s.name+" to learn of "+primary)
			continue
		}
		if err := s.c.ClusterReplicate(ctx, ids[primary]).Err(); err != nil {
			return false, fmt.Errorf("%s: CLUSTER REPLICATE %s: %v", s.name, primary, err)
		}
		waiting = append(waiting, s.name+" to replicate "+primary)
	}
	if len(waiting) > 0 {
		return false, fmt.Errorf("waiting for %s", strings.Join(waiting, ", "))
	}
	return true, nil
}

// formed says whether first sees the cluster up (cluster_state:ok) with
// every server of the plan connected and every replica replicating its
// primary.
func formed(ctx context.Context, plan rediscluster.Plan, first server) (bool, error) {
	if err := clusterOK(ctx, first); err != nil {
		return false, err
	}
	nodes, err := view(ctx, first)
	if err != nil {
		return false, err
	}
	byHost := map[string]rediscluster.Node{}
	for _, n := range nodes {
		byHost[n.Host] = n
	}
	for _, name := range plan.Servers() {
		n, ok := byHost[name]
		switch {
		case !ok:
			return false, fmt.Errorf("%s does not know %s by name yet", first.name, name)
		case !n.Connected && !n.Is("myself"):
			return false, fmt.Errorf("%s is not connected to %s", first.name, name)
		case plan.PrimaryOf(name) != "" && n.MasterID != byHost[plan.PrimaryOf(name)].ID:
			return false, fmt.Errorf("%s does not see %s replicate %s yet", first.name, name, plan.PrimaryOf(name))
		}
	}
	return true, nil
}

// clusterOK returns nil once s says cluster_state:ok.
func clusterOK(ctx context.Context, s server) error {
	info, err := s.c.ClusterInfo(ctx).Result()
	if err != nil {
		return fmt.Errorf("%s: %v", s.name, err)
	}
	if !strings.Contains(info, "cluster_state:ok") {
		return fmt.Errorf("%s: cluster state not ok yet", s.name)
	}
	return nil
}

// awaitFormed returns once this node's own server sees the cluster up and
// itself in place: the primary with its replicas attached, a replica with
// its link to the primary up. Only then is the node healthy.
func (a *agent) awaitFormed(primary bool, replicas int) {
	self := server{a.self, a.local}
	var said string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := a.inPlace(ctx, self, primary, replicas)
		cancel()
		if err == nil {
			log.Printf("%s: the cluster is formed, and its server in place", a.self)
			return
		}
		if now := err.Error(); now != said {
			log.Printf("%s: waiting: %s", a.self, now)
			said = now
		}
		time.Sleep(formEvery)
	}
}

// inPlace is nil once self's server sees the cluster up and holds its
// place in it.
func (a *agent) inPlace(ctx context.Context, self server, primary bool, replicas int) error {
	if err := clusterOK(ctx, self); err != nil {
		return err
	}
	reply, err := self.c.Do(ctx, "ROLE").Slice()
	if err != nil {
		return err
	}
	role, err := rediscluster.ParseRole(reply)
	switch {
	case err != nil:
		return err
	case primary && !role.Primary:
		return fmt.Errorf("%s is a replica, not the primary", self.name)
	case primary && attached(reply) < replicas:
		return fmt.Errorf("%d of %d replicas attached", attached(reply), replicas)
	case !primary && role.Link != "connected":
		return fmt.Errorf("the link to the primary is %q", role.Link)
	}
	return nil
}

// attached counts the replicas a primary's ROLE lists.
func attached(role []any) int {
	if len(role) < 3 {
		return 0
	}
	replicas, _ := role[2].([]any)
	return len(replicas)
}
