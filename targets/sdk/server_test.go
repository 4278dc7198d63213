package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/workloads/resource"
)

// agent leads with token 7 and has a server of its own that answers
// writes with err.
type agent struct {
	err   error
	wrote []string
}

func (a *agent) Leadership() contract.Leadership { return Belief(true, "n1", 7) }

func (a *agent) WriteLocal(_ context.Context, key, value string) error {
	a.wrote = append(a.wrote, key+"="+value)
	return a.err
}

// A LocalWriter's server takes the write before the resource does, and a
// write it refuses never reaches the resource.
func TestWriteGoesToTheLocalServerFirst(t *testing.T) {
	res := resource.NewServer(contract.Strict, nil)
	rs := httptest.NewServer(res)
	defer rs.Close()
	for _, tc := range []struct {
		name     string
		err      error
		status   int
		resource bool // the write reached the resource
	}{
		{"taken", nil, http.StatusOK, true},
		{"a replica", ErrNotLeader, http.StatusConflict, false},
		{"a server that fails", errors.New("connection refused"), http.StatusServiceUnavailable, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &agent{err: tc.err}
			srv := httptest.NewServer(NewServer(Env{Node: "n1", ResourceURL: rs.URL}, a).mux)
			defer srv.Close()
			key := "k-" + strings.ReplaceAll(tc.name, " ", "-")
			resp, err := http.Post(srv.URL+"/write", "application/json", strings.NewReader(`{"key":"`+key+`","value":"v"}`))
			if err != nil {
				t.Fatal(err)
			}
			var body map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("status %d %v, want %d", resp.StatusCode, body, tc.status)
			}
			if len(a.wrote) != 1 || a.wrote[0] != key+"=v" {
				t.Errorf("local writes %v", a.wrote)
			}
			if got := res.Read(key).Token == 7; got != tc.resource {
				t.Errorf("reached the resource: %v, want %v", got, tc.resource)
			}
		})
	}
}

// store is an elector with a register of its own, which answers with err.
type store struct {
	agent
	held map[string]string
}

func (s *store) ReadData(_ context.Context, key string) (string, error) {
	return s.held[key], s.err
}

func (s *store) WriteData(_ context.Context, key, value string) error {
	if s.err == nil {
		s.held[key] = value
	}
	return s.err
}

// A DataStore is served on contract.DataPath: its refusal for not
// leading is 409, any other error 503; an elector without one serves no
// such route.
func TestDataStoreIsServed(t *testing.T) {
	for _, tc := range []struct {
		name        string
		err         error
		write, read int
		value       string
	}{
		{"kept", nil, http.StatusOK, http.StatusOK, `"v1"`},
		{"a replica", ErrNotLeader, http.StatusConflict, http.StatusConflict, ""},
		{"a store that fails", errors.New("connection refused"), http.StatusServiceUnavailable, http.StatusServiceUnavailable, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &store{agent: agent{err: tc.err}, held: map[string]string{}}
			srv := httptest.NewServer(NewServer(Env{Node: "n1"}, s).mux)
			defer srv.Close()
			resp, err := http.Post(srv.URL+contract.DataPath, "application/json", strings.NewReader(`{"key":"k1","value":"v1"}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.write {
				t.Errorf("write: %d, want %d", resp.StatusCode, tc.write)
			}
			resp, err = http.Get(srv.URL + contract.DataPath + "?key=k1")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.read || !strings.Contains(string(body), tc.value) {
				t.Errorf("read: %d %s, want %d with %s", resp.StatusCode, body, tc.read, tc.value)
			}
		})
	}
	srv := httptest.NewServer(NewServer(Env{Node: "n1"}, &agent{}).mux)
	defer srv.Close()
	resp, err := http.Get(srv.URL + contract.DataPath + "?key=k1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("an elector with no store: %d, want 404", resp.StatusCode)
	}
}
