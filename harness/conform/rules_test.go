package conform

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/contract"
)

var nodes = []string{"n1", "n2", "n3"}

// answer is a node's answer of status with body, 2 ms after it was asked.
func answer(at time.Duration, status int, body string) Answer {
	return Answer{At: at, Took: 2 * time.Millisecond, Status: status, Body: []byte(body)}
}

// belief is the /leader answer of a node: n1 leads with token 7.
func belief(node string, at time.Duration) Answer {
	if node == "n1" {
		return answer(at, http.StatusOK, `{"node":"n1","leader":true,"token":7,"leader_id":"n1"}`)
	}
	return answer(at, http.StatusOK, fmt.Sprintf(`{"node":%q,"leader":false,"leader_id":"n1"}`, node))
}

// conforming is what conform sees of three nodes that keep every rule:
// n1 leads from the first round with token 7, and every node serves the
// watch.
func conforming() Observation {
	o := Observation{Nodes: nodes, Reaction: 2 * time.Second, Health: map[string]Answer{}, Streams: map[string]Stream{}}
	for _, n := range nodes {
		o.Health[n] = answer(0, http.StatusOK, "")
		var s Stream
		s.Status = http.StatusOK
		for i := range 60 {
			at := time.Duration(i) * pollEvery
			s.Lines = append(s.Lines, Line{Arrived: at, Body: []byte(strings.TrimSuffix(string(belief(n, 0).Body), "}") + fmt.Sprintf(`,"at":%d,"boot":77}`, 1000+int64(at)))})
		}
		o.Streams[n] = s
	}
	for i := range 60 {
		at := time.Duration(i) * pollEvery
		r := Round{At: at, Answers: map[string]Answer{}}
		for _, n := range nodes {
			r.Answers[n] = belief(n, at)
		}
		o.Rounds = append(o.Rounds, r)
	}
	o.Leader = &WriteProbe{
		Node: "n1", Key: "conform-leader", Value: "conform-leader-by-n1",
		Answer: answer(3*time.Second, http.StatusOK, `{"ok":true,"token":7,"seq":1}`),
		Around: []Answer{belief("n1", 3*time.Second), belief("n1", 3*time.Second)},
		Held:   contract.Register{Value: "conform-leader-by-n1", Token: 7, Node: "n1", Seq: 1},
	}
	o.Fenced = &WriteProbe{
		Node: "n1", Key: "conform-fenced", Value: "conform-fenced-by-n1", Planted: 7 + plantAbove,
		Answer: answer(3*time.Second, http.StatusPreconditionFailed, fmt.Sprintf(`{"error":"fenced","token":7,"current":%d}`, 7+plantAbove)),
		Held:   contract.Register{Value: "conform-fenced-planted", Token: 7 + plantAbove, Node: "conform", Seq: 2},
	}
	for _, n := range nodes[1:] {
		o.Followers = append(o.Followers, WriteProbe{
			Node: n, Key: "conform-follower-" + n, Value: "conform-follower-" + n + "-by-" + n,
			Answer: answer(3*time.Second, http.StatusConflict, `{"error":"not-leader","leader_id":"n1"}`),
		})
	}
	return o
}

// setLeader makes every /leader answer of node from round from on body.
func setLeader(o *Observation, node string, from int, body string) {
	for i := from; i < len(o.Rounds); i++ {
		a := o.Rounds[i].Answers[node]
		a.Body = []byte(body)
		o.Rounds[i].Answers[node] = a
	}
}

func TestConformingObservationPassesEveryRule(t *testing.T) {
	for _, r := range Judge(conforming()) {
		if r.Verdict != Pass {
			t.Errorf("%s: %s %s", r.Rule, r.Verdict, r.Detail)
		}
	}
}

// A loaded machine may delay one answer past the observer's patience.
func TestOneAnswerPastGiveUpIsForgiven(t *testing.T) {
	o := conforming()
	o.Rounds[7].Answers["n3"] = Answer{At: time.Second, Took: 250 * time.Millisecond, Status: http.StatusOK, Body: belief("n3", 0).Body}
	for _, r := range Judge(o) {
		if r.Verdict != Pass {
			t.Errorf("%s: %s %s", r.Rule, r.Verdict, r.Detail)
		}
	}
}

