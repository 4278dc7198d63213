// Command etcd-elector runs an elector on etcd's concurrency election
// recipe (go.etcd.io/etcd/client/v3/concurrency), or on etcd's lock
// service, as a node of the system under test, against the target's etcd
// service cluster: it campaigns in a session whose lease its client keeps
// alive, leads with the leader key's create revision (the lock's
// revision) as its token, and campaigns again once it has lost the
// session or resigned. Package etcdelection holds the belief; this is the
// I/O around it.
//
// Environment, besides the SDK's: ETCD_SESSION_TTL (the session lease's
// TTL in whole seconds, default 2: etcd grants no less than 1.5 times its
// election timeout, 1 s by default), ETCD_ELECTION_PREFIX (the election's
// key prefix, or the lock's name, default /splitbrain/election),
// ETCD_ELECTOR_FLAW ("" for the correct elector, which leads only while
// its session lives; "naive" for the elector as it is often written,
// which never looks at its session), ETCD_ELECTOR_RECIPE ("election", the
// default, or "lock"). Every service in SPLITBRAIN_SERVICES is an etcd
// member's client endpoint.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"maps"
	"slices"
	"sync"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/logutil"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap/zapcore"

	"github.com/splitbrain/splitbrain/contract"
	etcdelection "github.com/splitbrain/splitbrain/targets/etcd-election"
	"github.com/splitbrain/splitbrain/targets/sdk"
)

const (
	// retryPause spaces failed attempts: etcd may be out of reach for a
	// while under faults, and a tight loop would only fill the log.
	retryPause = 250 * time.Millisecond
	// grantTimeout bounds making a session.
	grantTimeout = 2 * time.Second
	// resignTimeout bounds a resign's delete of the leader key; past it the
	// key goes with the session's lease, which is revoked next.
	resignTimeout = time.Second
	// revokeTimeout bounds revoking an abandoned session's lease; past it
	// the lease expires on its own within its TTL.
	revokeTimeout = time.Second
)

func main() { sdk.AgentMain(build) }

// build makes the node's etcd client and the elector that campaigns with
// it.
func build(env sdk.Env, s *sdk.Settings) (*sdk.Agent, error) {
	ttl := s.Int("ETCD_SESSION_TTL", 2)
	prefix := s.String("ETCD_ELECTION_PREFIX", "/splitbrain/election")
	flawName := s.String("ETCD_ELECTOR_FLAW", "")
	recipeName := s.String("ETCD_ELECTOR_RECIPE", recipeElection)
	if err := s.Err(); err != nil {
		return nil, err
	}
	if ttl < 1 {
		return nil, fmt.Errorf("ETCD_SESSION_TTL=%d: want whole seconds, at least 1", ttl)
	}
	flaw, err := etcdelection.ParseFlaw(flawName)
	if err != nil {
		return nil, fmt.Errorf("ETCD_ELECTOR_FLAW: %w", err)
	}
	el, err := etcdelection.New(flaw)
	if err != nil {
		return nil, err
	}
	endpoints := slices.Sorted(maps.Values(env.Services))
	if len(endpoints) == 0 {
		return nil, errors.New("no etcd members in SPLITBRAIN_SERVICES")
	}
	// The client logs every retry under faults at info level; its errors
	// are all that is worth keeping beside the node's own story.
	lg, err := logutil.CreateDefaultZapLogger(zapcore.ErrorLevel)
	if err != nil {
		return nil, err
	}
	cfg := clientv3.Config{Endpoints: endpoints, DialTimeout: time.Second, Logger: lg}
	if recipeName == recipeElection {
		// gRPC pings no more often than every 10 s, whatever is asked, but
		// the timeout also becomes the connection's TCP_USER_TIMEOUT: a
		// keepalive left unacknowledged for a second (a cut link) closes
		// the connection, and the client turns to another member. A
		// campaign's watch resumes on the new connection. A lock call,
		// one request the member answers when the lock is held, would
		// fail with the connection instead: the lock recipe's client
		// keeps the defaults, as a caller of the lock service has them,
		// and its call waits across a cut as it would across a pause.
		cfg.DialKeepAliveTime, cfg.DialKeepAliveTimeout = 10*time.Second, time.Second
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, err
	}
	newRound, err := newRecipe(recipeName, cli, prefix)
	if err != nil {
		return nil, fmt.Errorf("ETCD_ELECTOR_RECIPE: %w", err)
	}
	n := &node{id: env.Node, cli: cli, ttl: ttl, elector: el, newRound: newRound}
	kind := "correct"
	if n.naive() {
		kind = "naive"
	}
	log.Printf("%s: %s elector by etcd's %s recipe on etcd %v, prefix %s, session TTL %ds", n.id, kind, recipeName, endpoints, prefix, ttl)
	return &sdk.Agent{Elector: n, Loop: n.run}, nil
}

