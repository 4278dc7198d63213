// Command lease-elector runs client-go's leader election
// (k8s.io/client-go/tools/leaderelection) on a coordination.k8s.io/v1
// Lease (resourcelock.LeaseLock) as a node of the system under test,
// against the target's kube-apiserver, the way every Kubernetes controller
// runs it: leaderelection.RunOrDie with OnStartedLeading and
// OnStoppedLeading. A node leads from OnStartedLeading until
// OnStoppedLeading, with the Lease's leaseTransitions as it took the Lease
// as its token (k8slease.TokenOf). client-go's own example exits the
// process in OnStoppedLeading and lets the container restart it; a node
// here calls RunOrDie again in the same process, with the same identity
// (its node name), since a node that exits fails a run: the next round
// campaigns at once.
//
// Environment, besides the SDK's: K8S_LEASE_DURATION, K8S_RENEW_DEADLINE,
// K8S_RETRY_PERIOD (client-go's LeaseDuration, RenewDeadline and
// RetryPeriod; default 3s, 2s, 400ms: the 15 s, 10 s and 2 s of client-go's
// example, divided by 5), K8S_LEASE_NAME and K8S_LEASE_NAMESPACE (the
// Lease, default splitbrain in default), KUBE_APISERVER (the API server's
// service member, default apiserver). The server is trusted and the
// electors' token made from SPLITBRAIN_SECRET (package k8slease).
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/splitbrain/splitbrain/contract"
	k8slease "github.com/splitbrain/splitbrain/targets/k8s-lease"
	"github.com/splitbrain/splitbrain/targets/sdk"
)

func main() { sdk.AgentMain(build) }

// build makes the node's client of the API server and the election config
// each round of RunOrDie runs.
func build(env sdk.Env, s *sdk.Settings) (*sdk.Agent, error) {
	leaseDuration := s.Duration("K8S_LEASE_DURATION", 3*time.Second)
	renewDeadline := s.Duration("K8S_RENEW_DEADLINE", 2*time.Second)
	retryPeriod := s.Duration("K8S_RETRY_PERIOD", 400*time.Millisecond)
	name := s.String("K8S_LEASE_NAME", "splitbrain")
	namespace := s.String("K8S_LEASE_NAMESPACE", "default")
	server := s.String("KUBE_APISERVER", "apiserver")
	if err := s.Err(); err != nil {
		return nil, err
	}
	addr, ok := env.Services[server]
	if !ok {
		return nil, fmt.Errorf("KUBE_APISERVER=%s: no such service member in SPLITBRAIN_SERVICES", server)
	}
	secret := os.Getenv(contract.EnvSecret)
	ca, _, err := k8slease.ServingCert(secret, server)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(&rest.Config{
		Host:            "https://" + addr,
		BearerToken:     k8slease.Token(secret),
		TLSClientConfig: rest.TLSClientConfig{CAData: ca, ServerName: server},
		// As Kubernetes' controller manager and scheduler give their
		// election's client: no request outlives the renew deadline.
		Timeout: renewDeadline,
		// An election of a few requests a retry period is no load; the
		// default 5 a second would pace a node's retries, not the server.
		QPS: 50, Burst: 100,
		UserAgent: "splitbrain-lease-elector/" + env.Node,
	})
	if err != nil {
		return nil, err
	}
	n := &node{id: env.Node}
	n.config = leaderelection.LeaderElectionConfig{
		Lock: &observedLock{Interface: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: name, Namespace: namespace},
			Client:     cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: env.Node},
		}, node: n},
		LeaseDuration: leaseDuration,
		RenewDeadline: renewDeadline,
		RetryPeriod:   retryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: n.started,
			OnStoppedLeading: n.stopped,
		},
		Name: name,
	}
	// RunOrDie panics on a config it refuses: refused here, it is one line.
	if _, err := leaderelection.NewLeaderElector(n.config); err != nil {
		return nil, fmt.Errorf("K8S_LEASE_DURATION=%s, K8S_RENEW_DEADLINE=%s, K8S_RETRY_PERIOD=%s: %v", leaseDuration, renewDeadline, retryPeriod, err)
	}
	log.Printf("%s: client-go leader election on Lease %s/%s at %s: lease %s, renew deadline %s, retry %s", n.id, namespace, name, addr, leaseDuration, renewDeadline, retryPeriod)
	return &sdk.Agent{Elector: n, Loop: n.run}, nil
}

// node is one elector: its belief, set by client-go's callbacks, and what
// it last read or wrote of the Lease.
type node struct {
	id     string
	config leaderelection.LeaderElectionConfig

	mu      sync.Mutex
	leading bool
	token   uint64
	// holder is the holder of the Lease record this node last read or
	// wrote; written the leaseTransitions of the last record it wrote, as
	// its holder.
	holder  string
	written int
	round   int
}

// Leadership is the elector's belief: client-go's, between its callbacks.
func (n *node) Leadership() contract.Leadership {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.leading {
		return sdk.Belief(true, n.id, n.token)
	}
	lead := n.holder
	if lead == n.id {
		lead = "" // its own, run out: no leader it knows of
	}
	return sdk.Belief(false, lead, 0)
}

// run campaigns forever, a RunOrDie at a time: RunOrDie returns once its
// elector has stopped leading.
func (n *node) run() {
	for {
		n.mu.Lock()
		n.round++
		n.mu.Unlock()
		leaderelection.RunOrDie(context.Background(), n.config)
	}
}

// started is OnStartedLeading, which client-go calls on a goroutine of its
// own once the node took the Lease: the last record it wrote names it, with
// the transitions that make its token. ctx ends as client-go stops
// leading, before it calls OnStoppedLeading: a call that comes late, after
// that, leads nothing.
func (n *node) started(ctx context.Context) {
	n.mu.Lock()
	if ctx.Err() != nil {
		n.mu.Unlock()
		return
	}
	n.leading, n.token = true, k8slease.TokenOf(n.written)
	token, round := n.token, n.round
	n.mu.Unlock()
	log.Printf("%s: leading with token %d (leaseTransitions %d; round %d)", n.id, token, token-1, round)
}

// stopped is OnStoppedLeading: client-go could not renew the Lease within
// the renew deadline (or found it taken).
func (n *node) stopped() {
	n.mu.Lock()
	was := n.leading
	n.leading, n.token = false, 0
	round := n.round
	n.mu.Unlock()
	if was {
		log.Printf("%s: not leading: round %d stopped leading (no renewal within the renew deadline)", n.id, round)
	}
}

// observedLock is the LeaseLock, through which the node sees each record
// client-go reads or writes: client-go keeps its observed record to
// itself, and hands OnStartedLeading no Lease.
type observedLock struct {
	resourcelock.Interface
	node *node
}

func (l *observedLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	r, raw, err := l.Interface.Get(ctx)
	if err == nil {
		l.saw(*r, false)
	}
	return r, raw, err
}

func (l *observedLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, r)
	if err == nil {
		l.saw(r, true)
	}
	return err
}

func (l *observedLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, r)
	if err == nil {
		l.saw(r, true)
	}
	return err
}

// saw notes record r, which the node wrote or read.
func (l *observedLock) saw(r resourcelock.LeaderElectionRecord, wrote bool) {
	l.node.mu.Lock()
	defer l.node.mu.Unlock()
	l.node.holder = r.HolderIdentity
	if wrote {
		l.node.written = r.LeaderTransitions
	}
}
