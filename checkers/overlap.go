package checkers

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/history"
)

// LeaderOverlap measures the windows in which two or more nodes believed
// they led at once, and judges them by the promise.
//
// Each node's beliefs are rebuilt as intervals, from its first to its last
// proof that it led with one token, and swept for windows in which two
// nodes' beliefs were certainly held at once (see BeliefsOf). A frozen
// leader's stale belief counts from the moment it is heard again, not
// through the freeze, in which it could not act on it. Time before an
// interval's first proof and after its last is never counted, and each
// proof counts only where it cannot have been made earlier or later, so
// overlap is a lower bound, precise to about one observation interval:
// answers that crossed in flight are never taken for an overlap.
//
// Under an exclusive promise every window is a violation; under
// overlap-bound D only windows longer than D are; under fenced none is.
// Windows that are not violations go to Result.Windows. Without a known
// promise windows are shown but not judged: Unknown if there are any.
//
// Figures: intervals, windows (all of them), total_s, longest_s,
// violations.
func LeaderOverlap(in Input) Result {
	h := in.History
	b := BeliefsOf(h, in.ObserveInterval)

	p := in.Promise
	var total, longest int64
	var bad, fine []Overlap
	for _, w := range b.Overlaps {
		d := w.End - w.Start
		total += d
		longest = max(longest, d)
		if violates(p, d) {
			bad = append(bad, w)
		} else {
			fine = append(fine, w)
		}
	}
	describe := func(ws []Overlap, violating bool) []Violation {
		n := min(len(ws), maxStored)
		if n == 0 {
			return nil
		}
		out := make([]Violation, n)
		for i, w := range ws[:n] {
			out[i] = describeOverlap(h, &b, w, p, violating)
		}
		return out
	}

	r := Result{
		Valid: Valid,
		Figures: map[string]float64{
			"intervals":  float64(len(b.Intervals)),
			"windows":    float64(len(b.Overlaps)),
			"total_s":    seconds(total),
			"longest_s":  seconds(longest),
			"violations": float64(len(bad)),
		},
		Violations: describe(bad, true),
		Windows:    describe(fine, false),
	}
	var judged string
	switch {
	case len(bad) > 0:
		r.Valid = Invalid
	case !p.Known() && len(b.Overlaps) > 0:
		r.Valid = Unknown
		judged = fmt.Sprintf("The target declared no promise this checker knows (%q), so the overlap is shown but not judged.", p.String())
	}
	r.Note = notes(judged, precision(in.ObserveInterval, &b), capNote(len(bad), "violations"), capNote(len(fine), "windows"))
	return r
}

// violates says whether a window of d ns breaks promise p.
func violates(p contract.Promise, d int64) bool {
	switch p.Kind {
	case contract.Exclusive:
		return true
	case contract.OverlapBound:
		return p.Bound > 0 && d > int64(p.Bound)
	}
	return false
}

// precision says how exactly b's beliefs are dated: a polled one to about
// the observation interval every, a pushed one to within b.Slack.
func precision(every time.Duration, b *Beliefs) string {
	const how = "Overlap counts only time in which both beliefs are certain: each proof of belief (a leader observation, a write made as leader) dates it between its request leaving the controller and its answer arriving, or, when the node pushed it, by the node's own clock mapped to the controller's, so overlap is a lower bound"
	pushed := fmt.Sprintf("pushed beliefs are dated to within %v", time.Duration(b.Slack).Round(time.Microsecond))
	polled := "polled beliefs to about ±" + every.String() + " (the observation interval)"
	if every <= 0 {
		polled = "polled beliefs to an unknown precision, since no observation interval was given"
	}
	switch {
	case b.Watched == 0:
		return how + "; " + polled + "."
	case b.Watched == len(b.Nodes):
		return fmt.Sprintf("%s; every node pushed its beliefs, and %s.", how, pushed)
	}
	return fmt.Sprintf("%s; %d of %d nodes pushed their beliefs: %s, %s.", how, b.Watched, len(b.Nodes), pushed, polled)
}

func describeOverlap(h []history.Event, bs *Beliefs, w Overlap, p contract.Promise, violating bool) Violation {
	// Name the intervals in the order they started.
	ivs := bs.Intervals
	ps := slices.Clone(w.Intervals)
	slices.SortFunc(ps, func(a, b int) int { return cmp.Or(cmp.Compare(ivs[a].Start, ivs[b].Start), cmp.Compare(a, b)) })
	var b strings.Builder
	v := Violation{Kind: "overlap", Time: w.Start}
	for k, j := range ps {
		iv := &ivs[j]
		switch {
		case k == 0:
		case k == len(ps)-1:
			b.WriteString(" and ")
		default:
			b.WriteString(", ")
		}
		name := bs.Nodes[iv.Node]
		if iv.Token != 0 {
			fmt.Fprintf(&b, "%s (token %d)", name, iv.Token)
		} else {
			fmt.Fprintf(&b, "%s (no token)", name)
		}
		if !slices.Contains(v.Nodes, name) {
			v.Nodes = append(v.Nodes, name)
		}
		v.Events = append(v.Events, h[iv.First].Index, h[iv.Last].Index)
	}
	v.Events = sortedUnique(v.Events)
	both := "both"
	if len(ps) > 2 {
		both = "all"
	}
	if w.End > w.Start {
		fmt.Fprintf(&b, " %s believed they led from %s to %s (%s)", both, secs(w.Start), secs(w.End), secs(w.End-w.Start))
	} else {
		fmt.Fprintf(&b, " %s believed they led at one instant, by %s", both, secs(w.Start))
	}
	switch {
	case p.Kind == contract.Exclusive:
		b.WriteString("; the target promises at most one leader at any time")
	case p.Kind == contract.OverlapBound && violating:
		fmt.Fprintf(&b, "; longer than the promised bound of %v", p.Bound)
	case p.Kind == contract.OverlapBound:
		fmt.Fprintf(&b, "; within the promised bound of %v", p.Bound)
	case p.Kind == contract.Fenced:
		b.WriteString("; the target promises only fenced tokens, so this is a measured risk, not a violation")
	}
	v.Message = b.String()
	return v
}
