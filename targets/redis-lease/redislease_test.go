package redislease

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"
)

// fakeRedis is the part of Redis the elector uses, in memory: strings
// with a TTL on Redis's own clock, expired lazily as Redis does.
type fakeRedis struct {
	keys map[string]entry
}

type entry struct {
	value   string
	expires time.Time // zero: no TTL
}

func newFakeRedis() *fakeRedis { return &fakeRedis{keys: map[string]entry{}} }

func (r *fakeRedis) live(key string, now time.Time) (entry, bool) {
	e, ok := r.keys[key]
	// Redis drops a key once its clock is past the expiry time.
	if ok && !e.expires.IsZero() && now.After(e.expires) {
		delete(r.keys, key)
		return entry{}, false
	}
	return e, ok
}

// do carries out req at now, as the node's driver has Redis do it.
func (r *fakeRedis) do(req Request, now time.Time) Answer {
	switch req.Op {
	case Acquire: // the script: SET NX PX, and INCR if it took
		if _, held := r.live(req.Key, now); held {
			return Answer{}
		}
		r.keys[req.Key] = entry{value: req.Value, expires: now.Add(req.TTL)}
		c, _ := r.live(req.Counter, now)
		n, _ := strconv.ParseUint(c.value, 10, 64) // a missing counter is 0
		n++
		r.keys[req.Counter] = entry{value: strconv.FormatUint(n, 10)}
		return Answer{Token: n}
	case Get:
		e, _ := r.live(req.Key, now)
		return Answer{Holder: e.value}
	case Expire:
		e, ok := r.live(req.Key, now)
		if ok {
			e.expires = now.Add(req.TTL)
			r.keys[req.Key] = e
		}
		return Answer{Set: ok}
	}
	panic(fmt.Sprintf("unknown op %d", req.Op))
}

const (
	ttl   = time.Second
	renew = 300 * time.Millisecond
	step  = 10 * time.Millisecond
)

var epoch = time.Unix(1_700_000_000, 0)

// sim is a cluster of electors and one Redis on fake time, stepped in
// 10 ms steps; each node runs a round every renew interval, and its
// requests reach Redis at once. Faults: a node cut off from Redis (its
// requests fail), a frozen node (it takes no rounds and nobody can ask it
// anything; a crashed node is one that never thaws), and Redis down
// (every request fails).
type sim struct {
	t      *testing.T
	now    time.Time
	nodes  []string
	els    map[string]*Elector
	redis  *fakeRedis
	down   bool
	cut    map[string]bool
	frozen map[string]bool
	// overlap is the time during which two or more nodes that can be
	// asked believed they led.
	overlap time.Duration
	// claims are the nodes that took each token, in order.
	claims map[uint64][]string
}

func newSim(t *testing.T, n int) *sim {
	s := &sim{
		t: t, now: epoch, els: map[string]*Elector{}, redis: newFakeRedis(),
		cut: map[string]bool{}, frozen: map[string]bool{}, claims: map[uint64][]string{},
	}
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("n%d", i)
		s.nodes = append(s.nodes, id)
		s.start(id)
	}
	return s
}

// start gives id a fresh elector: a node started or restarted.
func (s *sim) start(id string) {
	e, err := New(Config{ID: id, Key: "leader", TTL: ttl})
	if err != nil {
		s.t.Fatal(err)
	}
	s.els[id] = e
}

// send is one request of id's and its answer.
func (s *sim) send(id string) (more bool) {
	e := s.els[id]
	req := e.Next()
	if s.down || s.cut[id] {
		return e.Done(req, Answer{}, false)
	}
	was := e.Status()
	more = e.Done(req, s.redis.do(req, s.now), true)
	if st := e.Status(); st.Leader && !was.Leader {
		s.claims[st.Token] = append(s.claims[st.Token], id)
	}
	return more
}

// round is one round of id's, as its ticker starts it.
func (s *sim) round(id string) {
	for s.send(id) {
	}
}

// run steps the cluster for d.
func (s *sim) run(d time.Duration) {
	for end := s.now.Add(d); s.now.Before(end); s.now = s.now.Add(step) {
		for i, id := range s.nodes {
			// Each node's rounds are offset by a step, as real timers are.
			if !s.frozen[id] && s.now.Sub(epoch)%renew == time.Duration(i)*step {
				s.round(id)
			}
		}
		if len(s.leaders()) > 1 {
			s.overlap += step
		}
	}
}

