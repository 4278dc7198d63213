package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/results"
)

// serve's home page is the index of the runs, rewritten when it starts.
func TestServeIndexIsHome(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run-1")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := results.WriteJSON(filepath.Join(run, results.RunFile), results.Info{ID: "run-1", Target: "raft"}); err != nil {
		t.Fatal(err)
	}
	h, err := resultsHandler(dir)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if body := rec.Body.String(); rec.Code != http.StatusOK || !strings.Contains(body, "splitbrain runs") || !strings.Contains(body, `href="run-1/report.html"`) {
		t.Errorf("GET / = %d:\n%s\nwant the index listing run-1", rec.Code, body)
	}
	if _, err := resultsHandler(filepath.Join(dir, "missing")); !harness.IsBadInput(err) {
		t.Errorf("serving a missing folder: %v, want bad input", err)
	}
}
