package lease

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// memSaver is a store's disk in memory; a store opened on it again is the
// store restarted after a kill.
type memSaver struct {
	rec  Record
	fail bool
}

func (m *memSaver) Load() (Record, error) { return m.rec, nil }
func (m *memSaver) Save(r Record) error {
	if m.fail {
		return errors.New("disk full")
	}
	m.rec = r
	return nil
}

// sim is a cluster of electors and one store on fake time, stepped in
// 10 ms steps; each node runs a round every tick, and its requests reach
// the store at once, with three faults: a node cut off (its requests never
// arrive), a deaf node (its requests take effect but their answers are
// lost, as when the store's packets to it are dropped), and a frozen store
// (requests wait and take effect when it thaws, their senders long gone).
// skew is each node's wall clock offset from true time.
type sim struct {
	t       *testing.T
	now     time.Time
	tick    time.Duration
	nodes   []string
	els     map[string]*Elector
	skew    map[string]time.Duration
	cut     map[string]bool
	deaf    map[string]bool
	frozen  bool
	queued  []Request // what reached the frozen store
	saver   *memSaver
	store   *Store
	overlap time.Duration // time with two or more believing they lead
	tokens  map[uint64]string
}

var epoch = time.Unix(1_700_000_000, 0)

func newSim(t *testing.T, n int) *sim {
	s := &sim{
		t: t, now: epoch, tick: 100 * time.Millisecond,
		els: map[string]*Elector{}, skew: map[string]time.Duration{}, cut: map[string]bool{}, deaf: map[string]bool{},
		saver: &memSaver{}, tokens: map[uint64]string{},
	}
	var err error
	if s.store, err = OpenStore(s.saver); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("n%d", i)
		e, err := New(Config{ID: id, Duration: time.Second, RenewDeadline: 700 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		s.nodes = append(s.nodes, id)
		s.els[id] = e
	}
	return s
}

func (s *sim) wall(id string) time.Time { return s.now.Add(s.skew[id]) }

// run steps the cluster for d and checks after every step that no token
// was held by two nodes.
func (s *sim) run(d time.Duration) {
	const step = 10 * time.Millisecond
	for end := s.now.Add(d); s.now.Before(end); s.now = s.now.Add(step) {
		for i, id := range s.nodes {
			// Each node's rounds are offset by a few steps, as real timers are.
			if s.now.Sub(epoch)%s.tick != time.Duration(i)*step {
				continue
			}
			e := s.els[id]
			for more := true; more; {
				sent := s.wall(id)
				req := e.Next(sent)
				switch {
				case s.cut[id]:
				case s.frozen:
					s.queued = append(s.queued, req)
				case s.deaf[id]:
					s.store.Apply(req)
				default:
					resp, err := s.store.Apply(req)
					more = e.Done(req, sent, resp, err == nil)
					continue
				}
				more = e.Done(req, sent, Response{}, false)
			}
		}
		leaders := 0
		for _, id := range s.nodes {
			st := s.els[id].Status(s.wall(id))
			if !st.Leader {
				continue
			}
			leaders++
			if other, ok := s.tokens[st.Token]; ok && other != id {
				s.t.Fatalf("at %s token %d held by %s and %s", s.now.Sub(epoch), st.Token, other, id)
			}
			s.tokens[st.Token] = id
		}
		if leaders > 1 {
			s.overlap += step
		}
	}
}

// thaw lets the frozen store serve what queued up, in arrival order.
func (s *sim) thaw() {
	s.frozen = false
	for _, req := range s.queued {
		s.store.Apply(req)
	}
	s.queued = nil
}

// leader is the one node that believes it leads, "" if none, and fails
// the test if several do.
func (s *sim) leader() string {
	var out []string
	for _, id := range s.nodes {
		if s.els[id].Status(s.wall(id)).Leader {
			out = append(out, id)
		}
	}
	if len(out) > 1 {
		s.t.Fatalf("leaders %v", out)
	}
	if len(out) == 0 {
		return ""
	}
	return out[0]
}

func TestFirstRoundElectsOneAndOthersFollow(t *testing.T) {
	s := newSim(t, 3)
	s.run(500 * time.Millisecond)
	l := s.leader()
	if l == "" {
		t.Fatal("no leader")
	}
	for _, id := range s.nodes {
		st := s.els[id].Status(s.wall(id))
		if st.Holder != l {
			t.Errorf("%s thinks %q holds the lease, not %s", id, st.Holder, l)
		}
	}
	if tok := s.els[l].Status(s.wall(l)).Token; tok != 1 {
		t.Errorf("first token %d", tok)
	}
	s.run(5 * time.Second)
	if s.leader() != l || s.store.rec.Transitions != 1 {
		t.Errorf("leadership moved without a fault: %s, %+v", s.leader(), s.store.rec)
	}
}

// A holder cut off from the store gives up at its renew deadline, before
// the record expires for anyone else: no overlap, and the next holder has
// a higher token.
func TestHolderCutOffStepsDownBeforeTakeover(t *testing.T) {
	s := newSim(t, 3)
	s.run(time.Second)
	old := s.leader()
	oldToken := s.els[old].Status(s.wall(old)).Token
	s.cut[old] = true
	s.run(700 * time.Millisecond)
	if s.leader() != "" {
		t.Fatalf("%s still leads past its renew deadline", s.leader())
	}
	s.run(2 * time.Second)
	l := s.leader()
	if l == "" || l == old {
		t.Fatalf("no takeover: %q", l)
	}
	if tok := s.els[l].Status(s.wall(l)).Token; tok <= oldToken {
		t.Errorf("new token %d after %d", tok, oldToken)
	}
	if s.overlap != 0 {
		t.Errorf("overlap %s", s.overlap)
	}
	s.cut[old] = false
	s.run(2 * time.Second)
	if s.leader() != l {
		t.Errorf("the old holder came back and took over: %s", s.leader())
	}
}

// A node whose clock runs ahead sees a live record as expired and takes
// it over; the old holder leads on until its next renewal fails. This is
// why clock faults refute the lease's exclusive promise, while the
// transitions counter keeps the tokens apart.
func TestClockAheadTakesOverALiveLease(t *testing.T) {
	s := newSim(t, 3)
	s.run(time.Second)
	old := s.leader()
	var fast string
	for _, id := range s.nodes {
		if id != old {
			fast = id
			break
		}
	}
	s.skew[fast] = 5 * time.Second
	s.run(time.Second)
	if s.overlap == 0 {
		t.Fatal("no overlap: the fast clock took nothing over")
	}
	if s.overlap > s.tick {
		t.Errorf("overlap %s: longer than a round", s.overlap)
	}
	if l := s.leader(); l == old {
		t.Errorf("%s still leads", old)
	}
}

// A holder whose renewals land but whose answers are lost renews once
// without knowing it; its next renewal names a version that is gone, so
// the record expires and another node takes over, after the holder's
// deadline and with a higher token. Hearing the store again, the old
// holder follows.
func TestHolderThatCannotHearTheStore(t *testing.T) {
	s := newSim(t, 3)
	s.run(time.Second)
	old := s.leader()
	s.deaf[old] = true
	s.run(3 * time.Second)
	l := s.leader()
	if l == "" || l == old || s.store.rec.Transitions != 2 {
		t.Fatalf("leader %q, record %+v: want a takeover with token 2", l, s.store.rec)
	}
	s.deaf[old] = false
	s.run(time.Second)
	if s.leader() != l {
		t.Errorf("leader %q after the old holder heard the store again, want %s", s.leader(), l)
	}
	if s.overlap != 0 {
		t.Errorf("overlap %s", s.overlap)
	}
}

// A frozen store serves its backlog on thawing: old renewals and takeovers
// land long after they were sent. The versions let at most one of each
// round through; no two leaders, no shared token.
func TestFrozenStoreServesLateRequests(t *testing.T) {
	s := newSim(t, 3)
	s.run(time.Second)
	s.frozen = true
	s.run(3 * time.Second)
	if l := s.leader(); l != "" {
		t.Fatalf("%s leads with the store frozen", l)
	}
	s.thaw()
	s.run(3 * time.Second)
	if s.leader() == "" {
		t.Fatal("no leader after the store thawed")
	}
	if s.overlap != 0 {
		t.Errorf("overlap %s", s.overlap)
	}
}

// The record survives a restart of the store, so tokens keep growing.
func TestStoreRestartKeepsTheRecord(t *testing.T) {
	s := newSim(t, 3)
	s.run(time.Second)
	before := s.store.rec
	var err error
	if s.store, err = OpenStore(s.saver); err != nil {
		t.Fatal(err)
	}
	if s.store.rec != before {
		t.Fatalf("restarted with %+v, had %+v", s.store.rec, before)
	}
	// Long enough for the lease to expire and be taken anew.
	for _, id := range s.nodes {
		s.cut[id] = true
	}
	s.run(2 * time.Second)
	for _, id := range s.nodes {
		s.cut[id] = false
	}
	s.run(time.Second)
	if l := s.leader(); l == "" || s.els[l].Status(s.wall(l)).Token < before.Transitions {
		t.Fatalf("after the restart: leader %q with record %+v, before %+v", l, s.store.rec, before)
	}
	before = s.store.rec
	if s.overlap != 0 {
		t.Errorf("overlap %s", s.overlap)
	}
	s.saver.fail = true
	if resp, err := s.store.Apply(Request{Write: true, Expect: before.Version, Record: Record{Holder: "n9"}}); err == nil || resp.OK {
		t.Fatalf("an unsaved write was acknowledged: %+v", resp)
	}
	if s.store.rec != before {
		t.Errorf("an unsaved write changed the record: %+v", s.store.rec)
	}
}

func TestStoreRefusesAStaleVersion(t *testing.T) {
	st, _ := OpenStore(&memSaver{})
	first, _ := st.Apply(Request{Write: true, Expect: 0, Record: Record{Holder: "n1", Transitions: 1, Version: 41}})
	if !first.OK || first.Record.Version != 1 {
		t.Fatalf("first write %+v (the store sets the version)", first)
	}
	stale, _ := st.Apply(Request{Write: true, Expect: 0, Record: Record{Holder: "n2", Transitions: 1}})
	if stale.OK || stale.Record.Holder != "n1" {
		t.Fatalf("stale write %+v", stale)
	}
	if read, _ := st.Apply(Request{}); !read.OK || read.Record != first.Record {
		t.Fatalf("read %+v", read)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{Duration: time.Second, RenewDeadline: time.Millisecond},
		{ID: "n1", Duration: time.Second},
		{ID: "n1", Duration: time.Second, RenewDeadline: time.Second},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}
