package sdk

import (
	"context"
	"encoding/json"
	"errors"
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
