package checkers

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/splitbrain/splitbrain/history"
)

// nodeToken is one node's leadership with one token.
type nodeToken struct {
	node  string
	token int64
}

// held gathers one node's claims of one token. Only a few facts about them
// matter: the first claim (to name who claimed a token first), the
// earliest answer and the latest request (to prove the node's token went
// backwards).
type held struct {
	node    string
	token   int64
	first   int   // position of the first claim
	doneAt  int64 // earliest answer among the claims...
	done    int   // ...and its position
	startAt int64 // latest request among the claims
	// For a token that went backwards: a claim of a higher token, at
	// position higher, was answered at time regress.
	regress int64
	higher  int
}

// safetyFinding is a duplicate token (a: the first holder, b: the other) or
// a regression (a: the claim of the higher token, b: the later claim of the
// lower one); a and b index into the history.
type safetyFinding struct {
	kind  string
	at    int64
	order int64
	token int64
	a, b  int
}

func (f safetyFinding) when() (int64, int64) { return f.at, f.order }

// ElectionSafety checks that no token was claimed by two different nodes,
// and that no node's token went backwards.
//
// A claim is a node leading with a token: a leader observation, or a write
// the node made with that token (acknowledged, or refused by the fence).
// Claims without a token (0) cannot be checked and are only counted. A
// token goes backwards when a node claims a lower token in a request sent
// after a claim of a higher one was answered (for lines a node pushed: at
// the earliest its clock's dating allows, see span); claims whose spans
// overlap are not ordered, so a slow answer is never a false alarm.
//
// A history without claims is Valid, with a Note: nothing was wrong, and
// whether the target ever elected a leader is availability's question.
//
// Figures: claims, tokens (distinct tokens claimed), elections (distinct
// node-token pairs: a leadership each), untokened_claims, duplicates,
// regressions, violations.
func ElectionSafety(in Input) Result {
	h := in.History
	clocks := watchClocks(h)
	var helds []held
	index := map[nodeToken]int{}
	ops := opTracker{}
	claims, untokened := 0, 0
	for i := range h {
		inv := ops.see(h, i)
		if beliefOf(h, i, inv) != leads {
			continue
		}
		e := &h[i]
		if e.Token <= 0 {
			untokened++
			continue
		}
		claims++
		start, end := span(h, i, inv, clocks)
		k := nodeToken{e.Node, e.Token}
		j, ok := index[k]
		if !ok {
			index[k] = len(helds)
			helds = append(helds, held{node: e.Node, token: e.Token, first: i, doneAt: end, done: i, startAt: start})
			continue
		}
		c := &helds[j]
		if end < c.doneAt {
			c.doneAt, c.done = end, i
		}
		c.startAt = max(c.startAt, start)
	}

	var fs []safetyFinding
	tokens := 0
	// Duplicates: group by token, earliest first claim first.
	order := make([]int, len(helds))
	for j := range order {
		order[j] = j
	}
	slices.SortFunc(order, func(p, q int) int {
		a, b := &helds[p], &helds[q]
		return cmp.Or(cmp.Compare(a.token, b.token), cmp.Compare(h[a.first].Time, h[b.first].Time), cmp.Compare(a.first, b.first))
	})
	for g := 0; g < len(order); {
		first := &helds[order[g]]
		end := g + 1
		for end < len(order) && helds[order[end]].token == first.token {
			other := &helds[order[end]]
			fs = append(fs, safetyFinding{kind: "duplicate-token", at: h[other.first].Time, order: h[other.first].Index,
				token: first.token, a: first.first, b: other.first})
			end++
		}
		tokens++
		g = end
	}
	duplicates := len(fs)

	// Regressions: per node, from the highest token down, keep the earliest
	// answer to a claim of any higher token.
	slices.SortFunc(order, func(p, q int) int {
		a, b := &helds[p], &helds[q]
		return cmp.Or(strings.Compare(a.node, b.node), cmp.Compare(b.token, a.token))
	})
	regressed := map[nodeToken]int{}
	for g := 0; g < len(order); {
		node := helds[order[g]].node
		minDone, minPos := int64(math.MaxInt64), -1
		for ; g < len(order) && helds[order[g]].node == node; g++ {
			c := &helds[order[g]]
			if minDone < c.startAt {
				c.regress, c.higher = minDone, minPos
				regressed[nodeToken{c.node, c.token}] = order[g]
			}
			if c.doneAt < minDone {
				minDone, minPos = c.doneAt, c.done
			}
		}
	}
	if len(regressed) > 0 {
		fs = append(fs, firstRegressions(h, helds, regressed, clocks)...)
	}

	r := Result{Figures: map[string]float64{
		"claims":           float64(claims),
		"tokens":           float64(tokens),
		"elections":        float64(len(helds)),
		"untokened_claims": float64(untokened),
		"duplicates":       float64(duplicates),
		"regressions":      float64(len(fs) - duplicates),
		"violations":       float64(len(fs)),
	}}
	r.Violations = describeFirst(fs, func(f safetyFinding) Violation { return describeSafety(h, f) })
	r.Valid = Valid
	if len(fs) > 0 {
		r.Valid = Invalid
	}
	var none, untok string
	if claims == 0 {
		none = "No node claimed a token (no leader observation or write carried one): nothing to check."
	}
	if untokened > 0 {
		untok = fmt.Sprintf("%d leadership claims carried no token and could not be checked.", untokened)
	}
	r.Note = notes(none, untok, capNote(len(fs), "violations"))
	return r
}

// firstRegressions finds, for each regressed node-token pair, the earliest
// answered claim that was asked after the higher token's claim was
// answered: the first proof that the token went backwards. A second pass,
// run only when something regressed.
func firstRegressions(h []history.Event, helds []held, regressed map[nodeToken]int, clocks map[clock]dating) []safetyFinding {
	proof := map[int]int{} // held index -> position of its first proof
	ops := opTracker{}
	for i := range h {
		inv := ops.see(h, i)
		if beliefOf(h, i, inv) != leads || h[i].Token <= 0 {
			continue
		}
		j, ok := regressed[nodeToken{h[i].Node, h[i].Token}]
		if !ok {
			continue
		}
		start, end := span(h, i, inv, clocks)
		if start <= helds[j].regress {
			continue
		}
		if p, ok := proof[j]; !ok || end < h[p].Time {
			proof[j] = i
		}
	}
	fs := make([]safetyFinding, 0, len(proof))
	for j, p := range proof {
		fs = append(fs, safetyFinding{kind: "token-regressed", at: h[p].Time, order: h[p].Index,
			token: helds[j].token, a: helds[j].higher, b: p})
	}
	return fs
}

func describeSafety(h []history.Event, f safetyFinding) Violation {
	a, b := &h[f.a], &h[f.b]
	v := Violation{Kind: f.kind, Time: f.at, Events: []int64{a.Index, b.Index}}
	switch f.kind {
	case "duplicate-token":
		v.Nodes = []string{a.Node, b.Node}
		v.Message = fmt.Sprintf("token %d was claimed by %s (%s, event %d at %s) and by %s (%s, event %d at %s); a token must belong to one leadership of one node",
			f.token, a.Node, source(a), a.Index, secs(a.Time), b.Node, source(b), b.Index, secs(b.Time))
	default:
		v.Nodes = []string{b.Node}
		v.Message = fmt.Sprintf("%s claimed token %d (%s, event %d at %s) after it had claimed token %d (%s, event %d at %s); a node's token must never go backwards",
			b.Node, b.Token, source(b), b.Index, secs(b.Time), a.Token, source(a), a.Index, secs(a.Time))
	}
	return v
}
