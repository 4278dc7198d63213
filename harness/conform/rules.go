package conform

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/splitbrain/splitbrain/contract"
)

// Verdict is a rule's: it held, it broke, or it could not be judged.
type Verdict string

const (
	Pass Verdict = "pass"
	Fail Verdict = "FAIL"
	// Skip is a rule that could not be judged: what it stands on (a
	// single leader to write through) failed first.
	Skip Verdict = "skip"
)

// Result is one rule's verdict, and what was seen: the evidence of a
// pass, the first breach of a failure.
type Result struct {
	Rule    string
	Verdict Verdict
	Detail  string
}

// rules are judged, and printed, in this order. Their names are stable:
// scripts and JUnit reports know them.
var rules = []struct {
	name  string
	judge func(Observation) (Verdict, string)
}{
	{"health", health},
	{"leader-shape", leaderShape},
	{"one-leader", oneLeader},
	{"tokens-monotonic", tokensMonotonic},
	{"leader-write", leaderWrite},
	{"follower-409", follower409},
	{"fenced-412", fenced412},
	{"leader-latency", leaderLatency},
	{"watch", watch},
	{"own-data", ownData},
}

// Rules names every rule, in order.
func Rules() []string {
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = r.name
	}
	return names
}

// Judge judges every rule over what was observed.
func Judge(o Observation) []Result {
	out := make([]Result, len(rules))
	for i, r := range rules {
		v, detail := r.judge(o)
		out[i] = Result{Rule: r.name, Verdict: v, Detail: detail}
	}
	return out
}

func pass(format string, args ...any) (Verdict, string) { return Pass, fmt.Sprintf(format, args...) }
func fail(format string, args ...any) (Verdict, string) { return Fail, fmt.Sprintf(format, args...) }
func skip(format string, args ...any) (Verdict, string) { return Skip, fmt.Sprintf(format, args...) }

// health: GET /health answers 200 on every node.
func health(o Observation) (Verdict, string) {
	for _, n := range o.Nodes {
		if a := o.Health[n]; a.Status != http.StatusOK {
			return fail("%s answered GET /health with %s", n, a.said())
		}
	}
	return pass("%d of %d nodes answer 200", len(o.Nodes), len(o.Nodes))
}

// leaderShape: every answer to GET /leader is 200 and a JSON object of
// the node's own name, a boolean "leader", an integer "token" (a leader's
// above 0) and a string "leader_id" if any. An answer that never came is
// leader-latency's.
func leaderShape(o Observation) (Verdict, string) {
	answers := 0
	for _, r := range o.Rounds {
		for _, n := range o.Nodes {
			a := r.Answers[n]
			if a.Status == 0 {
				continue
			}
			answers++
			if a.Status != http.StatusOK {
				return fail("%s answered GET /leader at %s with %s", n, secs(a.At), a.said())
			}
			if _, err := a.belief(n); err != nil {
				return fail("%s at %s: %v: %s", n, secs(a.At), err, quote(a.Body))
			}
		}
	}
	return pass("%d answers from %d nodes, each field of its JSON type", answers, len(o.Nodes))
}

// oneLeader: a single node claims to lead within the target's reaction,
// and in every round after it that node, and no other.
func oneLeader(o Observation) (Verdict, string) {
	first := slices.IndexFunc(o.Rounds, func(r Round) bool { return len(r.leaders(o.Nodes)) == 1 })
	if first < 0 {
		said := "nobody was asked"
		if len(o.Rounds) > 0 {
			last := o.Rounds[len(o.Rounds)-1]
			said = fmt.Sprintf("in the last round, at %s, %s", secs(last.At), whoLeads(last.leaders(o.Nodes), ""))
		}
		return fail("no single leader within the target's reaction of %s, nor after: %s", o.Reaction, said)
	}
	r := o.Rounds[first]
	leader := r.leaders(o.Nodes)[0]
	if r.At > o.Reaction {
		return fail("%s led first at %s, past the target's reaction of %s", leader, secs(r.At), o.Reaction)
	}
	for _, later := range o.Rounds[first+1:] {
		if ls := later.leaders(o.Nodes); len(ls) != 1 || ls[0] != leader {
			return fail("%s led from %s, but at %s %s, with no fault", leader, secs(r.At), secs(later.At), whoLeads(ls, leader))
		}
	}
	return pass("%s led from %s (the target's reaction: %s), the only leader in the %d rounds after", leader, secs(r.At), o.Reaction, len(o.Rounds)-first-1)
}

// whoLeads says who a round saw lead, for a message.
func whoLeads(leaders []string, was string) string {
	switch {
	case len(leaders) == 0 && was != "":
		return "no node led (" + was + " gave no answer or followed)"
	case len(leaders) == 0:
		return "no node led"
	case len(leaders) == 1:
		return leaders[0] + " led instead"
	}
	return strings.Join(leaders, " and ") + " led at once"
}

