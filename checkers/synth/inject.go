package synth

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/history"
)

// Kind is a violation Inject can plant.
type Kind string

// The kinds, each named after what its checker reports.
const (
	// DuplicateToken: a follower claims the token of the sole leader.
	DuplicateToken Kind = "duplicate-token"
	// TokenRegressed: a leader claims the token of its previous leadership.
	TokenRegressed Kind = "token-regressed"
	// StaleAccepted: the resource accepted a write it fenced, and the node
	// acknowledged it.
	StaleAccepted Kind = "stale-token-accepted"
	// LongOverlap: a partitioned old leader believes it leads for longer
	// than Config.Bound after its successor is elected.
	LongOverlap Kind = "overlap"
	// StaleRead: a read returns the value before one acknowledged before
	// the read began.
	StaleRead Kind = "stale-read"
	// NoRecovery: the run goes on after a last fault with no leader at all
	// for longer than Config.Recovery after its heal.
	NoRecovery Kind = "no-recovery"
	// ForgedToken: the resource accepted an acknowledged write with a
	// token nobody ever claimed (the node answered with its own).
	ForgedToken Kind = "token-never-claimed"
	// ShortOverlap: in a pushed run that keeps an exclusive promise (Push,
	// Overlap 0), a partitioned old leader steps down 5 to 40 ms after
	// its successor was elected, less than an interval: polls would
	// likely miss it, pushed lines date it. Its checker reports an
	// overlap.
	ShortOverlap Kind = "short-overlap"
)

// Kinds lists every Kind.
var Kinds = []Kind{DuplicateToken, TokenRegressed, StaleAccepted, LongOverlap, StaleRead, NoRecovery, ForgedToken, ShortOverlap}

// Proof is where an injected violation is: a report of it must cite these
// history indices and resource seqs among its evidence.
type Proof struct {
	Kind   Kind
	Events []int64
	Seqs   []int64
}

// ErrNoRoom says the run has no place for the violation asked for (too
// short, say, or without a fenced write); another seed or size may have.
var ErrNoRoom = errors.New("synth: no place in this run for that violation")

// Inject plants one violation of kind k, at a place rng picks, and says
// where it is. Events keep their indices, except after LongOverlap and
// ShortOverlap, which remove some (and ShortOverlap moves some) and number
// the rest again. A run takes one injection.
//
// In a pushed run (Config.Push) TokenRegressed finds no place: its claim
// must be asked after the higher token's was answered, and every line of
// a watch counts as asked when its stream was opened. ShortOverlap finds
// a place only there, and only when Overlap is 0.
func (r *Run) Inject(k Kind, rng *rand.Rand) (Proof, error) {
	if r.injected {
		return Proof{}, errors.New("synth: the run already holds an injected violation")
	}
	var p Proof
	var err error
	switch k {
	case DuplicateToken:
		p.Events, err = r.duplicateToken(rng)
	case TokenRegressed:
		p.Events, err = r.tokenRegressed(rng)
	case StaleAccepted:
		p.Events, p.Seqs, err = r.staleAccepted(rng)
	case LongOverlap:
		p.Events, err = r.longOverlap(rng)
	case StaleRead:
		p.Events, err = r.staleRead(rng)
	case NoRecovery:
		p.Events = r.noRecovery(rng)
	case ForgedToken:
		p.Events, p.Seqs, err = r.forgedToken(rng)
	case ShortOverlap:
		p.Events, err = r.shortOverlap(rng)
	default:
		return Proof{}, fmt.Errorf("synth: unknown violation %q", k)
	}
	if err != nil {
		return Proof{}, fmt.Errorf("%w: %s", err, k)
	}
	r.injected = true
	p.Kind = k
	return p, nil
}

// pick returns a random element of cands, or ErrNoRoom.
func pick[T any](rng *rand.Rand, cands []T) (T, error) {
	if len(cands) == 0 {
		var zero T
		return zero, ErrNoRoom
	}
	return cands[rng.IntN(len(cands))], nil
}

// sole is the time in which term k's leader is the only node that leads or
// is faulted, two intervals in from either side.
func (r *Run) sole(k int) (from, to int64) {
	from, to = r.terms[k].start, r.end
	if k > 0 {
		from = max(from, r.terms[k-1].end, r.faults[k-1].heal)
	}
	if k < len(r.faults) {
		to = r.faults[k].at
	}
	iv := int64(r.Config.Interval)
	return from + 2*iv, to - 2*iv
}