var errNotLeader = errors.New("not leading")

// node drives the elector: one session and one campaign at a time, from
// run's goroutine; the node API reads the belief from others.
type node struct {
	id  string
	cli *clientv3.Client
	ttl int
	// newRound is the recipe a round in a session campaigns by.
	newRound func(*concurrency.Session) recipe

	// failures logs a run of failures once: an outage of etcd fails
	// every attempt the same way.
	failures sdk.ChangeLog

	mu      sync.Mutex
	elector *etcdelection.Elector
	reign   *reign // while leading
}

// naive says whether the node is the naive elector, which never watches
// its session. The flaw is fixed at start: read without the lock.
func (n *node) naive() bool { return n.elector.Flaw() == etcdelection.Naive }

// reign is one stretch of leadership as run waits it out: Resign hands it
// a request, and over is closed once run no longer waits.
type reign struct {
	resign chan chan error
	over   chan struct{}
}

// Leadership is the elector's belief.
func (n *node) Leadership() contract.Leadership {
	n.mu.Lock()
	b := n.elector.Belief()
	n.mu.Unlock()
	if !b.Leader {
		return sdk.Belief(false, "", 0)
	}
	return sdk.Belief(true, n.id, uint64(b.Token))
}

// Resign is POST /resign: the leader steps down and campaigns again, at
// the back of the queue.
func (n *node) Resign() error {
	n.mu.Lock()
	r := n.reign
	n.mu.Unlock()
	if r == nil {
		return errNotLeader
	}
	reply := make(chan error, 1)
	select {
	case r.resign <- reply:
		return <-reply
	case <-r.over:
		return errNotLeader // lost meanwhile
	}
}

// run campaigns forever, a session at a time.
func (n *node) run() {
	var (
		s   *concurrency.Session
		gen uint64 // s's generation, for the elector
	)
	for {
		if s == nil {
			var (
				granted int64
				err     error
			)
			s, granted, err = n.newSession()
			if err != nil {
				n.failed("new session", err)
				time.Sleep(retryPause)
				continue
			}
			gen++
			log.Printf("%s: session %d: lease %x, TTL %ds", n.id, gen, int64(s.Lease()), granted)
		}
		if !n.round(s, gen) {
			n.abandon(s)
			s = nil
		}
	}
}

