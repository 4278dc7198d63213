package results

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/history"
)

// fixture is a run folder made without Docker: a synthetic history of a
// five-node cluster whose leader is paused every term, wakes up still
// believing it leads, and gets one stale write accepted before it steps
// down. Its report is invalid, with one violation per term.
type fixture struct {
	dir     string
	info    Info
	report  checkers.Report
	history []history.Event // as written to history.jsonl
	stale   []checkers.Violation
}

const fixtureNodes = 5

// makeFixture writes a run folder of about events events to dir.
func makeFixture(tb testing.TB, dir string, events int) *fixture {
	tb.Helper()
	if err := os.MkdirAll(filepath.Join(dir, LogsDir), 0o755); err != nil {
		tb.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, HistoryFile))
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	fx := &fixture{dir: dir}
	var (
		n      int64
		rng    = rand.New(rand.NewPCG(1, 2))
		faults []checkers.FaultEffect
	)
	emit := func(e history.Event) {
		e.Index = n
		n++
		fx.history = append(fx.history, e)
		if err := enc.Encode(e); err != nil {
			tb.Fatal(err)
		}
	}
	node := func(i int) string { return fmt.Sprintf("n%d", i+1) }

	const (
		term  = 10 * time.Second
		pause = 2 * time.Second
		gap   = 300 * time.Millisecond // election after the pause
		stale = 150 * time.Millisecond // the woken leader's belief
		tick  = 10 * time.Millisecond
		poll  = 50 * time.Millisecond
	)
	process, staleTerm := 1, -1
	for t := time.Duration(0); n < int64(events); t += tick {
		k := int(t / term) // the term; its token is k+1, its leader node k%5
		into := t - time.Duration(k)*term
		leader, token := k%fixtureNodes, int64(k+1)
		old := (k + fixtureNodes - 1) % fixtureNodes
		// The leader of term k-1 is paused for the first 2 s of term k,
		// then believes for 150 ms that it still leads.
		paused := k > 0 && into < pause
		woken := k > 0 && into >= pause && into < pause+stale
		electing := k > 0 && into < gap
		if k > 0 && into == 0 {
			at := int64(t)
			emit(history.Event{Time: at + int64(20*time.Millisecond), Sent: at, Type: history.Nemesis, Phase: history.Inject,
				F: "pause-leader", Value: fmt.Sprintf("froze %s (leader %s)", node(old), node(old)), Nodes: []string{node(old)}})
			faults = append(faults, checkers.FaultEffect{Fault: "pause-leader", What: "froze " + node(old), Nodes: []string{node(old)},
				At: at, InjectMS: 20, HealMS: 30, Before: node(old), After: node(leader), FailoverS: gap.Seconds()})
		}
		if k > 0 && into == pause {
			emit(history.Event{Time: int64(t) + int64(30*time.Millisecond), Sent: int64(t), Type: history.Nemesis, Phase: history.Heal,
				F: "pause-leader", Value: "thawed " + node(old), Nodes: []string{node(old)}})
		}
		if t%poll == 0 {
			for i := range fixtureNodes {
				e := history.Event{Time: int64(t) + int64(time.Millisecond), Sent: int64(t), Type: history.Leader, Node: node(i)}
				switch {
				case i == old && paused:
					e.Error = "no answer: context deadline exceeded"
				case i == old && woken:
					e.IsLeader, e.Token = true, token-1
				case i == leader && !electing:
					e.IsLeader, e.Token = true, token
				}
				emit(e)
			}
		}
		for range 4 { // 400 operations a second
			at := int64(t) + rng.Int64N(int64(tick/2))
			to := rng.IntN(fixtureNodes)
			inv := history.Event{Time: at, Type: history.Invoke, Process: process, F: history.Write, Key: "k1", Value: fmt.Sprint(n), Node: node(to)}
			done := inv
			done.Time = at + int64(time.Millisecond) + rng.Int64N(int64(3*time.Millisecond))
			switch {
			case rng.IntN(10) == 0:
				inv.F, inv.Node, done.F, done.Type = history.Read, "", history.Read, history.OK
			case to == old && paused:
				done.Type, done.Error = history.Info, "context deadline exceeded"
			case to == old && woken:
				done.Type, done.Token = history.OK, token-1
				if staleTerm != k { // the checker's first finding of the term
					staleTerm = k
					fx.stale = append(fx.stale, checkers.Violation{
						Kind: "stale-token-accepted", Time: at, Events: []int64{n + 1}, Nodes: []string{node(old), node(leader)},
						Message: fmt.Sprintf("%s's write of k1 with token %d (sent at %.3f s) was accepted after %s's write with token %d; the resource was unfenced",
							node(old), token-1, float64(at)/1e9, node(leader), token),
					})
				}
			case to == leader && !electing:
				done.Type, done.Token = history.OK, token
			default:
				done.Type, done.Error = history.Fail, "not-leader"
			}
			emit(inv)
			emit(done)
			if done.Type == history.Info {
				process += 100 // a process whose operation ended info is retired
			}
		}
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	for _, name := range []string{"n1", "n2", "n3", "n4", "n5", "resource"} {
		if err := os.WriteFile(filepath.Join(dir, LogsDir, name+".log"), []byte("log of "+name+"\n"), 0o644); err != nil {
			tb.Fatal(err)
		}
	}

	fx.info = Info{
		ID: filepath.Base(dir), Command: "splitbrain run --target raft --nemesis=pause-leader --resource=unfenced --seed=7",
		Target: "raft", Promise: "overlap-bound: 2s", Seed: 7, Started: time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC),
		Config: Settings{Nodes: fixtureNodes, Nemesis: []string{"pause-leader"}, Resource: contract.Unfenced, ObserveInterval: poll},
		Faults: faults,
	}
	stored := fx.stale[:min(len(fx.stale), 100)]
	fx.report = checkers.Report{Valid: checkers.Invalid, Checkers: map[string]checkers.Result{
		checkers.ElectionSafetyName: {Valid: checkers.Valid, Figures: map[string]float64{"elections": float64(len(faults) + 1), "violations": 0}},
		checkers.StaleTokenName: {Valid: checkers.Invalid, Violations: stored,
			Figures: map[string]float64{"stale_accepted": float64(len(fx.stale)), "violations": float64(len(fx.stale))}},
		checkers.AvailabilityName: {Valid: checkers.Valid, Figures: map[string]float64{"leaderless_s": 0.3, "leaderless_periods": 1, "leaderless_longest_s": 0.3}},
	}}
	if err := WriteJSON(filepath.Join(dir, RunFile), fx.info); err != nil {
		tb.Fatal(err)
	}
	if err := WriteJSON(filepath.Join(dir, ResultsFile), fx.report); err != nil {
		tb.Fatal(err)
	}
	return fx
}