// soleTerm is the term in which an event sent at sent and answered at
// done falls inside the sole window, or -1.
func (r *Run) soleTerm(sent, done int64) int {
	k := r.termAt(sent)
	if k < 0 {
		return -1
	}
	if from, to := r.sole(k); sent < from || done > to {
		return -1
	}
	return k
}

func answered(e *history.Event) bool { return e.Type == history.Leader && e.Error == "" }

// pushedLine says whether e is a line of a watch.
func pushedLine(e *history.Event) bool { return answered(e) && e.At > 0 }

// when is the span in which e's belief was read: a poll's round trip, or
// the instant a pushed line was sampled.
func (r *Run) when(e *history.Event) (from, to int64) {
	if pushedLine(e) && r.watches != nil {
		t := r.watchOf(e.Node).trueTime(e.At)
		return t, t
	}
	return e.Sent, e.Time
}

// watchOf is the watch of the node named name.
func (r *Run) watchOf(name string) *watch { return &r.watches[slices.Index(r.names, name)] }

// duplicateToken makes a follower's answer claim the sole leader's token.
func (r *Run) duplicateToken(rng *rand.Rand) ([]int64, error) {
	var cands []int
	for i := range r.History {
		e := &r.History[i]
		if !answered(e) || e.IsLeader {
			continue
		}
		if k := r.soleTerm(r.when(e)); k >= 0 && r.names[r.terms[k].node] != e.Node {
			cands = append(cands, i)
		}
	}
	i, err := pick(rng, cands)
	if err != nil {
		return nil, err
	}
	e := &r.History[i]
	from, _ := r.when(e)
	e.IsLeader, e.Token, e.LeaderID = true, r.terms[r.termAt(from)].token, e.Node
	return []int64{e.Index}, nil
}

// tokenRegressed makes a leader answer with the token of its previous
// leadership, after a claim of its current one was answered.
func (r *Run) tokenRegressed(rng *rand.Rand) ([]int64, error) {
	prev := make([]int64, len(r.terms)) // the token of the leader's previous term
	last := map[int]int64{}
	for k, t := range r.terms {
		prev[k] = last[t.node]
		last[t.node] = t.token
	}
	answer := map[int64]int64{} // token -> the first answer claiming it
	var cands []int
	for i := range r.History {
		e := &r.History[i]
		tok := claim(e)
		if tok == 0 {
			continue
		}
		if first, ok := answer[tok]; !ok {
			answer[tok] = e.Time
		} else if e.Type == history.Leader && first < e.Sent {
			if k := r.soleTerm(e.Sent, e.Time); k >= 0 && r.terms[k].token == tok && prev[k] > 0 {
				cands = append(cands, i)
			}
		}
	}
	i, err := pick(rng, cands)
	if err != nil {
		return nil, err
	}
	e := &r.History[i]
	e.Token = prev[r.termAt(e.Sent)]
	return []int64{e.Index}, nil
}

// claim is the token e proves its node led with: an answered leader
// observation, an acknowledged or fenced write. 0 for none.
func claim(e *history.Event) int64 {
	switch {
	case answered(e) && e.IsLeader,
		e.F == history.Write && e.Type == history.OK,
		e.F == history.Write && e.Type == history.Fail && e.Error == contract.ErrFenced:
		return e.Token
	}
	return 0
}

type kv struct{ key, value string }

// staleAccepted turns a fenced write into one the resource accepted and the
// node acknowledged.
func (r *Run) staleAccepted(rng *rand.Rand) ([]int64, []int64, error) {
	refused := map[kv]int{}
	for j, d := range r.Resource {
		if !d.Accepted {
			refused[kv{d.Key, d.Value}] = j
		}
	}
	type cand struct{ event, decision int }
	var cands []cand
	for i := range r.History {
		e := &r.History[i]
		if e.Type == history.Fail && e.Error == contract.ErrFenced {
			if j, ok := refused[kv{e.Key, e.Value}]; ok {
				cands = append(cands, cand{i, j})
			}
		}
	}
	c, err := pick(rng, cands)
	if err != nil {
		return nil, nil, err
	}
	d, e := &r.Resource[c.decision], &r.History[c.event]
	d.Accepted = true
	e.Type, e.Seq, e.Error = history.OK, d.Seq, ""
	return []int64{e.Index}, []int64{d.Seq}, nil
}

