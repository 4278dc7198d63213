package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"log"
	"net/http"
	"time"

	"github.com/splitbrain/splitbrain/contract"
)

// Belief is the Leadership of a node that leads with token (a term, an
// epoch) when leader is true, and otherwise follows lead ("" if unknown).
func Belief(leader bool, lead string, token uint64) contract.Leadership {
	l := contract.Leadership{Leader: leader, LeaderID: lead}
	if leader {
		l.Token = int64(token)
	}
	return l
}

// Elector is the one thing a target must provide: its current belief.
type Elector interface {
	Leadership() contract.Leadership
}

// Resigner is implemented by targets that support POST /resign.
type Resigner interface {
	Resign() error
}

// LocalWriter is implemented by an agent beside a real server: a write
// goes to that server first, as the system's own clients write, and on to
// the resource only once the server took it. WriteLocal returns
// ErrNotLeader when the server refused the write for not leading (a
// replica's READONLY), answered 409; any other error is answered 503.
type LocalWriter interface {
	WriteLocal(ctx context.Context, key, value string) error
}

// DataStore is implemented by an agent whose system keeps data of its own
// (a key in Redis, a row in PostgreSQL): the node API serves it on
// contract.DataPath, so that the harness checks what the store itself
// acknowledged. Each call goes to the store as the system's own clients
// go through this node (following its redirections); ErrNotLeader is the
// store refusing for want of a leader here (a replica's READONLY, a
// server in recovery), answered 409; any other error 503.
type DataStore interface {
	ReadData(ctx context.Context, key string) (string, error)
	WriteData(ctx context.Context, key, value string) error
}

// ErrNotLeader is a LocalWriter's or DataStore's server refusing for not
// leading.
var ErrNotLeader = errors.New("not-leader")

// Server serves the node API for one node. Targets add their own peer
// endpoints with Handle.
type Server struct {
	env      Env
	elector  Elector
	feed     *feed // nil: the node serves no watch
	resource *contract.ResourceClient
	clock    *Clock
	mux      *http.ServeMux
	// WriteTimeout bounds a fenced write to the resource.
	WriteTimeout time.Duration
}

// Option changes a Server from its defaults.
type Option func(*Server)

// Polled serves no watch (WatchPath): the harness then polls GET /leader.
// It is for an agent whose belief costs a question to its server, which a
// watch would ask every millisecond.
func Polled() Option { return func(s *Server) { s.feed = nil } }

// NewServer returns the node API server of the node described by env. It
// serves the watch of e's beliefs, read every millisecond, unless Polled.
func NewServer(env Env, e Elector, opts ...Option) *Server {
	s := &Server{
		env:          env,
		elector:      e,
		feed:         newFeed(env.Node, e),
		resource:     &contract.ResourceClient{BaseURL: env.ResourceURL, HTTP: &http.Client{}},
		clock:        NewClock(env.ClockFile),
		mux:          http.NewServeMux(),
		WriteTimeout: 2 * time.Second,
	}
	for _, o := range opts {
		o(s)
	}
	s.mux.HandleFunc("GET "+contract.HealthPath, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	s.mux.HandleFunc("GET "+contract.LeaderPath, s.leader)
	if s.feed != nil {
		s.mux.HandleFunc("GET "+contract.WatchPath, s.watch)
	}
	s.mux.HandleFunc("POST "+contract.WritePath, s.write)
	// The node's wall clock as the target reads it: lets the harness check
	// that a clock fault reached the node.
	s.mux.HandleFunc("GET /clock", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusOK, map[string]int64{"now_ns": s.clock.Now().UnixNano()})
	})
	if r, ok := e.(Resigner); ok {
		s.mux.HandleFunc("POST "+contract.ResignPath, func(w http.ResponseWriter, _ *http.Request) {
			if err := r.Resign(); err != nil {
				reply(w, http.StatusConflict, map[string]string{"error": err.Error()})
				return
			}
			reply(w, http.StatusOK, map[string]bool{"ok": true})
		})
	}
	if d, ok := e.(DataStore); ok {
		s.mux.HandleFunc("GET "+contract.DataPath, func(w http.ResponseWriter, r *http.Request) {
			key := r.URL.Query().Get("key")
			if key == "" {
				reply(w, http.StatusBadRequest, contract.DataAnswer{Error: "bad read request"})
				return
			}
			v, err := d.ReadData(r.Context(), key)
			replyData(w, contract.DataAnswer{Value: v}, err)
		})
		s.mux.HandleFunc("POST "+contract.DataPath, func(w http.ResponseWriter, r *http.Request) {
			var req contract.DataWrite
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Key == "" {
				reply(w, http.StatusBadRequest, contract.DataAnswer{Error: "bad write request"})
				return
			}
			// The node's own act, as a fenced write is: finished though
			// the client hung up.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), s.WriteTimeout)
			defer cancel()
			replyData(w, contract.DataAnswer{OK: true}, d.WriteData(ctx, req.Key, req.Value))
		})
	}
	return s
}

