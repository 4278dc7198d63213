// Package resource is the fenced resource: the shared register leaders write to, its HTTP API and a client for it.
package resource

import (
	"encoding/json"
	"io"
	"net/http"
	"sync"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/history"
)

// Server holds the registers and decides every write. Each decision is
// appended to the log before the answer is sent, so the log is ground truth
// for every write a node was told had succeeded.
type Server struct {
	mode contract.Mode

	mu      sync.Mutex
	seq     int64
	regs    map[string]contract.Register
	highest map[string]int64 // highest token accepted per key
	log     *json.Encoder    // nil: no log kept
	logErr  error
}

// NewServer returns a resource in mode that logs its decisions as JSON lines
// to log (which may be nil).
func NewServer(mode contract.Mode, log io.Writer) *Server {
	s := &Server{mode: mode, regs: map[string]contract.Register{}, highest: map[string]int64{}}
	if log != nil {
		s.log = json.NewEncoder(log)
	}
	return s
}

// Write decides one write.
func (s *Server) Write(req contract.ResourceWrite) (contract.ResourceAnswer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	high := s.highest[req.Key]
	accept := s.mode == contract.Unfenced || req.Token >= high
	d := history.Decision{
		Seq: s.seq, Key: req.Key, Value: req.Value, Token: req.Token, Node: req.Node,
		Accepted: accept, Highest: high, Mode: string(s.mode),
	}
	if s.log != nil {
		// The decision is logged before it takes effect: a write the log
		// does not hold never happened.
		if err := s.log.Encode(d); err != nil {
			s.logErr = err
			return contract.ResourceAnswer{}, err
		}
	}
	if accept {
		s.regs[req.Key] = contract.Register{Value: req.Value, Token: req.Token, Node: req.Node, Seq: s.seq}
		s.highest[req.Key] = max(high, req.Token)
	}
	return contract.ResourceAnswer{Accepted: accept, Seq: s.seq, Current: s.highest[req.Key]}, nil
}

// Read returns the register of key.
func (s *Server) Read(key string) contract.Register {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.regs[key]
}

// ServeHTTP serves POST /write, GET /read?key= and GET /health.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/health":
		w.WriteHeader(http.StatusOK)
	case r.URL.Path == "/read" && r.Method == http.MethodGet:
		reply(w, http.StatusOK, s.Read(r.URL.Query().Get("key")))
	case r.URL.Path == "/write" && r.Method == http.MethodPost:
		var req contract.ResourceWrite
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Key == "" {
			reply(w, http.StatusBadRequest, map[string]string{"error": "bad write request"})
			return
		}
		resp, err := s.Write(req)
		switch {
		case err != nil:
			reply(w, http.StatusInternalServerError, map[string]string{"error": "decision log: " + err.Error()})
		case resp.Accepted:
			reply(w, http.StatusOK, resp)
		default:
			reply(w, http.StatusPreconditionFailed, resp)
		}
	default:
		http.NotFound(w, r)
	}
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