// forgedToken gives an accepted, acknowledged write a token above every
// token in the run: no node claimed it, though the node answered the
// write with its own.
func (r *Run) forgedToken(rng *rand.Rand) ([]int64, []int64, error) {
	acked := map[kv]int{}
	var top int64
	for i := range r.History {
		e := &r.History[i]
		top = max(top, e.Token)
		if e.Type == history.OK && e.F == history.Write {
			acked[kv{e.Key, e.Value}] = i
		}
	}
	type cand struct{ event, decision int }
	var cands []cand
	for j, d := range r.Resource {
		if i, ok := acked[kv{d.Key, d.Value}]; ok && d.Accepted {
			cands = append(cands, cand{i, j})
		}
	}
	c, err := pick(rng, cands)
	if err != nil {
		return nil, nil, err
	}
	d := &r.Resource[c.decision]
	d.Token = top + 1 + rng.Int64N(1000)
	return []int64{r.History[c.event].Index}, []int64{d.Seq}, nil
}

// longOverlap keeps a partitioned old leader believing it leads for
// Bound and three intervals after its successor was elected: its answers
// say so, and the writes it refused as not leader meanwhile are removed.
func (r *Run) longOverlap(rng *rand.Rand) ([]int64, error) {
	iv, bound := int64(r.Config.Interval), int64(r.Config.Bound)
	var cands []int
	for k, f := range r.faults {
		stop := r.end
		if k+1 < len(r.faults) {
			stop = r.faults[k+1].at
		}
		if !f.pause && r.terms[k+1].start+bound+5*iv < stop {
			cands = append(cands, k)
		}
	}
	k, err := pick(rng, cands)
	if err != nil {
		return nil, err
	}
	node, token := r.names[r.terms[k].node], r.terms[k].token
	from, until := r.faults[k].at, r.terms[k+1].start+bound+3*iv
	h := r.History
	drop := map[int]bool{}
	open := map[int]int{} // process -> its invoke
	last := -1
	for i := range h {
		e := &h[i]
		if e.Type == history.Invoke {
			open[e.Process] = i
		}
		if e.Node != node || e.Time < from || e.Time > until {
			continue
		}
		switch {
		case answered(e) && !e.IsLeader:
			e.IsLeader, e.Token, e.LeaderID = true, token, node
			last = i
		case e.Type == history.Fail && e.Error == contract.ErrNotLeader:
			drop[i], drop[open[e.Process]] = true, true
		}
	}
	if last < 0 || h[last].Time < until-2*iv {
		return nil, ErrNoRoom
	}
	kept := h[:0]
	for i := range h {
		if i == last {
			last = len(kept)
		}
		if !drop[i] {
			e := h[i]
			e.Index = int64(len(kept))
			kept = append(kept, e)
		}
	}
	r.History = slices.Clip(kept)
	return []int64{int64(last)}, nil
}