// Each breach fails its rule alone, and says what was seen.
func TestEachBreachFailsItsRule(t *testing.T) {
	for _, tc := range []struct {
		name   string
		breach func(o *Observation)
		rule   string
		says   string
		skips  []string
	}{
		{"unhealthy", func(o *Observation) { o.Health["n2"] = answer(0, http.StatusServiceUnavailable, "starting") },
			"health", "n2 answered GET /health with 503 starting", nil},
		{"string token", func(o *Observation) { setLeader(o, "n1", 5, `{"node":"n1","leader":true,"token":"7"}`) },
			"leader-shape", `n1 at 0.25 s: "token" is the string "7", not an integer`, nil},
		{"fractional token", func(o *Observation) { setLeader(o, "n1", 5, `{"node":"n1","leader":true,"token":7.5}`) },
			"leader-shape", `"token" is the number 7.5, not an integer`, nil},
		{"exponent token", func(o *Observation) { setLeader(o, "n1", 5, `{"node":"n1","leader":true,"token":7e0}`) },
			"leader-shape", `"token" is the number 7e0, not an integer`, nil},
		{"leader without token", func(o *Observation) { setLeader(o, "n1", 5, `{"node":"n1","leader":true}`) },
			"leader-shape", `"token" is missing`, nil},
		{"leader with token 0", func(o *Observation) { setLeader(o, "n1", 5, `{"node":"n1","leader":true,"token":0}`) },
			"leader-shape", `a leader's token must be above 0`, nil},
		{"leader as a string", func(o *Observation) { setLeader(o, "n2", 0, `{"node":"n2","leader":"false"}`) },
			"leader-shape", `"leader" is the string "false", not a boolean`, nil},
		{"another node's name", func(o *Observation) { setLeader(o, "n2", 0, `{"node":"node-2","leader":false}`) },
			"leader-shape", `"node" is "node-2", not the node's own name "n2"`, nil},
		{"leader_id a number", func(o *Observation) { setLeader(o, "n2", 0, `{"node":"n2","leader":false,"leader_id":1}`) },
			"leader-shape", `"leader_id" is the number 1, not a string`, nil},
		{"not an object", func(o *Observation) { setLeader(o, "n3", 0, `["n3",false]`) },
			"leader-shape", "not a JSON object but an array", nil},
		{"leader late", func(o *Observation) {
			setLeader(o, "n1", 0, `{"node":"n1","leader":false}`)
			setLeader(o, "n1", 50, string(belief("n1", 0).Body))
		}, "one-leader", "n1 led first at 2.50 s, past the target's reaction of 2s", nil},
		{"two leaders", func(o *Observation) { setLeader(o, "n2", 30, `{"node":"n2","leader":true,"token":8}`) },
			"one-leader", "n1 led from 0.00 s, but at 1.50 s n1 and n2 led at once", nil},
		{"leader lost", func(o *Observation) { setLeader(o, "n1", 30, `{"node":"n1","leader":false}`) },
			"one-leader", "at 1.50 s no node led", nil},
		{"token back", func(o *Observation) { setLeader(o, "n1", 40, `{"node":"n1","leader":true,"token":6}`) },
			"tokens-monotonic", "n1 said token 7 (GET /leader at 1.95 s), then 6 (GET /leader at 2.00 s)", nil},
		{"write answered 409", func(o *Observation) { o.Leader.Answer = answer(0, http.StatusConflict, `{"error":"not-leader"}`) },
			"leader-write", `n1, the leader, answered a write with 409 {"error":"not-leader"}`, nil},
		{"write not ok", func(o *Observation) { o.Leader.Answer = answer(0, http.StatusOK, `{"ok":"yes","token":7}`) },
			"leader-write", `want "ok": true`, nil},
		{"write with another token", func(o *Observation) { o.Leader.Answer = answer(0, http.StatusOK, `{"ok":true,"token":8}`) },
			"leader-write", "answered a write with token 8, but its GET /leader said 7 just before and after", nil},
		{"write never reached the resource", func(o *Observation) { o.Leader.Held = contract.Register{} },
			"leader-write", `the resource holds "" with token 0 from ""`, nil},
		{"follower answers 200", func(o *Observation) { o.Followers[1].Answer = answer(0, http.StatusOK, `{"ok":true,"token":0}`) },
			"follower-409", `n3, a follower, answered a write with 200 {"ok":true,"token":0}`, nil},
		{"follower says another error", func(o *Observation) { o.Followers[0].Answer = answer(0, http.StatusConflict, `{"error":"no"}`) },
			"follower-409", `want "error": "not-leader"`, nil},
		{"follower wrote", func(o *Observation) { o.Followers[0].Held = contract.Register{Token: 3, Seq: 4} },
			"follower-409", "but the resource took it with token 3", nil},
		{"412 swallowed", func(o *Observation) { o.Fenced.Answer = answer(0, http.StatusOK, `{"ok":true,"token":7}`) },
			"fenced-412", `n1 answered 200 {"ok":true,"token":7} to a write the resource refused`, nil},
		{"412 with a string token", func(o *Observation) {
			o.Fenced.Answer = answer(0, http.StatusPreconditionFailed, `{"error":"fenced","token":"7"}`)
		}, "fenced-412", `"token" is the string "7", not an integer`, nil},
		{"slow answers", func(o *Observation) {
			for i := range 7 {
				o.Rounds[7+i].Answers["n2"] = Answer{At: time.Second, Took: 150 * time.Millisecond, Status: http.StatusOK, Body: belief("n2", 0).Body}
			}
		}, "leader-latency", "7 of n2's 60 answers took longer than 100ms, the slowest 150.0 ms: only one in 10 may", nil},
		{"two answers too slow", func(o *Observation) {
			o.Rounds[7].Answers["n3"] = Answer{At: time.Second, Took: 250 * time.Millisecond, Status: http.StatusOK, Body: belief("n3", 0).Body}
			o.Rounds[9].Answers["n3"] = Answer{At: 2 * time.Second, Took: 300 * time.Millisecond, Status: http.StatusOK, Body: belief("n3", 0).Body}
		}, "leader-latency", "n3 took 250.0 ms to answer GET /leader at 1.00 s and 300.0 ms at 2.00 s: the observer drops an answer after 200ms", nil},
		{"no answer", func(o *Observation) {
			o.Rounds[7].Answers["n3"] = Answer{At: time.Second, Took: time.Second, Err: "timeout"}
		},
			"leader-latency", "n3 gave no answer to GET /leader at 1.00 s: timeout", nil},
		{"watch goes back", func(o *Observation) {
			s := o.Streams["n2"]
			s.Lines[10].Body = []byte(`{"node":"n2","leader":false,"at":5,"boot":77}`)
			o.Streams["n2"] = s
		}, "watch", "n2's watch: line 11 went back", nil},
		{"watch changes boot", func(o *Observation) {
			s := o.Streams["n3"]
			s.Lines[10].Body = []byte(`{"node":"n3","leader":false,"at":999999999,"boot":78}`)
			o.Streams["n3"] = s
		}, "watch", `line 11 changed "boot" from 77 to 78`, nil},
		{"watch falls silent", func(o *Observation) {
			s := o.Streams["n1"]
			s.Lines = append(s.Lines[:10:10], Line{Arrived: 3 * time.Second, Body: s.Lines[10].Body})
			o.Streams["n1"] = s
		}, "watch", "line 11 came 2550.0 ms after the one before", nil},
		{"watch ends", func(o *Observation) {
			s := o.Streams["n1"]
			s.Err = "the node ended the stream after 1.00 s"
			o.Streams["n1"] = s
		}, "watch", "the node ended the stream", nil},
		{"no leader at all", func(o *Observation) {
			setLeader(o, "n1", 0, `{"node":"n1","leader":false}`)
			o.Leader, o.Fenced = nil, nil
		}, "one-leader", "no single leader within the target's reaction of 2s, nor after: in the last round, at 2.95 s, no node led", []string{"leader-write", "fenced-412"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := conforming()
			tc.breach(&o)
			for _, r := range Judge(o) {
				switch {
				case r.Rule == tc.rule && (r.Verdict != Fail || !strings.Contains(r.Detail, tc.says)):
					t.Errorf("%s: %s %s\nwant FAIL saying %s", r.Rule, r.Verdict, r.Detail, tc.says)
				case r.Rule != tc.rule && slices.Contains(tc.skips, r.Rule) && r.Verdict != Skip:
					t.Errorf("%s: %s %s, want skip", r.Rule, r.Verdict, r.Detail)
				case r.Rule != tc.rule && !slices.Contains(tc.skips, r.Rule) && r.Verdict != Pass:
					t.Errorf("%s: %s %s, want pass", r.Rule, r.Verdict, r.Detail)
				}
			}
		})
	}
}

