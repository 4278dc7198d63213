package nemesis

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
