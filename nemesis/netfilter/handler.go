package netfilter

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"time"
)

// probeTimeout is how long a probe waits for a connection: on a bridge
// one takes well under a millisecond, so a longer wait means dropped.
const probeTimeout = 300 * time.Millisecond

// maxBody bounds a PUT /rules body; a real one is a few hundred bytes.
const maxBody = 1 << 20

// errBadRequest marks errors that are the caller's fault (400, not 500).
var errBadRequest = errors.New("bad request")

// Handler serves the sidecar's API:
//
//	GET    /health  200
//	PUT    /rules   JSON Rules, applied atomically; 204
//	DELETE /rules   removes the table; 204
//	GET    /rules   the rules now in the kernel, as JSON Rules
//	GET    /probe?addr=HOST:PORT
//	                whether a TCP connection from this namespace gets
//	                through: {"reachable":bool,"error":"..."}, always 200
//
// A body that is not valid Rules (unknown fields, IPv6 addresses) or that
// would drop the caller's own address gets 400; a failure to apply gets 500.
// Both carry the error text. The caller's address is refused because the
// controller would lock itself out: it could then neither see nor heal the
// partition, short of stopping the sidecar.
func Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("GET /rules", func(w http.ResponseWriter, _ *http.Request) {
		r, err := Current()
		if err != nil {
			fail(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(r)
	})
	mux.HandleFunc("PUT /rules", func(w http.ResponseWriter, req *http.Request) {
		r, err := decode(req)
		if err == nil {
			err = Apply(r)
		}
		if err != nil {
			fail(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	// probe shows a partition from the inside: the node's own view of who
	// it can reach, which the controller, never cut off, cannot see.
	mux.HandleFunc("GET /probe", func(w http.ResponseWriter, req *http.Request) {
		ans := struct {
			Reachable bool   `json:"reachable"`
			Error     string `json:"error,omitempty"`
		}{}
		conn, err := net.DialTimeout("tcp", req.URL.Query().Get("addr"), probeTimeout)
		if err == nil {
			conn.Close()
			ans.Reachable = true
		} else {
			ans.Error = err.Error()
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(ans)
	})
	mux.HandleFunc("DELETE /rules", func(w http.ResponseWriter, _ *http.Request) {
		if err := Clear(); err != nil {
			fail(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

// decode reads and checks the Rules of a PUT /rules request.
func decode(req *http.Request) (Rules, error) {
	var r Rules
	dec := json.NewDecoder(http.MaxBytesReader(nil, req.Body, maxBody))
	dec.DisallowUnknownFields() // a misspelt field must not silently heal
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("%w: rules: %w", errBadRequest, err)
	}
	if err := r.Validate(); err != nil {
		return r, fmt.Errorf("%w: %w", errBadRequest, err)
	}
	if ap, err := netip.ParseAddrPort(req.RemoteAddr); err == nil {
		self := ap.Addr().Unmap()
		is := func(a netip.Addr) bool { return a.Unmap() == self }
		for _, k := range kinds {
			if slices.ContainsFunc(*k.list(&r), is) {
				return r, fmt.Errorf("%w: refusing to drop %s, the caller's own address", errBadRequest, self)
			}
		}
	}
	return r, nil
}

func fail(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	if errors.Is(err, errBadRequest) {
		code = http.StatusBadRequest
	}
	http.Error(w, err.Error(), code)
}