// leaders are the nodes that can be asked and believe they lead.
func (s *sim) leaders() []string {
	var out []string
	for _, id := range s.nodes {
		if !s.frozen[id] && s.els[id].Status().Leader {
			out = append(out, id)
		}
	}
	return out
}

// leader is the one leader, "" if none, and fails the test if several.
func (s *sim) leader() string {
	l := s.leaders()
	if len(l) > 1 {
		s.t.Fatalf("at %s leaders %v", s.now.Sub(epoch), l)
	}
	if len(l) == 0 {
		return ""
	}
	return l[0]
}

// token is id's token while it leads; 0 otherwise, and for no node ("").
func (s *sim) token(id string) uint64 {
	if e, ok := s.els[id]; ok {
		return e.Status().Token
	}
	return 0
}

func TestRound(t *testing.T) {
	me, other := "n1", "n2"
	type reply struct {
		a  Answer
		ok bool
	}
	for _, tc := range []struct {
		name    string
		leading bool
		replies []reply // one per request of the round
		want    []Op    // the round's requests
		lead    bool
	}{
		{"acquire takes", false, []reply{{Answer{Token: 5}, true}}, []Op{Acquire}, true},
		{"acquire finds it held", false, []reply{{Answer{}, true}}, []Op{Acquire}, false},
		{"acquire unanswered", false, []reply{{Answer{}, false}}, []Op{Acquire}, false},
		{"renewal", true, []reply{{Answer{Holder: me}, true}, {Answer{Set: true}, true}}, []Op{Get, Expire}, true},
		{"lock taken by another", true, []reply{{Answer{Holder: other}, true}}, []Op{Get}, false},
		{"lock expired", true, []reply{{Answer{}, true}}, []Op{Get}, false},
		{"get unanswered", true, []reply{{Answer{}, false}}, []Op{Get}, false},
		{"lock gone before the expire", true, []reply{{Answer{Holder: me}, true}, {Answer{Set: false}, true}}, []Op{Get, Expire}, false},
		{"expire unanswered", true, []reply{{Answer{Holder: me}, true}, {Answer{}, false}}, []Op{Get, Expire}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(Config{ID: me, Key: "k", TTL: ttl})
			if err != nil {
				t.Fatal(err)
			}
			if tc.leading {
				e.Done(e.Next(), Answer{Token: 7}, true)
			}
			var got []Op
			for i, more := 0, true; more; i++ {
				req := e.Next()
				got = append(got, req.Op)
				more = e.Done(req, tc.replies[i].a, tc.replies[i].ok)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("requests %v, want %v", got, tc.want)
			}
			if st := e.Status(); st.Leader != tc.lead || (st.Leader && st.Token == 0) {
				t.Errorf("status %+v, want leader %v", st, tc.lead)
			}
		})
	}
}

func TestAcquireNamesWhatTheScriptNeeds(t *testing.T) {
	e, _ := New(Config{ID: "n3", Key: "elect", TTL: 1500 * time.Millisecond})
	want := Request{Op: Acquire, Key: "elect", Counter: "elect:token", Value: "n3", TTL: 1500 * time.Millisecond}
	if got := e.Next(); got != want {
		t.Errorf("acquire %+v, want %+v", got, want)
	}
}

func TestHealthyClusterHasOneLeader(t *testing.T) {
	s := newSim(t, 5)
	s.run(renew)
	l := s.leader()
	if l == "" || s.token(l) != 1 {
		t.Fatalf("after one round: leader %q with token %d", l, s.token(l))
	}
	for range 100 {
		s.run(100 * time.Millisecond)
		if got := s.leader(); got != l {
			t.Fatalf("at %s the leader is %q, was %s, with no fault", s.now.Sub(epoch), got, l)
		}
	}
	if len(s.claims) != 1 {
		t.Errorf("tokens taken: %v", s.claims)
	}
}

// A holder that stops renewing loses the lock one TTL after its last
// renewal, and another node takes it with the next token. A holder cut
// off from Redis steps down at its next renewal, before the lock expires:
// no overlap, as long as a failing request fails within TTL less a renew
// interval.
func TestFailoverWhenTheHolderStopsAnswering(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(s *sim, id string)
	}{
		{"cut off from redis", func(s *sim, id string) { s.cut[id] = true }},
		{"crashed", func(s *sim, id string) { s.frozen[id] = true }},
		{"restarted", func(s *sim, id string) { s.start(id) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, 3)
			s.run(time.Second)
			old := s.leader()
			tc.fault(s, old)
			s.run(ttl + 2*renew)
			if l := s.leader(); l == "" || s.token(l) != 2 {
				t.Fatalf("after %s's fault: leader %q with token %d, want a new one with token 2", old, l, s.token(l))
			}
			if s.overlap != 0 {
				t.Errorf("overlap %s", s.overlap)
			}
		})
	}
}