// A node that serves no watch is polled, and passes; a leader_id or a
// follower's token left null is read as a Go client reads it; one slow
// answer in ten is a loaded machine's.
func TestWhatStillPasses(t *testing.T) {
	o := conforming()
	for i := range 6 {
		o.Rounds[7+i].Answers["n2"] = Answer{At: time.Second, Took: 150 * time.Millisecond, Status: http.StatusOK, Body: belief("n2", 0).Body}
	}
	o.Streams["n2"] = Stream{Status: http.StatusNotFound}
	setLeader(&o, "n3", 0, `{"node":"n3","leader":false,"token":null,"leader_id":null,"extra":[1]}`)
	for _, r := range Judge(o) {
		if r.Verdict != Pass {
			t.Errorf("%s: %s %s", r.Rule, r.Verdict, r.Detail)
		}
		if r.Rule == "watch" && !strings.Contains(r.Detail, "n2: not served, polled instead") {
			t.Errorf("watch: %s", r.Detail)
		}
	}
	for n, s := range o.Streams {
		s.Status = http.StatusNotFound
		o.Streams[n] = s
	}
	if v, detail := watch(o); v != Pass || detail != "not served, polled instead" {
		t.Errorf("watch of nodes that serve none: %s %s", v, detail)
	}
}

// The own-data rule: undeclared passes as not served; declared, the
// leader's write and read and the others' reads decide.
func TestOwnData(t *testing.T) {
	probe := func(write, read string, others map[string]Answer) *DataProbe {
		return &DataProbe{Node: "n1", Key: "conform-data", Value: "conform-data-by-n1",
			Write: answer(0, http.StatusOK, write), Read: answer(0, http.StatusOK, read), Reads: others}
	}
	held := answer(0, http.StatusOK, `{"value":"conform-data-by-n1"}`)
	refused := answer(0, http.StatusConflict, `{"error":"not-leader"}`)
	stale := answer(0, http.StatusOK, `{"value":""}`)
	tests := []struct {
		name    string
		own     bool
		probe   *DataProbe
		verdict Verdict
		says    string
	}{
		{"not declared", false, nil, Pass, "not declared"},
		{"no leader", true, nil, Skip, "no single leader"},
		{"held everywhere", true, probe(`{"ok":true}`, `{"value":"conform-data-by-n1"}`, map[string]Answer{"n2": held, "n3": refused}), Pass, "1 other nodes read it, 1 refused"},
		{"write not ok", true, probe(`{}`, `{"value":"conform-data-by-n1"}`, nil), Fail, "want 200"},
		{"leader lost it", true, probe(`{"ok":true}`, `{"value":"other"}`, nil), Fail, "then answered its read"},
		{"a node never sees it", true, probe(`{"ok":true}`, `{"value":"conform-data-by-n1"}`, map[string]Answer{"n2": held, "n3": stale}), Fail, "n3 still answered"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := conforming()
			o.OwnData, o.Data = tc.own, tc.probe
			v, detail := ownData(o)
			if v != tc.verdict || !strings.Contains(detail, tc.says) {
				t.Errorf("%s: %s, want %s saying %q", v, detail, tc.verdict, tc.says)
			}
		})
	}
}
