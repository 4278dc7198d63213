package sdk

import (
	"errors"
	"log"
	"sync"
	"time"

	"github.com/splitbrain/splitbrain/contract"
)

// Machine is a leader-election algorithm written as a deterministic state
// machine, in the style of go.etcd.io/raft: it owns no clock and no
// network. Node drives it from one goroutine, so it needs no locks.
type Machine[M any] interface {
	// Tick advances the machine's clock by one tick and returns the
	// messages to send.
	Tick() []M
	// Step processes one message from a peer and returns the messages to
	// send. After an error (a save that failed) nothing is sent.
	Step(M) ([]M, error)
	// Leadership is the machine's belief right now (the server fills in
	// Node).
	Leadership() contract.Leadership
}

// Node runs a Machine as one node of the system under test: a timer ticks
// it, peer messages reach it over HTTP (Transport), and the node API
// (Server) answers with its belief as of its last tick or step.
type Node[M any] struct {
	Env     Env
	Machine Machine[M]
	// Tick is the real time of one machine tick.
	Tick time.Duration
	// Path is the peer endpoint on the node API port, such as "/raft".
	Path string
	// To names the peer a message is for (a node name, as in
	// SPLITBRAIN_NODE).
	To func(M) string
}

// Run serves the node API and drives the machine until the process ends.
func (n *Node[M]) Run() error {
	switch {
	case n.Machine == nil:
		return errors.New("sdk: Node without a Machine")
	case n.Tick <= 0:
		return errors.New("sdk: Node.Tick must be positive")
	case n.Path == "" || n.Path[0] != '/':
		return errors.New("sdk: Node.Path must start with /")
	case n.To == nil:
		return errors.New("sdk: Node without To")
	}
	// A post to a peer that takes longer than a few ticks is worth less
	// than the fresher messages queued behind it.
	tr := NewTransport[M](n.Env, n.Path, 4*n.Tick)
	b := &snapshot{node: n.Env.Node}
	b.publish(n.Machine.Leadership())
	srv := NewServer(n.Env, b)
	srv.Handle("POST "+n.Path, tr)
	go n.loop(tr, b)
	return srv.ListenAndServe()
}

func (n *Node[M]) loop(tr *Transport[M], b *snapshot) {
	t := time.NewTicker(n.Tick)
	defer t.Stop()
	for {
		var (
			msgs []M
			err  error
		)
		select {
		case <-t.C:
			msgs = n.Machine.Tick()
		case m := <-tr.Inbox():
			msgs, err = n.Machine.Step(m)
		}
		if err != nil {
			log.Printf("%s: %v", n.Env.Node, err)
			msgs = nil // what a failed step would say was never made durable
		}
		b.publish(n.Machine.Leadership())
		for _, m := range msgs {
			tr.Send(n.To(m), m)
		}
	}
}

// snapshot is the Leadership the loop last published: the node API reads it
// from other goroutines than the loop's.
type snapshot struct {
	node string

	mu sync.Mutex
	l  contract.Leadership
}

func (b *snapshot) Leadership() contract.Leadership {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.l
}

// publish stores l and logs every change of leadership, so a node's log
// tells its story.
func (b *snapshot) publish(l contract.Leadership) {
	b.mu.Lock()
	changed := l != b.l
	b.l = l
	b.mu.Unlock()
	switch {
	case !changed:
	case l.Leader:
		log.Printf("%s: leader, token %d", b.node, l.Token)
	case l.LeaderID != "":
		log.Printf("%s: follows %s", b.node, l.LeaderID)
	default:
		log.Printf("%s: no leader known", b.node)
	}
}

// Main is the main function of a Go target's node: it reads the harness's
// environment, has build make the Node from it (reading the target's own
// settings from s), and runs it. A bad setting or a failed start ends the
// process with one line on its log.
func Main[M any](build func(env Env, s *Settings) (*Node[M], error)) {
	env, n := setUp(build)
	n.Env = env
	log.Fatal(n.Run())
}

// setUp reads the harness's environment and has build make the node from
// it, as Main and AgentMain do; a bad setting or a failed build ends the
// process.
func setUp[T any](build func(env Env, s *Settings) (T, error)) (Env, T) {
	env, err := EnvFromOS()
	if err != nil {
		log.Fatal(err)
	}
	var s Settings
	n, err := build(env, &s)
	if serr := s.Err(); serr != nil {
		err = serr // the cause of whatever else went wrong
	}
	if err != nil {
		log.Fatal(err)
	}
	return env, n
}