// The flaw: a holder frozen for longer than the TTL wakes believing it
// leads, while another node took the expired lock meanwhile. Woken between
// rounds, its overdue renewal's GET finds the other's name and it steps
// down: two leaders for the round trip of one GET, which the node API can
// be asked in. Woken between its GET and its PEXPIRE, it extends the
// other's lock, takes that for a renewal and leads on until its next
// round's GET, up to a renew interval later.
func TestFrozenHolderWakesLeading(t *testing.T) {
	for _, tc := range []struct {
		name string
		// midRound freezes the holder after a GET that found its name.
		midRound bool
		// leadersAfterRound are the leaders once the woken holder's
		// first round is done.
		leadersAfterRound int
	}{
		{"frozen between rounds", false, 1},
		{"frozen between GET and PEXPIRE", true, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, 3)
			s.run(time.Second)
			old := s.leader()
			if tc.midRound && !s.send(old) {
				t.Fatal("the holder's GET did not call for a PEXPIRE")
			}
			s.frozen[old] = true
			s.run(ttl + 2*renew)
			l := s.leader()
			if l == "" || s.token(l) != 2 {
				t.Fatalf("no takeover while %s was frozen: leader %q", old, l)
			}

			s.frozen[old] = false
			if got := s.leaders(); len(got) != 2 || s.token(old) != 1 {
				t.Fatalf("woken: leaders %v, %s's token %d; want %s with token 1 and %s", got, old, s.token(old), old, l)
			}
			s.round(old) // the tick that fell due while it was frozen
			if got := s.leaders(); len(got) != tc.leadersAfterRound {
				t.Fatalf("after the woken holder's round: leaders %v, want %d", got, tc.leadersAfterRound)
			}
			s.run(renew + step)
			if got := s.leaders(); len(got) != 1 || got[0] != l {
				t.Fatalf("one renew interval later: leaders %v, want %s alone", got, l)
			}
			if (s.overlap > 0) != tc.midRound || s.overlap > renew {
				t.Errorf("overlap %s after the woken holder's first round", s.overlap)
			}
			// The tokens still tell the two apart: a fenced resource
			// refuses the woken holder once the new one has written.
			if len(s.claims[1]) != 1 || len(s.claims[2]) != 1 {
				t.Errorf("tokens taken: %v", s.claims)
			}
		})
	}
}

// Redis is killed and restarted. With every write persisted, the counter
// survives and tokens keep growing. Without persistence, as caches run,
// Redis comes back empty: the counter starts again at 1 and the next
// leader takes a token that another node already took, lower than the
// last one.
func TestRedisRestart(t *testing.T) {
	for _, tc := range []struct {
		name    string
		persist bool
		want    uint64 // the first token after the restart
	}{
		{"persisted", true, 3},
		{"volatile", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, 3)
			s.run(time.Second)
			// A failover, so two tokens were taken; the first holder stays
			// cut off, so that another node takes the token after the restart.
			first := s.leader()
			s.cut[first] = true
			s.run(ttl + 2*renew)
			if l := s.leader(); l == "" || s.token(l) != 2 {
				t.Fatalf("no failover: leader %q", l)
			}

			s.down = true
			s.run(2 * ttl)
			if l := s.leader(); l != "" {
				t.Fatalf("%s leads with Redis down", l)
			}
			if !tc.persist {
				s.redis = newFakeRedis()
			}
			s.down = false
			s.run(renew)

			l := s.leader()
			if l == "" || s.token(l) != tc.want {
				t.Fatalf("after the restart: leader %q with token %d, want token %d", l, s.token(l), tc.want)
			}
			c := s.claims[tc.want]
			if reused := len(c) == 2 && c[0] != c[1]; reused == tc.persist {
				t.Errorf("token %d taken by %v", tc.want, s.claims[tc.want])
			}
			if s.overlap != 0 {
				t.Errorf("overlap %s", s.overlap)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{Key: "k", TTL: ttl},
		{ID: "n1", TTL: ttl},
		{ID: "n1", Key: "k"},
		{ID: "n1", Key: "k", TTL: time.Microsecond},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}
