// Command raft-node runs the raft state machine as a node of the system
// under test: ticks from a timer, messages over HTTP, the node API from
// the SDK, and the vote kept in a file that survives a kill.
//
// Environment, besides the SDK's: RAFT_TICK (default 50ms), RAFT_ELECTION_TICKS
// (default 10), RAFT_STATE (default /data/raft-state.json).
package main

import (
	"bytes"
	"encoding/json"
	"hash/fnv"
	"log"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/splitbrain/splitbrain/targets/raft"
	"github.com/splitbrain/splitbrain/targets/sdk"
)

func main() {
	env, err := sdk.EnvFromOS()
	if err != nil {
		log.Fatal(err)
	}
	tick := durationEnv("RAFT_TICK", 50*time.Millisecond)
	electionTicks, err := strconv.Atoi(envOr("RAFT_ELECTION_TICKS", "10"))
	if err != nil {
		log.Fatalf("RAFT_ELECTION_TICKS: %v", err)
	}
	peers := map[string]string{} // id -> host:port
	var ids []string
	for _, p := range env.Peers {
		id := sdk.PeerHost(p)
		peers[id] = p
		ids = append(ids, id)
	}
	h := fnv.New64a()
	h.Write([]byte(env.Node))
	node, err := raft.New(raft.Config{
		ID:            env.Node,
		Peers:         ids,
		ElectionTicks: electionTicks,
		PreVote:       true,
		CheckQuorum:   true,
		Storage:       &fileStorage{path: envOr("RAFT_STATE", "/data/raft-state.json")},
		Rand:          rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), h.Sum64())),
	})
	if err != nil {
		log.Fatal(err)
	}
	d := &driver{node: node, inbox: make(chan raft.Message, 256), out: map[string]chan raft.Message{}}
	for id, addr := range peers {
		d.out[id] = make(chan raft.Message, 64)
		go send(addr, d.out[id], 4*tick)
	}
	d.publish()
	go d.loop(tick)

	srv := sdk.NewServer(env, d)
	srv.Handle("POST /raft", http.HandlerFunc(d.receive))
	log.Fatal(srv.ListenAndServe())
}

// driver owns the state machine: one goroutine feeds it ticks and messages,
// so the algorithm itself needs no locks.
type driver struct {
	node  *raft.Node
	inbox chan raft.Message
	out   map[string]chan raft.Message

	mu     sync.Mutex
	status raft.Status
}

func (d *driver) loop(tick time.Duration) {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		var (
			msgs []raft.Message
			err  error
		)
		select {
		case <-t.C:
			msgs = d.node.Tick()
		case m := <-d.inbox:
			msgs, err = d.node.Step(m)
		}
		if err != nil {
			// The vote could not be made durable, so it was not granted.
			log.Printf("raft: %v", err)
		}
		d.publish()
		for _, m := range msgs {
			select {
			case d.out[m.To] <- m:
			default: // the peer is slow or cut off; Raft tolerates lost messages
			}
		}
	}
}

func (d *driver) publish() {
	s := d.node.Status()
	d.mu.Lock()
	changed := s.State != d.status.State || s.Term != d.status.Term
	d.status = s
	d.mu.Unlock()
	if changed {
		log.Printf("raft: %s term %d leader %q", s.State, s.Term, s.Lead)
	}
}

// Leadership is the node API's view: the token is the term.
func (d *driver) Leadership() sdk.Leadership {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := sdk.Leadership{Leader: d.status.IsLeader(), LeaderID: d.status.Lead}
	if l.Leader {
		l.Token = int64(d.status.Term)
	}
	return l
}

func (d *driver) receive(w http.ResponseWriter, r *http.Request) {
	var m raft.Message
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	select {
	case d.inbox <- m:
	default: // overloaded: drop, as the network might
	}
	w.WriteHeader(http.StatusNoContent)
}

// send delivers messages to one peer, one at a time, dropping what fails.
func send(addr string, msgs <-chan raft.Message, timeout time.Duration) {
	hc := &http.Client{Timeout: timeout}
	for m := range msgs {
		b, _ := json.Marshal(m)
		resp, err := hc.Post("http://"+addr+"/raft", "application/json", bytes.NewReader(b))
		if err == nil {
			resp.Body.Close()
		}
	}
}

// fileStorage keeps the hard state in a file, replaced atomically and
// synced before Save returns: a vote is never granted before it is durable.
type fileStorage struct{ path string }

func (s *fileStorage) Load() (raft.HardState, error) {
	var hs raft.HardState
	b, err := os.ReadFile(s.path)
	if os.IsNotExist(err) {
		return hs, nil
	}
	if err != nil {
		return hs, err
	}
	return hs, json.Unmarshal(b, &hs)
}

func (s *fileStorage) Save(hs raft.HardState) error {
	if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
		return err
	}
	b, err := json.Marshal(hs)
	if err != nil {
		return err
	}
	tmp := s.path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, s.path)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func durationEnv(key string, def time.Duration) time.Duration {
	v := os.Getenv(key)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		log.Fatalf("%s: %v", key, err)
	}
	return d
}
