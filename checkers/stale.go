package checkers

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/splitbrain/splitbrain/history"
)

// kv names one write: the workload gives every write its own value, so key
// and value join the history's writes to the resource's decisions. Should a
// value repeat, its writes share one record, and the record is judged only
// where sharing can hide a finding but never invent one.
type kv struct{ key, value string }

// write is the history's side of one write: positions of its events (-1:
// none) and the seqs at which the resource first accepted and refused it
// (0: never).
type write struct {
	kv
	invoke, done, ok, fail int // done: the first completion of any kind
	completions            int // more than one: the value was reused
	accepted, refused      int64
}

// claimer is a node that claimed a token, and the position of its first
// claim.
type claimer struct {
	node string
	pos  int
}

// staleFinding is one violation of StaleToken. d is a decision position
// (-1 for findings about the history alone), w a write record (-1: none),
// other the decision that set the higher token (stale-token-accepted) or
// the first claim of the token (token-of-another-node).
type staleFinding struct {
	kind      string
	at, order int64
	d, w      int
	other     int
}

func (f staleFinding) when() (int64, int64) { return f.at, f.order }

// StaleToken checks the resource's decisions, its ground truth, in seq
// order:
//   - stale-token-accepted: a write accepted with a token lower than one
//     already accepted for its key (what a strict fence refuses);
//   - token-of-another-node: a write accepted with a token that, in the
//     history, only other nodes ever claimed;
//   - token-never-claimed: a write accepted with a token that nobody ever
//     claimed, its own node included, though that node answered the write
//     (with another token, or a failure): a forged token, or a broken
//     token source (the seeds' "fencing token forgery"). A write whose
//     answer was lost is not flagged: a node can win a term and write
//     before any observation sees it, and the lost answer was its claim;
//   - ok-not-accepted: a write the node acknowledged that the resource
//     never accepted (the node said ok for a write that did not happen);
//   - fail-but-accepted: a write the node answered as failed that the
//     resource accepted (it did happen).
//
// With an empty resource log there is no ground truth: the result is
// Unknown if the history holds acknowledged writes, and Valid otherwise.
// A violation's Time is when its write was sent; for a decision the
// history has no write for, the latest send time of any earlier decision
// (the decision certainly came after that).
//
// Figures: accepted, refused, keys, acknowledged (ok writes in the
// history), stale_accepted, token_of_another_node, token_never_claimed,
// ok_not_accepted, fail_but_accepted, violations.
func StaleToken(in Input) Result {
	h, res := in.History, in.Resource
	writes, index, claims, acked := historyWrites(h, len(res))

	order := make([]int, len(res))
	for i := range order {
		order[i] = i
	}
	if !slices.IsSortedFunc(res, func(a, b history.Decision) int { return cmp.Compare(a.Seq, b.Seq) }) {
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(res[a].Seq, res[b].Seq) })
	}

	type top struct {
		token int64
		pos   int // the decision that accepted it, -1: none yet
	}
	tops := map[string]top{}
	var fs []staleFinding
	var accepted, refused, stale, another, never int
	var after int64 // every later decision came after this time
	for _, di := range order {
		d := &res[di]
		at, wi := after, -1
		if j, ok := index[kv{d.Key, d.Value}]; ok {
			wi = j
			if w := &writes[j]; w.invoke >= 0 {
				at = h[w.invoke].Time
				after = max(after, at)
			}
		}
		t, seen := tops[d.Key]
		if !seen {
			t = top{pos: -1}
		}
		if !d.Accepted {
			refused++
			if wi >= 0 && writes[wi].refused == 0 {
				writes[wi].refused = d.Seq
			}
			tops[d.Key] = t
			continue
		}
		accepted++
		if wi >= 0 && writes[wi].accepted == 0 {
			writes[wi].accepted = d.Seq
		}
		if t.pos >= 0 && d.Token < t.token {
			stale++
			fs = append(fs, staleFinding{kind: "stale-token-accepted", at: at, order: d.Seq, d: di, w: wi, other: t.pos})
		}
		if t.pos < 0 || d.Token > t.token {
			t = top{token: d.Token, pos: di}
		}
		tops[d.Key] = t
		if cs := claims[d.Token]; d.Token > 0 && !slices.ContainsFunc(cs, func(c claimer) bool { return c.node == d.Node }) {
			switch {
			case len(cs) > 0:
				another++
				fs = append(fs, staleFinding{kind: "token-of-another-node", at: at, order: d.Seq, d: di, w: wi, other: cs[0].pos})
			case wi >= 0 && writes[wi].done >= 0 && h[writes[wi].done].Type != history.Info:
				never++
				fs = append(fs, staleFinding{kind: "token-never-claimed", at: at, order: d.Seq, d: di, w: wi, other: writes[wi].done})
			}
		}
	}

	var okNot, failAcc int
	for j := range writes {
		w := &writes[j]
		switch {
		case w.ok >= 0 && w.accepted == 0 && len(res) > 0:
			okNot++
			fs = append(fs, staleFinding{kind: "ok-not-accepted", at: h[w.ok].Time, order: h[w.ok].Index, d: -1, w: j})
		case w.fail >= 0 && w.accepted != 0 && w.completions == 1:
			failAcc++
			fs = append(fs, staleFinding{kind: "fail-but-accepted", at: h[w.fail].Time, order: h[w.fail].Index, d: -1, w: j})
		}
	}

	r := Result{Valid: Valid, Figures: map[string]float64{
		"accepted":              float64(accepted),
		"refused":               float64(refused),
		"keys":                  float64(len(tops)),
		"acknowledged":          float64(acked),
		"stale_accepted":        float64(stale),
		"token_of_another_node": float64(another),
		"token_never_claimed":   float64(never),
		"ok_not_accepted":       float64(okNot),
		"fail_but_accepted":     float64(failAcc),
		"violations":            float64(len(fs)),
	}}
	var why string
	switch {
	case len(fs) > 0:
		r.Valid = Invalid
	case len(res) == 0 && acked > 0:
		r.Valid = Unknown
		why = fmt.Sprintf("The resource log is empty: %d acknowledged writes cannot be checked against ground truth.", acked)
	case len(res) == 0:
		why = "No write reached the resource: nothing to check."
	}
	sd := staleDescriber{h: h, res: res, writes: writes, index: index, claims: claims}
	r.Violations = describeFirst(fs, sd.describe)
	r.Note = notes(why, capNote(len(fs), "violations"))
	return r
}

