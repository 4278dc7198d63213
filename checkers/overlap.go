package checkers

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/splitbrain/splitbrain/history"
)

// interval is one node's belief that it led with one token, from its first
// to its last proof.
type interval struct {
	node        int32 // index into the node names
	token       int64 // 0: the node never said
	start, end  int64 // times of the first and last proof
	first, last int   // positions of the first and last proof
}

// window is a time in which intervals of two or more nodes overlap. Its
// intervals are parts[from:to] of a slice shared by all windows.
type window struct {
	start, end int64
	from, to   int
}

// LeaderOverlap measures the windows in which two or more nodes believed
// they led at once, and judges them by the promise.
//
// Each node's beliefs are rebuilt as intervals: an interval starts at a
// proof that the node led with a token and runs through every later proof
// with the same token, to the last of them before a proof that it did not
// lead (an observation as follower, a write it refused as not leader) or
// led with another token (which starts the next interval). Proofs are timed
// when their answer reached the controller. A token of 0 (not told) is
// taken as the token the interval already has.
//
// Silence ends an interval too: a poll the node did not answer (it was
// frozen, down, or cut off from the controller) proves nothing about its
// belief, so a node heard again with its old token afterwards starts a new
// interval. A frozen leader's stale belief counts from the moment it is
// heard again, not through the freeze, in which it could not act on it.
// A gap between proofs with no unanswered poll in it (a sparse history)
// is bridged. Time before an interval's first proof and after its last is
// never counted, so overlap is a lower bound, precise to about one
// observation interval.
//
// Windows are found with a sweep over the sorted interval ends. Under an
// exclusive promise every window is a violation; under overlap-bound D only
// windows longer than D are; under fenced none is. Windows that are not
// violations go to Result.Windows. Without a known promise windows are
// shown but not judged: Unknown if there are any.
//
// Figures: intervals, windows (all of them), total_s, longest_s,
// violations.
func LeaderOverlap(in Input) Result {
	h := in.History
	ivs, names := beliefIntervals(h)
	windows, parts := overlapWindows(ivs, len(names))

	p := in.Promise
	var total, longest int64
	var bad, fine []window
	for _, w := range windows {
		d := w.end - w.start
		total += d
		longest = max(longest, d)
		if violates(p, d) {
			bad = append(bad, w)
		} else {
			fine = append(fine, w)
		}
	}
	describe := func(ws []window, violating bool) []Violation {
		n := min(len(ws), maxStored)
		if n == 0 {
			return nil
		}
		out := make([]Violation, n)
		for i, w := range ws[:n] {
			out[i] = describeWindow(h, names, ivs, parts[w.from:w.to], w, p, violating)
		}
		return out
	}

	r := Result{
		Valid: Valid,
		Figures: map[string]float64{
			"intervals":  float64(len(ivs)),
			"windows":    float64(len(windows)),
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
	case !p.known() && len(windows) > 0:
		r.Valid = Unknown
		judged = fmt.Sprintf("The target declared no promise this checker knows (%q), so the overlap is shown but not judged.", p.String())
	}
	r.Note = notes(judged, precision(in.ObserveInterval), capNote(len(bad), "violations"), capNote(len(fine), "windows"))
	return r
}

// violates says whether a window of d ns breaks promise p.
func violates(p Promise, d int64) bool {
	switch p.Kind {
	case Exclusive:
		return true
	case OverlapBound:
		return p.Bound > 0 && d > int64(p.Bound)
	}
	return false
}

func precision(every time.Duration) string {
	const how = "Overlap counts only time between proofs of belief (leader observations, writes made as leader), timed when each answer reached the controller, so it is a lower bound"
	if every <= 0 {
		return how + "; its precision is unknown, since no observation interval was given."
	}
	return fmt.Sprintf("%s, precise to about ±%v (the observation interval).", how, every)
}

// beliefIntervals rebuilds every node's belief intervals in one pass, and
// returns them with the node names their node fields index.
func beliefIntervals(h []history.Event) ([]interval, []string) {
	var (
		ivs   []interval
		names []string
		open  []interval // per node: its current interval...
		isOn  []bool     // ...if it has one
	)
	ids := map[string]int32{}
	ops := opTracker{}
	for i := range h {
		inv := ops.see(h, i)
		b := beliefOf(h, i, inv)
		if b == noBelief {
			continue
		}
		e := &h[i]
		id, ok := ids[e.Node]
		if !ok {
			id = int32(len(names))
			ids[e.Node] = id
			names = append(names, e.Node)
			open = append(open, interval{})
			isOn = append(isOn, false)
		}
		cur := &open[id]
		switch {
		case b == follows || b == silent:
			if isOn[id] {
				ivs = append(ivs, *cur)
				isOn[id] = false
			}
		case isOn[id] && (e.Token == cur.token || e.Token == 0 || cur.token == 0):
			if cur.token == 0 {
				cur.token = e.Token
			}
			// Answers can be recorded slightly out of time order; an
			// interval only ever grows.
			if e.Time >= cur.end {
				cur.end, cur.last = e.Time, i
			}
		default:
			if isOn[id] {
				ivs = append(ivs, *cur)
			}
			*cur = interval{node: id, token: e.Token, start: e.Time, end: e.Time, first: i, last: i}
			isOn[id] = true
		}
	}
	for id, on := range isOn {
		if on {
			ivs = append(ivs, open[id])
		}
	}
	return ivs, names
}

// overlapWindows sweeps over the interval ends in time order and returns
// the windows in which intervals of at least two different nodes are open,
// with the intervals taking part in each. At equal times starts come first,
// so a single proof (an interval of no length) inside another node's
// interval is a window of no length: the two beliefs were proved at once.
func overlapWindows(ivs []interval, nodes int) ([]window, []int32) {
	type edge struct {
		at  int64
		iv  int32
		end bool
	}
	edges := make([]edge, 0, 2*len(ivs))
	for i, iv := range ivs {
		edges = append(edges, edge{iv.start, int32(i), false}, edge{iv.end, int32(i), true})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmpBool(a.end, b.end), cmp.Compare(a.iv, b.iv))
	})

	var (
		windows []window
		parts   []int32
		cur     window
		inside  bool
		active  int                    // nodes with an open interval
		opened  = make([]int32, nodes) // per node: how many of its intervals are open
		latest  = make([]int32, nodes) // per node: its latest open interval
	)
	for _, ed := range edges {
		n := ivs[ed.iv].node
		if ed.end {
			opened[n]--
			if opened[n] == 0 {
				active--
			}
			if inside && active < 2 {
				cur.end, cur.to = ed.at, len(parts)
				windows = append(windows, cur)
				inside = false
			}
			continue
		}
		if opened[n] == 0 {
			active++
		}
		opened[n]++
		latest[n] = ed.iv
		switch {
		case inside:
			parts = append(parts, ed.iv)
		case active >= 2:
			inside = true
			cur = window{start: ed.at, from: len(parts)}
			for m, k := range opened {
				if k > 0 {
					parts = append(parts, latest[m])
				}
			}
		}
	}
	return windows, parts
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func describeWindow(h []history.Event, names []string, ivs []interval, part []int32, w window, p Promise, violating bool) Violation {
	// Name the intervals in the order they started.
	ps := slices.Clone(part)
	slices.SortFunc(ps, func(a, b int32) int { return cmp.Or(cmp.Compare(ivs[a].start, ivs[b].start), cmp.Compare(a, b)) })
	var b strings.Builder
	v := Violation{Kind: "overlap", Time: w.start}
	for k, j := range ps {
		iv := &ivs[j]
		switch {
		case k == 0:
		case k == len(ps)-1:
			b.WriteString(" and ")
		default:
			b.WriteString(", ")
		}
		name := names[iv.node]
		if iv.token != 0 {
			fmt.Fprintf(&b, "%s (token %d)", name, iv.token)
		} else {
			fmt.Fprintf(&b, "%s (no token)", name)
		}
		if !slices.Contains(v.Nodes, name) {
			v.Nodes = append(v.Nodes, name)
		}
		v.Events = append(v.Events, h[iv.first].Index, h[iv.last].Index)
	}
	v.Events = sortedUnique(v.Events)
	both := "both"
	if len(ps) > 2 {
		both = "all"
	}
	fmt.Fprintf(&b, " %s believed they led from %s to %s (%s)", both, secs(w.start), secs(w.end), secs(w.end-w.start))
	switch {
	case p.Kind == Exclusive:
		b.WriteString("; the target promises at most one leader at any time")
	case p.Kind == OverlapBound && violating:
		fmt.Fprintf(&b, "; longer than the promised bound of %v", p.Bound)
	case p.Kind == OverlapBound:
		fmt.Fprintf(&b, "; within the promised bound of %v", p.Bound)
	case p.Kind == Fenced:
		b.WriteString("; the target promises only fenced tokens, so this is a measured risk, not a violation")
	}
	v.Message = b.String()
	return v
}
