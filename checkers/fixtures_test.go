package checkers

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/history"
)

// fixtureExpect is expect.json of a fixture under testdata/fixtures: a
// small history a person can read, and the verdicts it must get.
type fixtureExpect struct {
	About           string              `json:"about"`
	Promise         string              `json:"promise"`
	ObserveInterval string              `json:"observe_interval"`
	RecoveryTimeout string              `json:"recovery_timeout"`
	Valid           Validity            `json:"valid"`
	Checkers        map[string]Validity `json:"checkers"`
	// Violation is what the named checker must report first; Events must
	// be among its evidence.
	Violation *struct {
		Checker string  `json:"checker"`
		Kind    string  `json:"kind"`
		Events  []int64 `json:"events"`
	} `json:"violation"`
	// Windows are every finding of their kinds the named checkers must
	// show (findings the promise allows), each citing Events among its
	// evidence.
	Windows []fixtureWindow `json:"windows"`
	// Figures are figures the named checkers must give, by checker.
	Figures map[string]map[string]float64 `json:"figures"`
}

// fixtureWindow is a finding a fixture's checker must show.
type fixtureWindow struct {
	Checker string  `json:"checker"`
	Kind    string  `json:"kind"`
	Events  []int64 `json:"events"`
}

func TestFixtures(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "fixtures", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var x fixtureExpect
			raw, err := os.ReadFile(filepath.Join(dir, "expect.json"))
			if err == nil {
				err = json.Unmarshal(raw, &x)
			}
			if err != nil {
				t.Fatal(err)
			}
			in := loadFixture(t, dir, x)
			opts := Options{RecoveryTimeout: parseDuration(t, x.RecoveryTimeout)}
			rep := Run(in, All(opts))
			if rep.Valid != x.Valid {
				t.Errorf("verdict %v, want %v (%s)", rep.Valid, x.Valid, x.About)
			}
			for name, want := range x.Checkers {
				if got := rep.Checkers[name]; got.Valid != want {
					t.Errorf("%s: %v, want %v: %+v %q", name, got.Valid, want, got.Violations, got.Note)
				}
			}
			checkWindows(t, rep, x.Windows)
			for name, figs := range x.Figures {
				for fig, want := range figs {
					if got, ok := rep.Checkers[name].Figures[fig]; !ok || got != want {
						t.Errorf("%s: figure %s = %v (given: %v), want %v", name, fig, got, ok, want)
					}
				}
			}
			if v := x.Violation; v != nil {
				got := rep.Checkers[v.Checker].Violations
				if len(got) == 0 || got[0].Kind != v.Kind {
					t.Fatalf("%s: want a %s violation first, got %+v", v.Checker, v.Kind, got)
				}
				for _, e := range v.Events {
					if !containsIndex(got[0].Events, e) {
						t.Errorf("%s: evidence %v lacks event %d (%s)", v.Checker, got[0].Events, e, got[0].Message)
					}
				}
			}
		})
	}
}

func loadFixture(t *testing.T, dir string, x fixtureExpect) Input {
	t.Helper()
	h, err := history.ReadFile(filepath.Join(dir, "history.jsonl"), history.ReadEvents)
	if err != nil {
		t.Fatal(err)
	}
	res, err := history.ReadFile(filepath.Join(dir, "resource.jsonl"), history.ReadDecisions)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	p, err := contract.ParsePromise(x.Promise)
	if err != nil {
		t.Fatal(err)
	}
	return Input{History: h, Resource: res, Promise: p, ObserveInterval: parseDuration(t, x.ObserveInterval)}
}

// parseDuration reads an optional duration: "" is zero.
func parseDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// checkWindows checks that the report shows, of each kind want names, the
// windows want lists, in order, each citing its events.
func checkWindows(t *testing.T, rep Report, want []fixtureWindow) {
	t.Helper()
	type key struct{ checker, kind string }
	got := map[key][]Violation{}
	for _, w := range want {
		k := key{w.Checker, w.Kind}
		if _, ok := got[k]; ok {
			continue
		}
		got[k] = []Violation{}
		for _, v := range rep.Checkers[w.Checker].Windows {
			if v.Kind == w.Kind {
				got[k] = append(got[k], v)
			}
		}
	}
	seen := map[key]int{}
	for _, w := range want {
		k := key{w.Checker, w.Kind}
		n := seen[k]
		seen[k]++
		if n >= len(got[k]) {
			t.Errorf("%s: %d %s windows, want at least %d", w.Checker, len(got[k]), w.Kind, n+1)
			continue
		}
		for _, e := range w.Events {
			if !containsIndex(got[k][n].Events, e) {
				t.Errorf("%s: %s window %d cites %v, lacks event %d (%s)", w.Checker, w.Kind, n+1, got[k][n].Events, e, got[k][n].Message)
			}
		}
	}
	for k, ws := range got {
		if len(ws) > seen[k] {
			t.Errorf("%s: %d %s windows, want %d: %+v", k.checker, len(ws), k.kind, seen[k], ws[seen[k]:])
		}
	}
}