// historyWrites gathers the history's writes by key and value, the nodes
// that claimed each token, and how many writes were acknowledged.
func historyWrites(h []history.Event, hint int) (writes []write, index map[kv]int, claims map[int64][]claimer, acked int) {
	// Sized for one write per decision: the big map must not grow by
	// doubling through a million writes.
	writes = make([]write, 0, hint)
	index = make(map[kv]int, hint)
	claims = map[int64][]claimer{}
	ops := opTracker{}
	open := map[int]int{} // process -> record of its open write: one lookup by key and value per write, not two
	for i := range h {
		inv := ops.see(h, i)
		e := &h[i]
		if e.Token > 0 && beliefOf(h, i, inv) == leads {
			cs := claims[e.Token]
			if !slices.ContainsFunc(cs, func(c claimer) bool { return c.node == e.Node }) {
				claims[e.Token] = append(cs, claimer{e.Node, i})
			}
		}
		if e.Type == history.Leader || e.Type == history.Nemesis || !isWrite(h, i, inv) {
			continue
		}
		j, ok := -1, false
		if e.Type != history.Invoke && inv >= 0 {
			j, ok = open[e.Process]
			delete(open, e.Process)
		}
		if !ok {
			k := kv{e.Key, e.Value}
			if inv >= 0 {
				k.key = cmp.Or(k.key, h[inv].Key)
				k.value = cmp.Or(k.value, h[inv].Value)
			}
			if k.value == "" {
				continue // nothing to join on
			}
			if j, ok = index[k]; !ok {
				j = len(writes)
				index[k] = j
				writes = append(writes, write{kv: k, invoke: -1, done: -1, ok: -1, fail: -1})
			}
		}
		w := &writes[j]
		switch e.Type {
		case history.Invoke:
			if w.invoke < 0 {
				w.invoke = i
			}
			open[e.Process] = j
			continue
		case history.OK:
			acked++
			if w.ok < 0 {
				w.ok = i
			}
		case history.Fail:
			if w.fail < 0 {
				w.fail = i
			}
		}
		if w.done < 0 {
			w.done = i
		}
		w.completions++
	}
	return writes, index, claims, acked
}

// staleDescriber turns StaleToken's findings into violations.
type staleDescriber struct {
	h      []history.Event
	res    []history.Decision
	writes []write
	index  map[kv]int
	claims map[int64][]claimer
}

// writeOf is the history's record of decision d's write, or one with no
// events.
func (s staleDescriber) writeOf(d *history.Decision) write {
	if j, ok := s.index[kv{d.Key, d.Value}]; ok {
		return s.writes[j]
	}
	return write{invoke: -1, done: -1, ok: -1, fail: -1}
}

