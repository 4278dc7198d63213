package checkers

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/history"
)

// The names are spelled out, not the constants: they are the keys of
// every results.json already stored.
func TestAll(t *testing.T) {
	var names, watchable, liveness []string
	for _, c := range All(Options{}) {
		names = append(names, c.Name)
		if c.Check == nil {
			t.Errorf("%s has no check", c.Name)
		}
		if c.Watchable {
			watchable = append(watchable, c.Name)
		}
		if c.Judges == Liveness {
			liveness = append(liveness, c.Name)
		}
	}
	if want := []string{"election-safety", "leader-overlap", "stale-token", "linearizable", "availability", "durability"}; !slices.Equal(names, want) {
		t.Errorf("All(Options{}) = %v, want %v", names, want)
	}
	// Linearizability is judged over the whole history, and recovery
	// after the final heal at its end.
	if want := []string{"election-safety", "leader-overlap", "stale-token"}; !slices.Equal(watchable, want) {
		t.Errorf("watchable %v, want %v", watchable, want)
	}
	if want := []string{"availability"}; !slices.Equal(liveness, want) {
		t.Errorf("liveness %v, want %v", liveness, want)
	}
}

// fencedRun is oldLeaderFenced with the resource's decisions.
func fencedRun() Input {
	var b hist
	oldLeaderFenced(&b)
	return Input{
		History:         b.events(),
		Resource:        []history.Decision{dec(1, "k1", "p1-1", 1, "n1", false, "strict")},
		ObserveInterval: 50 * time.Millisecond,
	}
}

func TestRun(t *testing.T) {
	in := fencedRun()
	in.Promise = contract.Promise{Kind: contract.Fenced}
	rep := Run(in, All(Options{}))
	// Durability judges a target's own data, which this history holds none of.
	if _, ok := rep.Checkers[DurabilityName]; rep.Valid != Valid || ok || len(rep.Checkers) != len(All(Options{}))-1 {
		t.Fatalf("fenced: %+v", rep)
	}
	// The write was refused, yet the history says it failed: consistent.
	if r := rep.Checkers[StaleTokenName]; r.Valid != Valid || r.Figures["refused"] != 1 {
		t.Errorf("stale-token: %+v", r)
	}

	in.Promise = contract.Promise{Kind: contract.Exclusive}
	rep = Run(in, All(Options{}))
	if rep.Valid != Invalid || rep.Checkers[LeaderOverlapName].Valid != Invalid || rep.Checkers[ElectionSafetyName].Valid != Valid {
		t.Errorf("exclusive: %+v", rep)
	}

	if rep := Run(in, nil); rep.Valid != Valid || len(rep.Checkers) != 0 {
		t.Errorf("no checkers: %+v", rep)
	}
}

func TestRunSurvivesBadCheckers(t *testing.T) {
	cs := []Checker{
		{Name: "fine", Check: func(Input) Result { return Result{Valid: Valid} }},
		{Name: "fine", Check: func(Input) Result { return Result{Valid: Valid} }},
		{Name: "boom", Check: func(Input) Result { panic("index out of range") }},
		{Name: "empty"},
	}
	rep := Run(Input{}, cs)
	if rep.Valid != Unknown {
		t.Errorf("valid = %v, want unknown", rep.Valid)
	}
	if r := rep.Checkers["boom"]; r.Valid != Unknown || !strings.Contains(r.Note, "index out of range") || r.Figures == nil {
		t.Errorf("boom: %+v", r)
	}
	if r := rep.Checkers["empty"]; r.Valid != Unknown {
		t.Errorf("empty: %+v", r)
	}
	if _, ok := rep.Checkers["fine (2)"]; !ok || len(rep.Checkers) != 4 {
		t.Errorf("names: %v", rep.Checkers)
	}
	if r := rep.Checkers["fine"]; r.Figures == nil {
		t.Error("a nil Figures map should be filled in")
	}
}

func TestReportJSON(t *testing.T) {
	in := fencedRun()
	in.Promise = contract.Promise{Kind: contract.Exclusive}
	rep := Run(in, All(Options{}))
	rep.Checkers["later"] = Result{Valid: Unknown, Figures: map[string]float64{}}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`"valid":false`, `"leader-overlap":{"valid":false`, `"election-safety":{"valid":true`, `"later":{"valid":"unknown","figures":{}}`, `"kind":"overlap"`, `"events":[0,3,7,10]`} {
		if !strings.Contains(s, want) {
			t.Errorf("report JSON lacks %s:\n%s", want, s)
		}
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, rep) {
		t.Errorf("round trip: %v\n%+v\n%+v", err, back, rep)
	}
}

// Checkers only read: a history full of violations of every kind comes
// back exactly as it went in.
func TestCheckersDoNotModifyInput(t *testing.T) {
	var b hist
	b.lead(10, "n1", 5)
	b.lead(20, "n2", 5)
	b.lead(30, "n1", 7)
	b.lead(40, "n1", 5)
	b.write(50, 1, history.OK, "n2", "k1", "a", 5, "")
	b.write(60, 2, history.Fail, "n1", "k1", "b", 4, "fenced")
	b.write(70, 3, history.Info, "n3", "k1", "c", 0, "timeout")
	b.write(80, 4, history.OK, "n1", "k1", "d", 7, "")
	in := Input{
		History: b.events(),
		Resource: []history.Decision{
			dec(4, "k1", "c", 7, "n3", true, "unfenced"),
			dec(2, "k1", "a", 5, "n2", true, "unfenced"),
			dec(3, "k1", "b", 4, "n1", true, "unfenced"),
		},
		Promise: contract.Promise{Kind: contract.Exclusive},
	}
	hCopy := slices.Clone(in.History)
	rCopy := slices.Clone(in.Resource)
	rep := Run(in, All(Options{}))
	if !reflect.DeepEqual(in.History, hCopy) || !reflect.DeepEqual(in.Resource, rCopy) {
		t.Error("a checker modified its input")
	}
	for _, name := range []string{ElectionSafetyName, LeaderOverlapName, StaleTokenName} {
		if rep.Checkers[name].Valid != Invalid {
			t.Errorf("%s: %+v", name, rep.Checkers[name])
		}
	}
	kinds := map[string]bool{}
	for _, r := range rep.Checkers {
		for _, v := range r.Violations {
			kinds[v.Kind] = true
		}
	}
	for _, k := range []string{"duplicate-token", "token-regressed", "overlap", "stale-token-accepted", "token-of-another-node", "ok-not-accepted", "fail-but-accepted"} {
		if !kinds[k] {
			t.Errorf("no %s violation in %v", k, kinds)
		}
	}
}
