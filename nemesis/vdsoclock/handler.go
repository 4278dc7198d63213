package vdsoclock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"

	"github.com/splitbrain/splitbrain/contract"
)

// Skewer is what Handler serves: Clocks, where the kernel allows it.
type Skewer interface {
	Set(contract.Skew) error
	Skew() contract.Skew
	Patched() int
}

// State is GET /skew's answer.
type State struct {
	Skew    contract.Skew `json:"skew"`
	Patched int           `json:"patched"` // processes reading the routine
}

// Handler serves the sidecar's API:
//
//	GET /health  200
//	PUT /skew    JSON contract.Skew, given to every process; 204 once it is
//	             (the zero skew heals them all)
//	GET /skew    JSON State
//
// A body that is not a Skew gets 400; a failure to apply gets 500, every
// process healed. Both carry the error text.
func Handler(c Skewer) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("GET /skew", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(State{Skew: c.Skew(), Patched: c.Patched()})
	})
	mux.HandleFunc("PUT /skew", func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(io.LimitReader(req.Body, 1<<16))
		var s contract.Skew
		if err == nil {
			err = decode(body, &s)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := c.Set(s); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

func decode(b []byte, s *contract.Skew) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(s); err != nil {
		return fmt.Errorf("skew: %w", err)
	}
	return nil
}

// ReadSkew reads a node's clock file: no file is no skew.
func ReadSkew(file string) (contract.Skew, error) {
	var s contract.Skew
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err == nil {
		err = decode(b, &s)
	}
	return s, err
}
