package sdk

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"
)

// Transport carries a target's peer messages as JSON over HTTP, best
// effort, as a network does: Send never blocks, and a message that cannot
// be queued or delivered is dropped. The election algorithms tolerate lost
// messages, which are one of the faults they are tested under anyway.
//
// Each peer has its own queue and sender, so a frozen or unreachable peer
// delays only the messages meant for it.
type Transport[M any] struct {
	inbox chan M
	out   map[string]chan M
}

// Queue sizes: the inbox absorbs a burst from every peer at once; a peer's
// queue holds what piles up while one post to it waits for its timeout.
const (
	inboxSize = 256
	queueSize = 64
)

// NewTransport starts a sender for each of env's peers; messages are posted
// to path on the peer (its node API port) and each post waits at most
// timeout.
func NewTransport[M any](env Env, path string, timeout time.Duration) *Transport[M] {
	t := &Transport[M]{inbox: make(chan M, inboxSize), out: make(map[string]chan M, len(env.Peers))}
	hc := &http.Client{Timeout: timeout}
	for _, addr := range env.Peers {
		q := make(chan M, queueSize)
		t.out[PeerHost(addr)] = q
		go post(hc, "http://"+addr+path, q)
	}
	return t
}

// Send queues m for the peer named to (a node name, as in SPLITBRAIN_NODE).
func (t *Transport[M]) Send(to string, m M) {
	select {
	case t.out[to] <- m: // a nil channel (unknown peer) is never ready
	default: // the peer is slow or cut off
	}
}

// Inbox delivers the messages peers posted, in arrival order.
func (t *Transport[M]) Inbox() <-chan M { return t.inbox }

// ServeHTTP receives one message from a peer.
func (t *Transport[M]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var m M
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	select {
	case t.inbox <- m:
	default: // overloaded: drop, as the network might
	}
	w.WriteHeader(http.StatusNoContent)
}

// post delivers one peer's messages one at a time, dropping what fails.
func post[M any](hc *http.Client, url string, q <-chan M) {
	for m := range q {
		b, err := json.Marshal(m)
		if err != nil {
			continue // a message type that cannot travel: nothing to retry
		}
		if resp, err := hc.Post(url, "application/json", bytes.NewReader(b)); err == nil {
			resp.Body.Close()
		}
	}
}
