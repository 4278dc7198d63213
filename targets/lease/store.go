package lease

import (
	"encoding/json"
	"net/http"
	"sync"
)

// Saver keeps the record durably (sdk.FileStore does, in a file that
// survives a kill of the store's container).
type Saver interface {
	Load() (Record, error)
	Save(Record) error
}

// Store is the lease store, the target's service: one record, replaced
// only by a write based on its current version. Every write is saved
// before it is acknowledged.
type Store struct {
	saver Saver

	mu  sync.Mutex
	rec Record
}

// OpenStore loads the record saver kept.
func OpenStore(saver Saver) (*Store, error) {
	rec, err := saver.Load()
	if err != nil {
		return nil, err
	}
	return &Store{saver: saver, rec: rec}, nil
}

// Apply carries out one request: a read, or a compare-and-swap on the
// record's version. The store, not the writer, sets the new version.
func (s *Store) Apply(req Request) (Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !req.Write {
		return Response{OK: true, Record: s.rec}, nil
	}
	if req.Expect != s.rec.Version {
		return Response{Record: s.rec}, nil
	}
	next := req.Record
	next.Version = s.rec.Version + 1
	if err := s.saver.Save(next); err != nil {
		return Response{Record: s.rec}, err
	}
	s.rec = next
	return Response{OK: true, Record: next}, nil
}

// ServeHTTP answers POST /lease with a Request body: 200 and the Response,
// or 500 when the write could not be saved.
func (s *Store) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req Request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp, err := s.Apply(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}