// replyData answers a DataStore's call: ok with what it found, 409 when
// the store refused for not leading, 503 for anything else.
func replyData(w http.ResponseWriter, ok contract.DataAnswer, err error) {
	switch {
	case errors.Is(err, ErrNotLeader):
		reply(w, http.StatusConflict, contract.DataAnswer{Error: contract.ErrNotLeader})
	case err != nil:
		reply(w, http.StatusServiceUnavailable, contract.DataAnswer{Error: err.Error()})
	default:
		reply(w, http.StatusOK, ok)
	}
}

// Handle registers a target's own endpoint, peer messages say.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// ListenAndServe serves until the process ends.
func (s *Server) ListenAndServe() error {
	log.Printf("%s: node API on %s, peers %v, resource %s", s.env.Node, s.env.Addr, s.env.Peers, s.env.ResourceURL)
	return http.ListenAndServe(s.env.Addr, s.mux)
}

func (s *Server) leader(w http.ResponseWriter, _ *http.Request) {
	l := s.elector.Leadership()
	l.Node = s.env.Node
	reply(w, http.StatusOK, l)
}

// write is the fenced write: the node checks its own belief, then (an
// agent: once its server took the write) writes with its current token. The gap between the check and the resource's
// decision is exactly where a paused or partitioned leader becomes a zombie;
// the fence is what makes that gap safe.
func (s *Server) write(w http.ResponseWriter, r *http.Request) {
	var req contract.WriteRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Key == "" {
		reply(w, http.StatusBadRequest, contract.WriteAnswer{Error: "bad write request"})
		return
	}
	l := s.elector.Leadership()
	if !l.Leader {
		reply(w, http.StatusConflict, contract.WriteAnswer{Error: contract.ErrNotLeader, LeaderID: l.LeaderID})
		return
	}
	// The write is the node's own act: a client that hangs up (it timed
	// out while this node was frozen, say) does not call it off.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), s.WriteTimeout)
	defer cancel()
	if lw, ok := s.elector.(LocalWriter); ok {
		switch err := lw.WriteLocal(ctx, req.Key, req.Value); {
		case errors.Is(err, ErrNotLeader):
			reply(w, http.StatusConflict, contract.WriteAnswer{Error: contract.ErrNotLeader})
			return
		case err != nil:
			reply(w, http.StatusServiceUnavailable, contract.WriteAnswer{Error: err.Error()})
			return
		}
	}
	resp, err := s.resource.Write(ctx, contract.ResourceWrite{Key: req.Key, Value: req.Value, Token: l.Token, Node: s.env.Node})
	switch {
	case errors.Is(err, contract.ErrResourceFenced):
		reply(w, http.StatusPreconditionFailed, contract.WriteAnswer{Error: contract.ErrFenced, Token: l.Token, Current: resp.Current})
	case err != nil:
		reply(w, http.StatusServiceUnavailable, contract.WriteAnswer{Error: err.Error()})
	default:
		reply(w, http.StatusOK, contract.WriteAnswer{OK: true, Token: l.Token, Seq: resp.Seq})
	}
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
