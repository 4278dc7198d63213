package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/results"
)

// storedFormats holds a results folder per store format the store has
// had, format-N, of runs that splitbrain stored in format N.
const storedFormats = "../../results/testdata/formats"

// storedRun is a run of storedFormats, copied into a results folder.
type storedRun struct {
	id      string
	format  string // "format-N"
	verdict checkers.Validity
}

// copyStoredRuns copies the stored runs whose format matches the glob
// pattern format ("format-*": all) into results folder root.
func copyStoredRuns(t *testing.T, root, format string) []storedRun {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(storedFormats, format, "*", results.RunFile))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no stored runs of %s in %s (%v)", format, storedFormats, err)
	}
	var runs []storedRun
	for _, file := range dirs {
		dir := filepath.Dir(file)
		report, err := results.ReadResults(dir)
		if err != nil {
			t.Fatal(err)
		}
		r := storedRun{id: filepath.Base(dir), format: filepath.Base(filepath.Dir(dir)), verdict: report.Valid}
		if err := results.CopyRun(filepath.Dir(dir), root, r.id); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	return runs
}

// analyze judges a run of every format the store has had, without Docker,
// and exits by the verdict the version that stored it reached.
func TestAnalyzeEveryFormat(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	root := t.TempDir()
	for _, r := range copyStoredRuns(t, root, "format-*") {
		want := map[checkers.Validity]int{checkers.Valid: exitValid, checkers.Invalid: exitInvalid}[r.verdict]
		var code int
		captureStdout(t, func() { code = run([]string{"analyze", filepath.Join(root, r.id)}) })
		if code != want {
			t.Errorf("analyze of %s (%s, stored as %s) exited %d, want %d", r.id, r.format, r.verdict, code, want)
		}
	}
}

// A run stored by a newer splitbrain is refused in one line that says to
// upgrade, exit 254.
func TestAnalyzeNewerFormat(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, results.RunFile), []byte(fmt.Sprintf(`{"format":%d,"id":"r","schedule":"of the future"}`, results.Format+1)), 0o644)
	_, err := analyzeCmd(context.Background(), []string{dir})
	if msg := oneLine(err); err == nil || msg != err.Error() || !strings.HasSuffix(msg, "upgrade splitbrain") || strings.Contains(msg, "not a run folder") {
		t.Errorf("analyze of a newer format: %v, want one line saying to upgrade", err)
	}
	if code := run([]string{"analyze", dir}); code != exitBadInput {
		t.Errorf("analyze of a newer format exited %d, want %d", code, exitBadInput)
	}
}

// serve lists the runs of every format the store has had.
func TestServeEveryFormat(t *testing.T) {
	root := t.TempDir()
	runs := copyStoredRuns(t, root, "format-*")
	h, err := resultsHandler(root)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	for _, r := range runs {
		if !strings.Contains(rec.Body.String(), fmt.Sprintf(`<a href="%s/report.html">`, r.id)) {
			t.Errorf("serve's index lacks %s (%s)", r.id, r.format)
		}
	}
}

// merge joins shards whose suite.json and runs are of different formats
// into one folder of today's format that lists them all.
func TestMergeEveryFormat(t *testing.T) {
	tmp := t.TempDir()
	shards := []struct {
		name, format, formatField string // formatField: suite.json's, none in format 1
		runs                      []storedRun
	}{
		{name: "old", format: "format-1"},
		{name: "new", format: fmt.Sprintf("format-%d", results.Format), formatField: fmt.Sprintf(`"format":%d,`, results.Format)},
	}
	var all []storedRun
	for i := range shards {
		root := filepath.Join(tmp, shards[i].name)
		os.MkdirAll(root, 0o755)
		shards[i].runs = copyStoredRuns(t, root, shards[i].format)
		all = append(all, shards[i].runs...)
	}
	index := 0
	for _, sh := range shards {
		var cases []string
		for _, r := range sh.runs {
			cases = append(cases, fmt.Sprintf(`{"index":%d,"name":"case %d","row":"row","target":"raft","expect":%q,"outcome":"pass","verdict":%q,"seconds":20,"command":"splitbrain run","run":%q}`,
				index, index, r.verdict.String(), r.verdict.String(), r.id))
			index++
		}
		suite := fmt.Sprintf(`{%s"name":"nightly","file":"nightly.yaml","total":%d,"started":"2026-11-23T02:00:00Z","cases":[%s]}`,
			sh.formatField, len(all), strings.Join(cases, ","))
		os.WriteFile(filepath.Join(tmp, sh.name, results.SuiteFile), []byte(suite), 0o644)
	}

	merged := filepath.Join(tmp, "merged")
	var code int
	captureStdout(t, func() {
		code = run([]string{"merge", "--results", merged, filepath.Join(tmp, "old"), filepath.Join(tmp, "new")})
	})
	if code != exitValid {
		t.Fatalf("merge exited %d", code)
	}
	s, err := results.ReadSuite(merged)
	if err != nil || s.Format != results.Format || len(s.Cases) != len(all) {
		t.Fatalf("merged suite.json: format %d, %d cases (%v)", s.Format, len(s.Cases), err)
	}
	page, err := os.ReadFile(filepath.Join(merged, results.IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range all {
		if !strings.Contains(string(page), fmt.Sprintf(`<a href="%s/report.html">`, r.id)) {
			t.Errorf("the merged index lacks %s (%s)", r.id, r.format)
		}
	}
}