// round campaigns in session s and, once it wins, leads until it loses.
// It says whether s can serve the next round.
func (n *node) round(s *concurrency.Session, gen uint64) bool {
	rec := n.newRound(s)
	// A campaign that outlived its session could only win on a key that
	// went with the lease: the correct elector calls it off with the
	// session. The naive one campaigns as such code usually does, bound by
	// nothing.
	ctx := s.Ctx()
	if n.naive() {
		ctx = context.Background()
	}
	token, err := rec.campaign(ctx, n.id)
	if err != nil {
		if closed(s.Done()) {
			log.Printf("%s: session %d ended while it campaigned: %v", n.id, gen, err)
		} else {
			n.failed(fmt.Sprintf("campaign in session %d", gen), err)
		}
		time.Sleep(retryPause)
		return false
	}
	n.failures.Reset()

	r := &reign{resign: make(chan chan error), over: make(chan struct{})}
	defer close(r.over)
	won := etcdelection.Event{Kind: etcdelection.Won, Session: gen, Rev: token, SessionDone: closed(s.Done())}
	if !n.step(won, r).Leader {
		return false
	}
	var ended <-chan struct{} // nil, which never fires: the naive elector never looks
	if !n.naive() {
		ended = s.Done()
	}
	select {
	case <-ended:
		n.step(etcdelection.Event{Kind: etcdelection.SessionEnded, Session: gen}, nil)
		return false
	case reply := <-r.resign:
		// Belief goes before the key: the other way round, the next leader
		// could be elected while this one still believes it leads.
		n.step(etcdelection.Event{Kind: etcdelection.Resigned}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), resignTimeout)
		err := rec.resign(ctx)
		cancel()
		if err != nil {
			// The key may still stand in this session, where a new
			// campaign would find it and win again at once: the session
			// is abandoned, and its key revoked with it.
			reply <- fmt.Errorf("stepped down, but etcd did not take the resign: %w", err)
			return false
		}
		reply <- nil
		return true
	}
}

// step feeds ev to the elector and logs the change of belief, with why. r
// is the reign a won campaign starts.
func (n *node) step(ev etcdelection.Event, r *reign) etcdelection.Belief {
	n.mu.Lock()
	was := n.elector.Belief()
	n.elector.Step(ev)
	now := n.elector.Belief()
	switch {
	case !now.Leader:
		n.reign = nil
	case ev.Kind == etcdelection.Won:
		n.reign = r
	}
	n.mu.Unlock()

	switch {
	case now.Leader && now != was && ev.SessionDone:
		log.Printf("%s: leading with token %d (won the campaign in session %d, which had ended before the campaign returned: a win on a key gone with its lease, as etcd-io/etcd#19597 and #11456 give)", n.id, now.Token, ev.Session)
	case now.Leader && now != was:
		log.Printf("%s: leading with token %d (won the campaign in session %d)", n.id, now.Token, ev.Session)
	case now.Leader:
	case ev.Kind == etcdelection.Won:
		log.Printf("%s: not leading: the campaign in session %d returned after the session had ended (etcd-io/etcd#19597, #11456)", n.id, ev.Session)
	case !was.Leader:
	case ev.Kind == etcdelection.SessionEnded:
		log.Printf("%s: not leading: session %d ended (its lease expired, or could not be kept alive)", n.id, ev.Session)
	case ev.Kind == etcdelection.Resigned:
		log.Printf("%s: not leading: resigned", n.id)
	default:
		log.Printf("%s: not leading (%s)", n.id, ev.Kind)
	}
	return now
}

// newSession makes a session, within grantTimeout. It grants the lease
// itself: NewSession would grant under the client's context, unbounded,
// and the context it is given lives on as the session's, so it cannot be
// the attempt's timeout.
func (n *node) newSession() (*concurrency.Session, int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), grantTimeout)
	defer cancel()
	lease, err := n.cli.Grant(ctx, int64(n.ttl))
	if err != nil {
		return nil, 0, err
	}
	s, err := concurrency.NewSession(n.cli, concurrency.WithTTL(n.ttl), concurrency.WithLease(lease.ID))
	if err != nil {
		n.revoke(lease.ID)
		return nil, 0, err
	}
	return s, lease.TTL, nil
}

// abandon stops keeping s alive and revokes its lease, which deletes its
// key at once, so the next candidate need not wait for the TTL.
func (n *node) abandon(s *concurrency.Session) {
	s.Orphan()
	n.revoke(s.Lease())
}

// revoke revokes a lease within revokeTimeout. It may fail: etcd is out of
// reach, or the lease has expired already; either way it is gone within
// its TTL.
func (n *node) revoke(id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), revokeTimeout)
	defer cancel()
	_, _ = n.cli.Revoke(ctx, id)
}

// failed logs a failed attempt, unless it failed as the last one did.
func (n *node) failed(what string, err error) {
	msg := what + ": " + err.Error()
	n.failures.Printf(msg, "%s: %s", n.id, msg)
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