// staleRead makes a read return the value its register held before a write
// acknowledged before the read began, itself acknowledged after that
// value's write was.
func (r *Run) staleRead(rng *rand.Rand) ([]int64, error) {
	h := r.History
	bySeq := make(map[int64]int, len(r.Resource))
	before := map[int64]int{} // seq -> the accepted decision on its key before it
	top := map[string]int{}
	for j, d := range r.Resource {
		bySeq[d.Seq] = j
		if !d.Accepted {
			continue
		}
		if p, ok := top[d.Key]; ok {
			before[d.Seq] = p
		}
		top[d.Key] = j
	}
	type write struct{ invoke, done int }
	writes := map[string]write{}
	open := map[int]int{}
	type cand struct{ read, decision int }
	var cands []cand
	for i := range h {
		e := &h[i]
		if e.Type == history.Invoke {
			open[e.Process] = i
			continue
		}
		inv, ok := open[e.Process]
		if !ok || e.Type != history.OK && e.Type != history.Fail && e.Type != history.Info {
			continue
		}
		delete(open, e.Process)
		if e.F == history.Write {
			writes[e.Value] = write{inv, i}
			continue
		}
		p, ok := before[e.Seq]
		if e.Type != history.OK || !ok {
			continue
		}
		// Both writes were acknowledged, one before the other began, the
		// later before the read began: no order lets the read see the older.
		now, ok1 := writes[r.Resource[bySeq[e.Seq]].Value]
		old, ok2 := writes[r.Resource[p].Value]
		if ok1 && ok2 && h[now.done].Type == history.OK && h[now.done].Time < h[inv].Time &&
			h[old.done].Type == history.OK && h[old.done].Time < h[now.invoke].Time {
			cands = append(cands, cand{i, p})
		}
	}
	c, err := pick(rng, cands)
	if err != nil {
		return nil, err
	}
	e, d := &h[c.read], &r.Resource[c.decision]
	e.Value, e.Token, e.Node, e.Seq = d.Value, d.Token, d.Node, d.Seq
	return []int64{e.Index}, nil
}

// noRecovery appends a pause of the last leader after everything else;
// after its heal every node answers (or pushes its belief) as a follower
// until Recovery and 5 s have passed.
func (r *Run) noRecovery(rng *rand.Rand) []int64 {
	iv := int64(r.Config.Interval)
	leader := r.terms[len(r.terms)-1].node
	name := r.names[leader]
	at := r.History[len(r.History)-1].Time + 10*ms
	heal := at + 1000*ms
	end := heal + int64(r.Config.Recovery) + 5000*ms
	nodes := []string{name}
	tail := []history.Event{
		{Type: history.Nemesis, F: "pause", Phase: history.Inject, Nodes: nodes, Value: "pause " + name, Sent: at - 5*ms, Time: at},
		{Type: history.Nemesis, F: "pause", Phase: history.Heal, Nodes: nodes, Value: "pause " + name, Sent: heal - 5*ms, Time: heal},
	}
	if r.watches != nil {
		r.pushTail(rng, &tail, fault{node: leader, pause: true, at: at, heal: heal}, end)
	} else {
		for n, node := range r.names {
			for sent := at + rng.Int64N(iv); sent < end; {
				e := history.Event{Type: history.Leader, Node: node, Sent: sent, Time: sent + ms}
				if n == leader && sent < heal {
					if e.Time = heal + ms; e.Time > sent+silence*iv {
						e.Time, e.Error = sent+silence*iv, "no answer: timeout"
					}
				}
				tail = append(tail, e)
				sent = max(sent+iv, e.Time)
			}
		}
	}
	r.History = append(r.History, sortByTime(tail)...)
	healAt := -1
	for i := len(r.History) - len(tail); i < len(r.History); i++ {
		r.History[i].Index = int64(i)
		if r.History[i].Phase == history.Heal {
			healAt = i
		}
	}
	return []int64{int64(healAt)}
}

// pushTail plays every node's watch on from at least f.at to end, after
// the run: the last leader is frozen by f and wakes up as a follower that
// knows no leader, the others follow on as they did.
func (r *Run) pushTail(rng *rand.Rand, tail *[]history.Event, f fault, end int64) {
	lead := r.watches[f.node].v
	p := &pusher{
		rng: rng, iv: int64(r.Config.Interval), names: r.names,
		emit: func(e history.Event) { *tail = append(*tail, e) },
		view: func(n int, at int64) view {
			switch {
			case n != f.node:
				return r.watches[n].v
			case at < f.heal:
				return lead
			}
			return view{}
		},
		changes: []int64{f.heal},
		frozen: func(n int, at int64) (fault, bool) {
			return f, n == f.node && at >= f.at && at < f.heal
		},
		stop: end,
	}
	for n := range r.watches {
		// The first line is due after everything before the tail: a beat
		// a little late.
		p.follow(&r.watches[n], f.at+rng.Int64N(p.iv))
	}
}