// tokensMonotonic: a node's token, while it leads, never goes back: not
// from one GET /leader to the next, nor along its watch.
func tokensMonotonic(o Observation) (Verdict, string) {
	var held []string
	for _, n := range o.Nodes {
		var polled, watched []token
		for _, r := range o.Rounds {
			if b, _ := r.Answers[n].belief(n); b.claims() {
				polled = append(polled, token{b.Token, "GET /leader at " + secs(r.Answers[n].At)})
			}
		}
		for _, l := range o.Streams[n].Lines {
			if b, _, err := readLine(n, l.Body); err == nil && b.claims() {
				watched = append(watched, token{b.Token, "its watch, " + secs(l.Arrived) + " into it"})
			}
		}
		// Each is judged apart: a watch's lines and the polls interleave
		// by when conform read them, not by when the node sent them.
		for _, ts := range [][]token{polled, watched} {
			if back := wentBack(ts); back != "" {
				return fail("%s said %s", n, back)
			}
		}
		if lo, hi := bounds(append(polled, watched...)); lo >= 0 {
			held = append(held, n+" "+span(lo, hi))
		}
	}
	if len(held) == 0 {
		return pass("no node claimed a token")
	}
	return pass("no node's token went back: %s", strings.Join(held, ", "))
}

// token is one token a node gave, and where.
type token struct {
	n     int64
	where string
}

// wentBack says where the first token below the one before it came, or "".
func wentBack(ts []token) string {
	for i := 1; i < len(ts); i++ {
		if ts[i].n < ts[i-1].n {
			return fmt.Sprintf("token %d (%s), then %d (%s)", ts[i-1].n, ts[i-1].where, ts[i].n, ts[i].where)
		}
	}
	return ""
}

func bounds(ts []token) (lo, hi int64) {
	if len(ts) == 0 {
		return -1, -1
	}
	lo, hi = ts[0].n, ts[0].n
	for _, t := range ts {
		lo, hi = min(lo, t.n), max(hi, t.n)
	}
	return lo, hi
}

func span(lo, hi int64) string {
	if lo == hi {
		return fmt.Sprintf("%d", lo)
	}
	return fmt.Sprintf("%d..%d", lo, hi)
}

// leaderWrite: the leader answers a write 200 {"ok":true,"token":N} with
// its own token, and the resource holds the value with that token, from
// that node (the stale-token checker matches the writer to the token's
// claimant).
func leaderWrite(o Observation) (Verdict, string) {
	p := o.Leader
	if p == nil {
		return skip("no single leader to write through (see one-leader)")
	}
	if p.Answer.Status != http.StatusOK {
		return fail("%s, the leader, answered a write with %s", p.Node, p.Answer.said())
	}
	ans, err := readObject(p.Answer.Body)
	if err != nil {
		return fail("%s answered a write with 200 but %v", p.Node, err)
	}
	if ok, _, err := ans.boolean("ok", required); err != nil || !ok {
		return fail("%s answered a write with 200 %s: want \"ok\": true", p.Node, quote(p.Answer.Body))
	}
	n, _, err := ans.integer("token", required)
	if err != nil {
		return fail("%s answered a write with 200 %s: %v", p.Node, quote(p.Answer.Body), err)
	}
	var around []token
	for _, a := range p.Around {
		if b, err := a.belief(p.Node); err == nil && b.claims() {
			around = append(around, token{b.Token, ""})
		}
	}
	own := ", its own token"
	if lo, hi := bounds(around); lo < 0 {
		own = " (its token by GET /leader did not read: see leader-shape)"
	} else if n < lo || n > hi {
		return fail("%s answered a write with token %d, but its GET /leader said %s just before and after", p.Node, n, span(lo, hi))
	}
	if h := p.Held; h.Value != p.Value || h.Token != n || h.Node != p.Node {
		return fail("%s answered a write of %q with token %d, but the resource holds %q with token %d from %q", p.Node, p.Value, n, h.Value, h.Token, h.Node)
	}
	return pass("%s answered %s%s, and the resource holds the value with token %d from %s", p.Node, p.Answer.said(), own, n, p.Node)
}

// follower409: a node that does not lead answers a write 409
// {"error":"not-leader"} and writes nothing.
func follower409(o Observation) (Verdict, string) {
	if len(o.Followers) == 0 {
		return skip("no node followed (see one-leader)")
	}
	var nodes []string
	for _, p := range o.Followers {
		if p.Answer.Status != http.StatusConflict {
			return fail("%s, a follower, answered a write with %s", p.Node, p.Answer.said())
		}
		if err := errorIs(p.Answer, contract.ErrNotLeader); err != nil {
			return fail("%s, a follower, answered a write with 409 but %v", p.Node, err)
		}
		if p.Held.Seq != 0 {
			return fail("%s, a follower, answered a write with 409, but the resource took it with token %d", p.Node, p.Held.Token)
		}
		nodes = append(nodes, p.Node)
	}
	return pass("%s answered 409 {\"error\":\"not-leader\"} and wrote nothing", strings.Join(nodes, ", "))
}

