package resource

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/history"
)

func TestStrictRefusesLowerTokensPerKey(t *testing.T) {
	var log bytes.Buffer
	s := NewServer(contract.Strict, &log)
	steps := []struct {
		key    string
		token  int64
		accept bool
	}{
		{"k1", 2, true},
		{"k1", 1, false}, // stale
		{"k1", 2, true},  // the same leadership may write again
		{"k2", 1, true},  // keys are fenced separately
		{"k1", 3, true},
		{"k1", 2, false},
	}
	for i, st := range steps {
		resp, err := s.Write(contract.ResourceWrite{Key: st.key, Value: "v", Token: st.token, Node: "n1"})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Accepted != st.accept || resp.Seq != int64(i+1) {
			t.Errorf("step %d: %+v, want accepted=%v seq=%d", i, resp, st.accept, i+1)
		}
	}
	decisions, err := history.ReadDecisions(&log)
	if err != nil {
		t.Fatal(err)
	}
	if len(decisions) != len(steps) {
		t.Fatalf("logged %d decisions, want %d", len(decisions), len(steps))
	}
	if d := decisions[1]; d.Accepted || d.Highest != 2 || d.Mode != "strict" {
		t.Errorf("stale decision logged as %+v", d)
	}
	if reg := s.Read("k1"); reg.Token != 3 || reg.Seq != 5 {
		t.Errorf("k1 holds %+v, want token 3 from seq 5", reg)
	}
}

func TestUnfencedAcceptsEverything(t *testing.T) {
	s := NewServer(contract.Unfenced, nil)
	s.Write(contract.ResourceWrite{Key: "k", Value: "new", Token: 5})
	resp, _ := s.Write(contract.ResourceWrite{Key: "k", Value: "old", Token: 4})
	if !resp.Accepted || s.Read("k").Value != "old" {
		t.Errorf("unfenced refused a stale write: %+v", resp)
	}
}

func TestHTTPStatusCodes(t *testing.T) {
	srv := httptest.NewServer(NewServer(contract.Strict, nil))
	defer srv.Close()
	post := func(body string) int {
		resp, err := http.Post(srv.URL+"/write", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := post(`{"key":"k","value":"a","token":2}`); c != 200 {
		t.Errorf("accepted write: %d", c)
	}
	if c := post(`{"key":"k","value":"b","token":1}`); c != 412 {
		t.Errorf("stale write: %d, want 412", c)
	}
	if c := post(`{"value":"no key"}`); c != 400 {
		t.Errorf("bad write: %d, want 400", c)
	}
	c := &contract.ResourceClient{BaseURL: srv.URL}
	reg, err := c.Read(t.Context(), "k")
	if err != nil || reg.Value != "a" || reg.Token != 2 {
		t.Errorf("read %+v, %v", reg, err)
	}
}