// events lists the history indices of w's events.
func (s staleDescriber) events(ws ...write) []int64 {
	var out []int64
	for _, w := range ws {
		for _, p := range []int{w.invoke, w.done, w.ok, w.fail} {
			if p >= 0 {
				out = append(out, s.h[p].Index)
			}
		}
	}
	return out
}

func (s staleDescriber) sent(w write) string {
	if w.invoke < 0 {
		return "not in the history"
	}
	return "sent at " + secs(s.h[w.invoke].Time)
}

func (s staleDescriber) describe(f staleFinding) Violation {
	h := s.h
	v := Violation{Kind: f.kind, Time: f.at}
	addNode := func(n string) {
		if n != "" && !slices.Contains(v.Nodes, n) {
			v.Nodes = append(v.Nodes, n)
		}
	}
	switch f.kind {
	case "stale-token-accepted":
		d, o := &s.res[f.d], &s.res[f.other]
		w, ow := s.writeOf(d), s.writeOf(o)
		v.Message = fmt.Sprintf("%s's write of %s with token %d (seq %d, %s) was accepted after %s's write with token %d (seq %d, %s) had been; %s",
			d.Node, d.Key, d.Token, d.Seq, s.sent(w), o.Node, o.Token, o.Seq, s.sent(ow), fenceClause(d.Mode))
		v.Seqs = []int64{o.Seq, d.Seq}
		v.Events = sortedUnique(s.events(w, ow))
		addNode(d.Node)
		addNode(o.Node)
	case "token-of-another-node":
		d, c := &s.res[f.d], &h[f.other]
		w := s.writeOf(d)
		var names []string
		for _, cl := range s.claims[d.Token] {
			names = append(names, cl.node)
		}
		by := fmt.Sprintf("%s (%s, event %d at %s)", c.Node, source(c), c.Index, secs(c.Time))
		if len(names) > 1 {
			by = fmt.Sprintf("%s (first by %s)", strings.Join(names, " and "), by)
		}
		v.Message = fmt.Sprintf("%s's write of %s with token %d (seq %d, %s) was accepted, but token %d was claimed only by %s, never by %s",
			d.Node, d.Key, d.Token, d.Seq, s.sent(w), d.Token, by, d.Node)
		v.Seqs = []int64{d.Seq}
		v.Events = sortedUnique(append(s.events(w), c.Index))
		addNode(d.Node)
		for _, n := range names {
			addNode(n)
		}
	case "token-never-claimed":
		d, a := &s.res[f.d], &h[f.other]
		w := s.writeOf(d)
		answer := fmt.Sprintf("ok with token %d", a.Token)
		if a.Type == history.Fail {
			answer = "failed: " + cmp.Or(a.Error, "no reason given")
		}
		v.Message = fmt.Sprintf("%s's write of %s with token %d (seq %d, %s) was accepted, but token %d was never claimed, by %s or any node: %s's own answer to the write (event %d at %s) was %s. A forged token, or a broken token source",
			d.Node, d.Key, d.Token, d.Seq, s.sent(w), d.Token, d.Node, d.Node, a.Index, secs(a.Time), answer)
		v.Seqs = []int64{d.Seq}
		v.Events = sortedUnique(s.events(w))
		addNode(d.Node)
	case "ok-not-accepted":
		w := s.writes[f.w]
		e := &h[w.ok]
		what := "has no record of it"
		if w.refused != 0 {
			what = fmt.Sprintf("refused it (seq %d)", w.refused)
			v.Seqs = []int64{w.refused}
		}
		v.Message = fmt.Sprintf("%s acknowledged the write of %s = %s (event %d at %s), but the resource %s: the node said ok for a write that never took effect",
			e.Node, w.key, w.value, e.Index, secs(e.Time), what)
		v.Events = sortedUnique(s.events(write{invoke: w.invoke, done: -1, ok: w.ok, fail: -1}))
		addNode(e.Node)
	case "fail-but-accepted":
		w := s.writes[f.w]
		e := &h[w.fail]
		v.Message = fmt.Sprintf("%s answered that the write of %s = %s failed (event %d at %s: %s), but the resource accepted it (seq %d): the write took effect",
			e.Node, w.key, w.value, e.Index, secs(e.Time), cmp.Or(e.Error, "no reason given"), w.accepted)
		v.Seqs = []int64{w.accepted}
		v.Events = sortedUnique(s.events(write{invoke: w.invoke, done: -1, ok: -1, fail: w.fail}))
		addNode(e.Node)
	}
	return v
}

func fenceClause(mode string) string {
	switch mode {
	case "unfenced":
		return "the resource was unfenced, and a strict fence would have refused it"
	case "strict":
		return "the resource was in strict mode and should have refused it"
	}
	return "a fence would have refused it"
}