// shortOverlap keeps a partitioned old leader believing it leads for d, 5
// to 40 ms and less than an interval, after its successor's first line as
// leader, in a pushed run that keeps an exclusive promise. Its change of
// belief moves: the last sample as leader to d - 1 ms after the
// successor's election, the first as follower to d; the lines it pushed
// in between say it still leads, and the writes it refused as not leader
// meanwhile are removed. Nothing is added. The proof is the old leader's
// last line as leader and the successor's first.
func (r *Run) shortOverlap(rng *rand.Rand) ([]int64, error) {
	iv := int64(r.Config.Interval)
	most := min(40*ms, iv-ms)
	if r.watches == nil || r.Config.Overlap > 0 || most < 5*ms {
		return nil, ErrNoRoom
	}
	var cands []int
	for k, f := range r.faults {
		if !f.pause && r.terms[k].end < r.terms[k+1].start {
			cands = append(cands, k)
		}
	}
	k, err := pick(rng, cands)
	if err != nil {
		return nil, err
	}
	a, b := r.terms[k], r.terms[k+1]
	wa := &r.watches[a.node]
	nameA, nameB := r.names[a.node], r.names[b.node]
	stepDown := b.start + 5*ms + rng.Int64N(most-5*ms+1)
	h := r.History

	// The old leader's last line as leader, and its lines after it until
	// it steps down now; the successor's first line as leader.
	last, first := -1, -1
	for i := range h {
		e := &h[i]
		switch {
		case !pushedLine(e):
		case e.Node == nameA && e.IsLeader && e.Token == a.token:
			last = i
		case e.Node == nameB && e.IsLeader && e.Token == b.token && first < 0:
			first = i
		}
	}
	if last < 0 || first < 0 {
		return nil, ErrNoRoom
	}
	var moved []int
	for i := last + 1; i < len(h); i++ {
		e := &h[i]
		if e.Node != nameA || e.Type != history.Leader {
			continue
		}
		if !pushedLine(e) || e.Sent != h[last].Sent {
			return nil, ErrNoRoom // the stream ended: not a partition
		}
		t := wa.trueTime(e.At)
		if t > stepDown {
			break
		}
		if t == stepDown || t == stepDown-ms {
			return nil, ErrNoRoom // a line in the way
		}
		moved = append(moved, i)
	}
	if len(moved) == 0 {
		return nil, ErrNoRoom
	}
	sent := h[last].Sent
	retime := func(e *history.Event, t int64) {
		e.At, e.Time = t+wa.off, t+50*us+rng.Int64N(450*us+1)
	}
	retime(&h[last], stepDown-ms)
	for _, i := range moved[1:] {
		h[i].IsLeader, h[i].Token, h[i].LeaderID = true, a.token, nameA
	}
	off := &h[moved[0]]
	retime(off, stepDown)
	off.LeaderID = r.leaderAt(stepDown)

	// The writes it refused as not leader meanwhile, and their invokes.
	drop := map[int]bool{}
	open := map[int]int{}
	for i := range h {
		e := &h[i]
		if e.Type == history.Invoke {
			open[e.Process] = i
		}
		if inv, ok := open[e.Process]; ok && e.Node == nameA && e.Type == history.Fail && e.Error == contract.ErrNotLeader && e.Time > a.end && e.Time <= stepDown+2*ms {
			drop[i], drop[inv] = true, true
		}
	}
	kept := h[:0]
	for i := range h {
		if !drop[i] {
			kept = append(kept, h[i])
		}
	}
	// The stream's lines in At order, which a stream delivers them in.
	var slots []int
	var lines []history.Event
	for i := range kept {
		if e := &kept[i]; e.Node == nameA && pushedLine(e) && e.Sent == sent {
			slots, lines = append(slots, i), append(lines, *e)
		}
	}
	slices.SortFunc(lines, func(x, y history.Event) int { return cmp.Compare(x.At, y.At) })
	var arrived int64
	for j, i := range slots {
		kept[i] = lines[j]
		kept[i].Time = max(kept[i].Time, arrived)
		arrived = kept[i].Time
	}
	r.History = sortByTime(slices.Clip(kept))

	proof := []int64{-1, -1}
	for i := range r.History {
		e := &r.History[i]
		switch {
		case !pushedLine(e):
		case e.Node == nameA && e.IsLeader && e.Token == a.token:
			proof[0] = e.Index
		case e.Node == nameB && e.IsLeader && e.Token == b.token && proof[1] < 0:
			proof[1] = e.Index
		}
	}
	return proof, nil
}
