package etcdelection

import "testing"

// step is one event and the belief the elector must hold after it.
type step struct {
	ev   Event
	want Belief
}

func won(session uint64, rev int64) Event {
	return Event{Kind: Won, Session: session, Rev: rev}
}

// wonLate is a Campaign that returned nil after its session had ended
// (etcd-io/etcd#19597).
func wonLate(session uint64, rev int64) Event {
	return Event{Kind: Won, Session: session, Rev: rev, SessionDone: true}
}

func ended(session uint64) Event { return Event{Kind: SessionEnded, Session: session} }

var resigned = Event{Kind: Resigned}

func leads(token int64) Belief { return Belief{Leader: true, Token: token} }

var follows = Belief{}

func TestElector(t *testing.T) {
	cases := []struct {
		name  string
		flaw  Flaw
		steps []step
	}{
		{"leads until its session ends", Correct, []step{
			{won(1, 7), leads(7)},
			{ended(1), follows},
			{won(2, 12), leads(12)},
		}},
		{"leads until it resigns, and again in the same session", Correct, []step{
			{won(1, 7), leads(7)},
			{resigned, follows},
			{won(1, 15), leads(15)},
		}},
		{"a campaign that returns after its session ended is no leadership (etcd#19597)", Correct, []step{
			{wonLate(1, 7), follows},
			{ended(1), follows},
			{won(2, 9), leads(9)},
		}},
		{"a win in a session already reported ended is no leadership", Correct, []step{
			{ended(3), follows},
			{won(3, 20), follows},
			{won(4, 22), leads(22)},
		}},
		{"the end of an older session changes nothing", Correct, []step{
			{won(1, 7), leads(7)},
			{ended(1), follows},
			{won(2, 12), leads(12)},
			{ended(1), leads(12)},
			{ended(2), follows},
		}},
		{"a win in an older session changes nothing", Correct, []step{
			{won(2, 12), leads(12)},
			{won(1, 7), leads(12)},
			{ended(2), follows},
			{won(1, 7), follows},
		}},
		{"a resign when not leading changes nothing", Correct, []step{
			{resigned, follows},
			{won(1, 3), leads(3)},
		}},
		{"naive: keeps leading past its session's end", Naive, []step{
			{won(1, 7), leads(7)},
			{ended(1), leads(7)},
			{ended(2), leads(7)},
			{resigned, follows},
		}},
		{"naive: takes a campaign that outlived its session for leadership (etcd#19597)", Naive, []step{
			{wonLate(1, 7), leads(7)},
			{ended(1), leads(7)},
		}},
		{"naive: resigns and wins again", Naive, []step{
			{won(1, 7), leads(7)},
			{resigned, follows},
			{won(2, 11), leads(11)},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := New(c.flaw)
			if err != nil {
				t.Fatal(err)
			}
			if got := e.Belief(); got != follows {
				t.Fatalf("a new elector believes %+v", got)
			}
			for i, s := range c.steps {
				e.Step(s.ev)
				if got := e.Belief(); got != s.want {
					t.Fatalf("step %d (%s %+v): belief %+v, want %+v", i, s.ev.Kind, s.ev, got, s.want)
				}
			}
		})
	}
}

// The two electors, stepped through the same story, part ways exactly
// where the naive one stops looking: a leader whose lease expires while it
// is paused, and a campaign that returns after its session ended.
func TestFlawsPartWays(t *testing.T) {
	story := []Event{won(1, 7), ended(1), wonLate(2, 9)}
	want := map[Flaw][]Belief{
		Correct: {leads(7), follows, follows},
		Naive:   {leads(7), leads(7), leads(9)},
	}
	for flaw, beliefs := range want {
		e, err := New(flaw)
		if err != nil {
			t.Fatal(err)
		}
		for i, ev := range story {
			e.Step(ev)
			if got := e.Belief(); got != beliefs[i] {
				t.Errorf("flaw %q, after %s of session %d: %+v, want %+v", flaw, ev.Kind, ev.Session, got, beliefs[i])
			}
		}
	}
}

func TestParseFlaw(t *testing.T) {
	for s, want := range map[string]Flaw{"": Correct, "naive": Naive} {
		if got, err := ParseFlaw(s); err != nil || got != want {
			t.Errorf("ParseFlaw(%q) = %q, %v", s, got, err)
		}
	}
	for _, s := range []string{"Naive", "correct", "none"} {
		if _, err := ParseFlaw(s); err == nil {
			t.Errorf("ParseFlaw(%q): no error", s)
		}
	}
	if _, err := New("lazy"); err == nil {
		t.Error("New with an unknown flaw: no error")
	}
}