// fenced412: the leader answers a write the resource refused 412
// {"error":"fenced",...}, its "token" and "current" integers if given.
func fenced412(o Observation) (Verdict, string) {
	p := o.Fenced
	if p == nil {
		return skip("no single leader to write through (see one-leader)")
	}
	if p.Answer.Status != http.StatusPreconditionFailed {
		return fail("%s answered %s to a write the resource refused (conform had written the key with token %d first)", p.Node, p.Answer.said(), p.Planted)
	}
	if err := errorIs(p.Answer, contract.ErrFenced); err != nil {
		return fail("%s answered a refused write with 412 but %v", p.Node, err)
	}
	ans, _ := readObject(p.Answer.Body) // errorIs read it
	for _, f := range []string{"token", "current"} {
		if _, _, err := ans.integer(f, optional); err != nil {
			return fail("%s answered a refused write with 412 %s: %v", p.Node, quote(p.Answer.Body), err)
		}
	}
	return pass("%s answered %s to a write the resource refused below token %d", p.Node, p.Answer.said(), p.Planted)
}

// ownData: a target that declares its own register (own_data) answers a
// write of it through the leader 200 {"ok":true}, the leader reads the
// value back, and every other node reads it too or refuses (409
// not-leader) within dataSettle.
func ownData(o Observation) (Verdict, string) {
	if !o.OwnData {
		return pass("not declared (own_data): the target keeps no register of its own for the harness to check")
	}
	p := o.Data
	if p == nil {
		return skip("no single leader to write through (see one-leader)")
	}
	var w contract.DataAnswer
	if p.Write.Status != http.StatusOK || json.Unmarshal(p.Write.Body, &w) != nil || !w.OK {
		return fail("%s, the leader, answered POST %s with %s: want 200 {\"ok\":true}", p.Node, contract.DataPath, p.Write.said())
	}
	if !p.holds(p.Read) {
		return fail("%s acknowledged a write of %q to its own store, then answered its read with %s", p.Node, p.Value, p.Read.said())
	}
	var held, refused []string
	for _, node := range o.Nodes {
		a, asked := p.Reads[node]
		switch {
		case !asked:
		case p.holds(a):
			held = append(held, node)
		case a.Status == http.StatusConflict && errorIs(a, contract.ErrNotLeader) == nil:
			refused = append(refused, node)
		default:
			return fail("%s still answered a read of %q, which %s acknowledged, with %s after %s", node, p.Key, p.Node, a.said(), secs(dataSettle))
		}
	}
	return pass("%s acknowledged a write to its own store and read it back; %d other nodes read it, %d refused as not leading", p.Node, len(held), len(refused))
}

// errorIs checks that a refusal's body is {"error": want, ...}.
func errorIs(a Answer, want string) error {
	ans, err := readObject(a.Body)
	if err != nil {
		return err
	}
	if got, _, err := ans.text("error", required); err != nil || got != want {
		return fmt.Errorf("%s: want \"error\": %q", quote(a.Body), want)
	}
	return nil
}

// leaderLatency: every GET /leader is answered, all but one of each
// node's within giveUp, and all but one in lateShare within latencyBound.
// One answer past giveUp costs a run one round in which the node seems
// silent, and a loaded machine makes one now and then; a node that makes
// two is slow.
func leaderLatency(o Observation) (Verdict, string) {
	var all []time.Duration
	for _, n := range o.Nodes {
		var took []time.Duration
		late := 0
		var dropped *Answer
		for _, r := range o.Rounds {
			a := r.Answers[n]
			switch {
			case a.Status == 0:
				return fail("%s gave no answer to GET /leader at %s: %s", n, secs(a.At), a.Err)
			case a.Took > giveUp && dropped != nil:
				return fail("%s took %s to answer GET /leader at %s and %s at %s: the observer drops an answer after %s, and takes the node for silent; one such answer may be the machine's",
					n, ms(dropped.Took), secs(dropped.At), ms(a.Took), secs(a.At), giveUp)
			case a.Took > giveUp:
				dropped = &a
				late++
			case a.Took > latencyBound:
				late++
			}
			took = append(took, a.Took)
		}
		if late > len(took)/lateShare {
			return fail("%d of %s's %d answers took longer than %s, the slowest %s: only one in %d may (the observer polls every %s)",
				late, n, len(took), latencyBound, ms(slices.Max(took)), lateShare, pollEvery)
		}
		all = append(all, took...)
	}
	if len(all) == 0 {
		return skip("no node was asked")
	}
	slices.Sort(all)
	return pass("%d answers: median %s, slowest %s (bounds: %s, one in %d up to %s)",
		len(all), ms(all[len(all)/2]), ms(all[len(all)-1]), latencyBound, lateShare, giveUp)
}

