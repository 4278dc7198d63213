// Command lease-node runs the lease elector as a node of the system under
// test: every tick it reads, renews or takes over the lease in the
// target's store service, and the node API answers with its belief at the
// moment it is asked.
//
// Environment, besides the SDK's: LEASE_TICK (default 100ms),
// LEASE_DURATION (default 1s), LEASE_RENEW_DEADLINE (default 700ms),
// LEASE_STORE (the service's name, default store).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"sync"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/targets/lease"
	"github.com/splitbrain/splitbrain/targets/sdk"
)

func main() {
	sdk.AgentMain(func(env sdk.Env, s *sdk.Settings) (*sdk.Agent, error) {
		tick := s.Duration("LEASE_TICK", 100*time.Millisecond)
		cfg := lease.Config{
			ID:            env.Node,
			Duration:      s.Duration("LEASE_DURATION", time.Second),
			RenewDeadline: s.Duration("LEASE_RENEW_DEADLINE", 700*time.Millisecond),
		}
		storeName := s.String("LEASE_STORE", "store")
		addr, ok := env.Services[storeName]
		if !ok {
			return nil, fmt.Errorf("no service %q in SPLITBRAIN_SERVICES (%v)", storeName, env.Services)
		}
		e, err := lease.New(cfg)
		if err != nil {
			return nil, err
		}
		// A request may take up to two ticks: an answer later than that is
		// worth less than the next round's, and a frozen store must not hold
		// the loop for long.
		n := &node{
			clock:   sdk.NewClock(env.ClockFile),
			store:   "http://" + addr + "/lease",
			hc:      &http.Client{Timeout: 2 * tick},
			elector: e,
		}
		return &sdk.Agent{Elector: n, Loop: func() { n.loop(env.Node, tick) }}, nil
	})
}

// node drives the elector: one request to the store a tick, one at a time.
type node struct {
	clock *sdk.Clock
	store string
	hc    *http.Client

	mu      sync.Mutex
	elector *lease.Elector
}

// Leadership is the belief at the moment the node API is asked, so a node
// that was frozen past its deadline knows it the moment it wakes.
func (n *node) Leadership() contract.Leadership {
	n.mu.Lock()
	defer n.mu.Unlock()
	st := n.elector.Status(n.clock.Now())
	return sdk.Belief(st.Leader, st.Holder, st.Token)
}

func (n *node) loop(id string, tick time.Duration) {
	t := time.NewTicker(tick)
	defer t.Stop()
	var was lease.Status
	for range t.C {
		for more := true; more; {
			n.mu.Lock()
			sent := n.clock.Now()
			req := n.elector.Next(sent)
			n.mu.Unlock()

			resp, err := n.call(req)
			if err != nil && !errors.Is(err, errNoAnswer) {
				log.Printf("%s: %v", id, err)
			}

			n.mu.Lock()
			more = n.elector.Done(req, sent, resp, err == nil)
			n.mu.Unlock()
		}
		n.mu.Lock()
		st := n.elector.Status(n.clock.Now())
		n.mu.Unlock()
		if st.Leader != was.Leader || st.Token != was.Token {
			if st.Leader {
				log.Printf("%s: leader, token %d", id, st.Token)
			} else {
				log.Printf("%s: follows %q", id, st.Holder)
			}
		}
		was = st
	}
}

var errNoAnswer = errors.New("no answer from the store")

func (n *node) call(req lease.Request) (lease.Response, error) {
	var resp lease.Response
	b, err := json.Marshal(req)
	if err != nil {
		return resp, err
	}
	r, err := n.hc.Post(n.store, "application/json", bytes.NewReader(b))
	if err != nil {
		return resp, fmt.Errorf("%w: %v", errNoAnswer, err)
	}
	defer r.Body.Close()
	if r.StatusCode != http.StatusOK {
		return resp, fmt.Errorf("store answered %s", r.Status)
	}
	return resp, json.NewDecoder(r.Body).Decode(&resp)
}
