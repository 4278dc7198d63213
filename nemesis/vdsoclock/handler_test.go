package vdsoclock

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/contract"
)

// recorder is a Skewer that keeps what it was given.
type recorder struct {
	skew contract.Skew
	err  error
}

func (r *recorder) Set(s contract.Skew) error {
	if r.err != nil {
		return r.err
	}
	r.skew = s
	return nil
}
func (r *recorder) Skew() contract.Skew { return r.skew }
func (r *recorder) Patched() int        { return 3 }

func TestHandler(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(Handler(rec))
	defer srv.Close()
	put := func(body string) int {
		req, _ := http.NewRequest(http.MethodPut, srv.URL+"/skew", strings.NewReader(body))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if got := put(`{"offset_ns":1000,"rate":2,"since_ns":5}`); got != http.StatusNoContent {
		t.Fatalf("PUT a skew: %d", got)
	}
	if want := (contract.Skew{Offset: 1000, Rate: 2, Since: 5}); rec.skew != want {
		t.Fatalf("set %+v, want %+v", rec.skew, want)
	}
	for _, bad := range []string{`{"offset":1}`, `not json`} {
		if got := put(bad); got != http.StatusBadRequest {
			t.Errorf("PUT %s: %d, want 400", bad, got)
		}
	}
	rec.err = errors.New("no ptrace")
	if got := put(`{"offset_ns":1}`); got != http.StatusInternalServerError {
		t.Errorf("a failed Set: %d, want 500", got)
	}
	res, err := http.Get(srv.URL + "/skew")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var st State
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st.Patched != 3 || st.Skew.Offset != 1000 {
		t.Errorf("GET /skew = %+v", st)
	}
}

func TestReadSkew(t *testing.T) {
	dir := t.TempDir()
	if s, err := ReadSkew(filepath.Join(dir, "missing.json")); err != nil || s != (contract.Skew{}) {
		t.Fatalf("a missing file: %+v, %v; want no skew", s, err)
	}
	file := filepath.Join(dir, "clock.json")
	os.WriteFile(file, []byte(`{"offset_ns":-2000000000}`), 0o644)
	if s, err := ReadSkew(file); err != nil || s.Offset != -2*time.Second {
		t.Fatalf("ReadSkew = %+v, %v", s, err)
	}
	os.WriteFile(file, []byte(`{"offset_ns":`), 0o644)
	if _, err := ReadSkew(file); err == nil {
		t.Fatal("read half a file as a skew")
	}
}