// watch: a node that serves the watch streams lines that read as its
// beliefs, each with an integer "at" above 0 that never goes back and the
// same "boot", the first at once and none more than silence after the
// one before; a node that answers 404 or 405 serves none, and is polled.
func watch(o Observation) (Verdict, string) {
	var served, polled []string
	lines := 0
	for _, n := range o.Nodes {
		s := o.Streams[n]
		switch s.Status {
		case http.StatusNotFound, http.StatusMethodNotAllowed:
			polled = append(polled, n)
			continue
		case 0:
			return fail("%s gave no answer to GET %s: %s", n, contract.WatchPath, s.Err)
		case http.StatusOK:
		default:
			return fail("%s answered GET %s with %d: want 200, or 404 from a node that serves no watch", n, contract.WatchPath, s.Status)
		}
		if err := judgeStream(n, s); err != nil {
			return fail("%s's watch: %v", n, err)
		}
		served = append(served, n)
		lines += len(s.Lines)
	}
	if len(served) == 0 {
		return pass("not served, polled instead")
	}
	detail := fmt.Sprintf("%s streamed %d lines, well-formed and in order", strings.Join(served, ", "), lines)
	if len(polled) > 0 {
		detail += "; " + strings.Join(polled, ", ") + ": not served, polled instead"
	}
	return pass("%s", detail)
}

func judgeStream(node string, s Stream) error {
	if len(s.Lines) == 0 {
		return fmt.Errorf("no line in %s (%s)", watchFor, s.Err)
	}
	var (
		prevAt  int64
		prevArr time.Duration
		boot    int64
	)
	for i, l := range s.Lines {
		if gap := l.Arrived - prevArr; gap > silence {
			return fmt.Errorf("line %d came %s after the one before (or the request): the observer takes a watch silent that long for a frozen node", i+1, ms(gap))
		}
		_, stamp, err := readLine(node, l.Body)
		if err != nil {
			return fmt.Errorf("line %d: %v: %s", i+1, err, quote(l.Body))
		}
		switch {
		case stamp.at < prevAt:
			return fmt.Errorf("line %d went back: \"at\" %d after %d", i+1, stamp.at, prevAt)
		case i > 0 && stamp.boot != boot:
			return fmt.Errorf("line %d changed \"boot\" from %d to %d", i+1, boot, stamp.boot)
		}
		prevAt, prevArr, boot = stamp.at, l.Arrived, stamp.boot
	}
	if s.Err != "" {
		return fmt.Errorf("%s: a watch lasts as long as its request", s.Err)
	}
	return nil
}

// stamp is when a watch line's belief was held, on the node's clock.
type stamp struct{ at, boot int64 }

// readLine reads a watch line: a belief, an integer "at" above 0 and an
// integer "boot".
func readLine(node string, body []byte) (Belief, stamp, error) {
	o, err := readObject(body)
	if err != nil {
		return Belief{}, stamp{}, err
	}
	b, err := readBelief(node, o)
	var st stamp
	if err == nil {
		st.at, _, err = o.integer("at", required)
	}
	if err == nil && st.at <= 0 {
		err = fmt.Errorf("\"at\" is %d: want the node's monotonic clock in ns, above 0", st.at)
	}
	if err == nil {
		st.boot, _, err = o.integer("boot", required)
	}
	return b, st, err
}

// leaders are the nodes whose answer in r says they lead.
func (r Round) leaders(nodes []string) []string {
	var out []string
	for _, n := range nodes {
		if b, _ := r.Answers[n].belief(n); b.Leader {
			out = append(out, n)
		}
	}
	return out
}

// belief reads a's body as node's answer to GET /leader.
func (a Answer) belief(node string) (Belief, error) {
	if a.Status != http.StatusOK {
		return Belief{}, fmt.Errorf("answered %s, not 200", a.said())
	}
	o, err := readObject(a.Body)
	if err != nil {
		return Belief{}, err
	}
	return readBelief(node, o)
}

// said is what a node answered, for a message.
func (a Answer) said() string {
	if a.Status == 0 {
		return "no answer (" + a.Err + ")"
	}
	if body := quote(a.Body); body != "" {
		return fmt.Sprintf("%d %s", a.Status, body)
	}
	return fmt.Sprintf("%d", a.Status)
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
