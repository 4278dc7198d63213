package results

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// pruneStore holds runs r0 (oldest) to r4 started an hour apart from
// night0, latest pointing at r1, and folders that are no runs: notes
// without a run.json, and stray, whose undated run.json names r3.
func pruneStore(t *testing.T) Store {
	t.Helper()
	s := Store{Root: t.TempDir()}
	for i, id := range []string{"r0", "r1", "r2", "r3", "r4"} {
		writeRun(t, s, Info{ID: id, Target: "raft", Started: night0.Add(time.Duration(i) * time.Hour)}, nil)
	}
	if err := s.SetLatest("r1"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(s.Root, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	stray, err := s.Create("stray")
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(filepath.Join(stray, RunFile), Info{ID: "r3"}); err != nil {
		t.Fatal(err)
	}
	return s
}

// left lists what the store's folder holds.
func left(t *testing.T, s Store) []string {
	t.Helper()
	entries, err := os.ReadDir(s.Root)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func TestPrune(t *testing.T) {
	now := night0.Add(5 * time.Hour)
	for _, c := range []struct {
		name      string
		keep      int
		olderThan time.Duration
		removed   []string
	}{
		{"no bound", 0, 0, nil},
		{"the oldest", 4, 0, []string{"r0"}},
		{"by count", 2, 0, []string{"r2", "r0"}},
		{"by age", 0, 150 * time.Minute, []string{"r2", "r0"}},
		{"by count, more than by age", 2, 4*time.Hour + 30*time.Minute, []string{"r2", "r0"}},
		{"by age, more than by count", 4, 150 * time.Minute, []string{"r2", "r0"}},
		{"a stray run.json", 5, 0, nil}, // stray, beyond the newest 5, names r3: r3 stays
	} {
		t.Run(c.name, func(t *testing.T) {
			s := pruneStore(t)
			removed, err := s.Prune(c.keep, c.olderThan, now)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(removed, c.removed) {
				t.Errorf("removed %v, want %v", removed, c.removed)
			}
			got := left(t, s)
			for _, id := range []string{"r0", "r1", "r2", "r3", "r4", "notes", "stray", LatestLink} {
				if slices.Contains(got, id) == slices.Contains(c.removed, id) {
					t.Errorf("%s is left: %v", id, slices.Contains(got, id))
				}
			}
			if len(c.removed) == 0 {
				return
			}
			b, err := os.ReadFile(filepath.Join(s.Root, IndexFile))
			if err != nil {
				t.Fatalf("the index was not rewritten: %v", err)
			}
			for _, id := range c.removed {
				if strings.Contains(string(b), `href="`+id+`/report.html"`) {
					t.Errorf("the index still links the removed run %s", id)
				}
			}
			if !strings.Contains(string(b), `href="r4/report.html"`) {
				t.Error("the index lost run r4")
			}
		})
	}
}

// A run.json is read from a file: an id that is not a folder's name must
// not lead Prune out of the run.
func TestPruneOnlyRunFolders(t *testing.T) {
	s := Store{Root: filepath.Join(t.TempDir(), "results")}
	for _, id := range []string{"", ".", "..", "../results", "a/b"} {
		dir, err := s.Create("odd" + strings.NewReplacer(".", "d", "/", "s").Replace(id))
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteJSON(filepath.Join(dir, RunFile), Info{ID: id, Started: night0}); err != nil {
			t.Fatal(err)
		}
	}
	before := left(t, s)
	removed, err := s.Prune(1, time.Hour, night0.AddDate(1, 0, 0))
	if err != nil || len(removed) > 0 {
		t.Fatalf("removed %v (%v), want nothing", removed, err)
	}
	if after := left(t, s); !slices.Equal(after, before) {
		t.Errorf("the store held %v, now %v", before, after)
	}
}

// A run of unknown start is not known to be old.
func TestPruneUnknownStart(t *testing.T) {
	s := Store{Root: t.TempDir()}
	writeRun(t, s, Info{ID: "undated"}, nil)
	if removed, err := s.Prune(0, time.Hour, night0); err != nil || len(removed) > 0 {
		t.Errorf("removed %v (%v), want nothing", removed, err)
	}
}
