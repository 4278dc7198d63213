package nemesis

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/history"
)

// An explicit schedule is carried out at its times, aimed by its aims,
// and what was done is written down as it is done: replaying what was
// written down aims every fault at the same containers again.
func TestExplicitReplaysWhatItWroteDown(t *testing.T) {
	run := func(e Explicit) (done []string, taken []Explicit) {
		rec, err := history.NewRecorder(filepath.Join(t.TempDir(), "h.jsonl"), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		defer rec.Close()
		c := &services{}
		var faults []Fault
		for _, name := range e.Names() {
			faults = append(faults, catalogue[name])
		}
		n := New(OfExplicit(e), faults, 1, c, rec)
		n.Taken = func(e Explicit) { taken = append(taken, e) }
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		n.Run(ctx)
		return c.done, taken
	}
	e := Explicit{Faults: []Timed{
		{At: 0.02, Fault: "kill-minority", For: 0.05, Aim: 7},
		{At: 0.1, Fault: "pause-one", Aim: 9}, // until the run's end
	}}
	done, taken := run(e)
	if len(done) != 4 || !strings.HasPrefix(done[0], "kill ") || !strings.HasPrefix(done[2], "pause ") {
		t.Fatalf("done %v", done)
	}
	if len(taken) != 4 {
		t.Fatalf("told %d times, want at each strike and heal: %+v", len(taken), taken)
	}
	got := taken[len(taken)-1].Faults
	// Struck no earlier than planned and healed at the planned time or
	// after: a strike late on a loaded machine is held the shorter.
	if got[0].Aim != 7 || got[1].Aim != 9 || got[0].At < 0.02 || got[0].At >= got[1].At || got[0].At+got[0].For < 0.07-1e-9 || got[1].At < 0.1 {
		t.Errorf("wrote down %+v", got)
	}
	if first := taken[0].Faults; len(first) != 1 || first[0].For != 0 {
		t.Errorf("a fault in effect is written down with no heal: %+v", first)
	}
	if again, _ := run(taken[len(taken)-1]); !slices.Equal(again, done) {
		t.Errorf("replayed %v, first %v", again, done)
	}
}

func TestReadExplicitNamesFileAndField(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ body, want string }{
		{`{"faults": [{"at_s": 1, "fault": "kill-one", "for_s": 2}]}`, ""},
		{`{"faults": []}`, ""},
		{`{}`, "faults: missing"},
		{`{"faults": [{"at_s": 1, "fault": "meteor"}]}`, `faults[0].fault: unknown fault "meteor"`},
		{`{"faults": [{"at_s": -1, "fault": "kill-one"}]}`, "faults[0].at_s: -1"},
		{`{"faults": [{"at_s": 1, "fault": "kill-one", "for_s": -2}]}`, "faults[0].for_s: -2"},
		{`{"faults": [{"at_s": 1, "fault": "kill-one", "for_s": 2}, {"at_s": 2, "fault": "pause-one"}]}`, "faults[1].at_s: 2 s is before faults[0] is healed (3 s)"},
		{`{"faults": [{"at_s": 1, "fault": "kill-one"}, {"at_s": 9, "fault": "pause-one"}]}`, "faults[1].at_s: 9 s is before faults[0] is healed (+Inf s)"},
		{`{"faults": [{"at_s": "soon", "fault": "kill-one"}]}`, "faults.at_s: string is not a float64"},
		{`{"faults": [{"at": 1, "fault": "kill-one"}]}`, `unknown field "at"`},
		{`{"faults": [`, "unexpected EOF"},
		{`{"faults": [{"at_s": 1, "fault": "packet-loss", "for_s": 2}, {"at_s": 4, "fault": "flap"}]}`, ""},
		{`{"faults": [{"at_s": 1, "fault": "pause-leader", "for_s": 2, "until": {"react_s": 5, "hold_s": 1, "write": true}}]}`, ""},
		{`{"faults": [{"at_s": 1, "fault": "pause-leader", "for_s": 2, "until": {"hold_s": 1}}]}`, "faults[0].until.react_s: 0 is not a positive duration"},
		{`{"faults": [{"at_s": 1, "fault": "kill-leader", "until": {"react_s": 5, "least_s": -1}}]}`, "faults[0].until.least_s: -1 is not a duration"},
		{`{"faults": [{"at_s": 1, "fault": "kill-leader", "until": {"react_s": 5, "soon": true}}]}`, `unknown field "soon"`},
	} {
		path := filepath.Join(dir, "schedule.json")
		if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadExplicit(path)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.body, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), path+": ")):
			t.Errorf("%s: error %v, want %q after the path", c.body, err, c.want)
		}
	}
	if _, err := ReadExplicit(filepath.Join(dir, "none.json")); err == nil {
		t.Error("read a file that does not exist")
	}
}

// reacting is a cluster that reacts to a pause after a while: n2 leads
// until then, and n3 leads and writes from then on.
type reacting struct {
	*services
	after time.Duration

	mu     sync.Mutex
	struck time.Time
}

func (c *reacting) Pause(ctx context.Context, n string) error {
	c.mu.Lock()
	c.struck = time.Now()
	c.mu.Unlock()
	return c.services.Pause(ctx, n)
}

func (c *reacting) View() View {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.struck.IsZero() || time.Since(c.struck) < c.after {
		return View{"n1": Follows, "n2": Leads, "n3": Follows}
	}
	return View{"n1": Follows, "n2": Follows, "n3": Writes}
}

// A paced fault is written down with its hold; replayed, it is healed
// once the cluster reacted, however long that takes this time, not after
// the time it took once.
func TestExplicitHealsUntilTheClusterReacted(t *testing.T) {
	pace := Pace{Settle: 20 * time.Millisecond, Wait: 60 * time.Millisecond, React: 2 * time.Second, Hold: time.Second, Thaw: time.Second}
	run := func(s Schedule, after time.Duration) Explicit {
		rec, err := history.NewRecorder(filepath.Join(t.TempDir(), "h.jsonl"), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		defer rec.Close()
		var taken Explicit
		n := New(s, []Fault{catalogue["pause-one"]}, 1, &reacting{services: &services{}, after: after}, rec)
		n.Taken = func(e Explicit) { taken = e }
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		n.Run(ctx)
		return taken
	}
	paced := run(Bounded([][]string{{"pause-one"}}, 1, pace, 0, 1), 100*time.Millisecond)
	if len(paced.Faults) != 1 {
		t.Fatalf("wrote down %+v", paced)
	}
	f := paced.Faults[0]
	want := Until{React: 2, Hold: 1, Write: true}
	if f.Until == nil || *f.Until != want || f.For < 0.1 || f.For > 0.5 {
		t.Fatalf("wrote down %+v (until %+v), want held about 0.1 s until %+v", f, f.Until, want)
	}
	again := run(OfExplicit(paced), 400*time.Millisecond)
	if g := again.Faults[0]; g.Until == nil || g.For < 0.4 || g.For > 0.8 || g.Aim != f.Aim {
		t.Errorf("replayed on a cluster that reacts in 0.4 s: %+v", g)
	}
	// Without its hold, the same fault is held the time it took once.
	fixed := Explicit{Faults: []Timed{{At: f.At, Fault: f.Fault, For: f.For, Aim: f.Aim}}}
	if g := run(OfExplicit(fixed), 400*time.Millisecond).Faults[0]; g.Until != nil || g.For > 0.35 {
		t.Errorf("replayed for a fixed %.3f s: %+v", f.For, g)
	}
}
