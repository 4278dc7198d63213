package zkelection

import (
	"slices"
	"testing"
	"time"
)

const bound = time.Second

// at is a moment, in ms from an origin: the elector only subtracts them.
func at(ms int) time.Time { return time.Unix(1000, 0).Add(time.Duration(ms) * time.Millisecond) }

// live is a connection on which a server accepted session s; cut, one
// the client lost and is trying to get back, still in s.
func live(s int64) Conn { return Conn{Session: s, Live: true} }
func cut(s int64) Conn  { return Conn{Session: s} }

// step is something that happened at a moment (nil: nothing), then the
// belief asked for at that moment with the connection as it was.
type step struct {
	ms   int
	do   func(e *Elector)
	conn Conn
	want Belief
}

func won(session, token int64) func(*Elector) {
	return func(e *Elector) { e.Won(session, token) }
}

func heard(session int64, sentMs int) func(*Elector) {
	return func(e *Elector) { e.Heard(session, at(sentMs)) }
}

func lost(e *Elector) { e.Lost() }

func leads(token int64) Belief { return Belief{Leader: true, Token: token} }

var follows = Belief{}

func TestElector(t *testing.T) {
	cases := []struct {
		name  string
		flaw  Flaw
		steps []step
	}{
		{"leads once ZooKeeper confirms a request after the win, until the bound", Correct, []step{
			{0, won(7, 100), live(7), follows},
			{10, heard(7, 5), live(7), leads(100)},
			{1004, nil, live(7), leads(100)},
			{1005, nil, live(7), follows},
			{1010, heard(7, 1000), live(7), leads(100)},
		}},
		{"a disconnected client proves nothing, however recent its last answer", Correct, []step{
			{0, won(7, 100), live(7), follows},
			{1, heard(7, 0), live(7), leads(100)},
			{2, nil, cut(7), follows},
			{3, nil, live(7), leads(100)},
		}},
		{"thawed after a freeze longer than the bound, it believes nothing until it hears again", Correct, []step{
			{0, won(7, 100), live(7), follows},
			{100, heard(7, 90), live(7), leads(100)},
			// Frozen from 100 to 5100: the connection still looks live.
			{5100, nil, live(7), follows},
			// An answer to a request sent before the freeze.
			{5101, heard(7, 95), live(7), follows},
			{5120, heard(7, 5101), live(7), leads(100)},
		}},
		{"an answer never moves the last confirmed request back", Correct, []step{
			{0, won(7, 100), live(7), follows},
			{900, heard(7, 800), live(7), leads(100)},
			{901, heard(7, 200), live(7), leads(100)},
			{1799, nil, live(7), leads(100)},
			{1800, nil, live(7), follows},
		}},
		{"requests of another session prove nothing", Correct, []step{
			{0, won(7, 100), live(7), follows},
			{10, heard(8, 5), live(7), follows},
			{20, heard(7, 15), live(7), leads(100)},
		}},
		{"a new session ends the leadership won in the old one", Correct, []step{
			{0, won(7, 100), live(7), follows},
			{10, heard(7, 5), live(7), leads(100)},
			{20, nil, live(0), follows},
			{30, nil, live(9), follows},
			{40, heard(9, 35), live(9), follows},
			{50, won(9, 130), live(9), follows},
			{60, heard(9, 55), live(9), leads(130)},
		}},
		{"answers before a win prove nothing for it", Correct, []step{
			{0, heard(7, 0), live(7), follows},
			{10, won(7, 100), live(7), follows},
		}},
		{"lost: the znode is gone", Correct, []step{
			{0, won(7, 100), live(7), follows},
			{10, heard(7, 5), live(7), leads(100)},
			{20, lost, live(7), follows},
			{30, heard(7, 25), live(7), follows},
		}},
		{"naive: leads from the win, through a lost connection and any silence", Naive, []step{
			{0, won(7, 100), live(7), leads(100)},
			{10, nil, cut(7), leads(100)},
			{60000, nil, cut(7), leads(100)},
			{60001, nil, live(7), leads(100)},
		}},
		{"naive: stops once told its session expired", Naive, []step{
			{0, won(7, 100), live(7), leads(100)},
			{10, nil, cut(7), leads(100)},
			{5000, nil, cut(0), follows},
			{5010, nil, live(9), follows},
			{5020, won(9, 130), live(9), leads(130)},
			{5030, lost, live(9), follows},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := New(c.flaw, bound)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range c.steps {
				if s.do != nil {
					s.do(e)
				}
				if got := e.Belief(at(s.ms), s.conn); got != s.want {
					t.Fatalf("step %d (at %d ms, %+v): belief %+v, want %+v", i, s.ms, s.conn, got, s.want)
				}
			}
		})
	}
}

func TestNew(t *testing.T) {
	if _, err := New("sloppy", bound); err == nil {
		t.Error("an unknown flaw was accepted")
	}
	if _, err := New(Correct, 0); err == nil {
		t.Error("a zero bound was accepted")
	}
	for _, s := range []string{"", "naive"} {
		f, err := ParseFlaw(s)
		if err != nil || string(f) != s {
			t.Errorf("ParseFlaw(%q) = %q, %v", s, f, err)
		}
	}
}

func TestSeq(t *testing.T) {
	for name, want := range map[string]int64{
		"n1-0000000000":  0,
		"n12-0000000042": 42,
		"0000000007":     7,
	} {
		if got, ok := Seq(name); !ok || got != want {
			t.Errorf("Seq(%q) = %d, %v; want %d", name, got, ok, want)
		}
	}
	for _, name := range []string{"", "lock", "n1-00000x0001", "n1-000001"} {
		if got, ok := Seq(name); ok {
			t.Errorf("Seq(%q) = %d, want none", name, got)
		}
	}
}

func TestQueue(t *testing.T) {
	// Sorted by sequence, not by name: n10 sorts before n2 by name.
	children := []string{"n2-0000000011", "n10-0000000003", "stray", "n1-0000000009", "n2-0000000004"}
	want := []string{"n10-0000000003", "n2-0000000004", "n1-0000000009", "n2-0000000011"}
	if got := Queue(children); !slices.Equal(got, want) {
		t.Errorf("Queue = %v, want %v", got, want)
	}
	if got := Mine(children, "n2-"); !slices.Equal(got, []string{"n2-0000000004", "n2-0000000011"}) {
		t.Errorf("Mine(n2-) = %v", got)
	}
	if got := Mine(children, "n1-"); !slices.Equal(got, []string{"n1-0000000009"}) {
		t.Errorf("Mine(n1-) = %v: n10's znodes are not n1's", got)
	}

	for _, c := range []struct {
		mine       string
		pred       string
		lowest, ok bool
	}{
		{"n10-0000000003", "", true, true},
		{"n1-0000000009", "n2-0000000004", false, true},
		{"n2-0000000011", "n1-0000000009", false, true},
		{"n3-0000000001", "", false, false},
	} {
		pred, lowest, ok := Place(children, c.mine)
		if pred != c.pred || lowest != c.lowest || ok != c.ok {
			t.Errorf("Place(%s) = %q, %v, %v; want %q, %v, %v", c.mine, pred, lowest, ok, c.pred, c.lowest, c.ok)
		}
	}
}
