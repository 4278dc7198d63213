package checkers

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/splitbrain/splitbrain/history"
)

// The harness's own lateness, as the history shows it. A host or Docker
// Engine too loaded to keep up makes the harness late before it makes the
// target fail: a heal that takes many times its usual time, an observer
// that learns of beliefs long after they held. The availability checker
// does not blame the target for a stretch that this could explain, and
// run.json keeps a summary of it (HarnessTimingOf).

// A fault's injection or heal is late when it took more than lateFactor
// times its usual time: the median of that fault's other injections (or
// heals) in the run, or lateFloor, whichever is larger.
//
// The median of the others, not a mean of all: one action slow by
// seconds among quick ones must not raise the measure it is judged by,
// and a fault struck once is not judged by itself. Of the fault by its
// name, not its kind: a name does the same work each time (kill-all
// restarts every node, kill-one one of them), where a kind mixes them,
// and the history names faults, not kinds. The floor because quick
// actions make a poor measure: a heal that starts a container takes a
// second or two on any machine, and three times a partition's 5 ms is
// nothing a loaded host does not do now and then.
const (
	lateFactor = 3
	lateFloor  = int64(2 * time.Second)
)

// promptBeats is how many observation intervals after its belief held an
// answer may reach the observer and still be prompt: twice the four after
// which the observer gives up on a node (a poll's timeout, a watch's
// connection). A node slow to answer cannot make a poll's record later
// than that, since the observer cuts it off; what is later is the
// observer's own delay, in asking or in reading, or a watch line's on
// its way.
const promptBeats = 8

// blindAfter is how long the observer may go without a prompt record of
// any node before it was blind: twice the longest it waits on a node
// before recording something of it, max(20 intervals, 1 s) for a watch
// that fell silent. Whatever the nodes do (answer, refuse, freeze, die),
// a working observer records one of them well within that.
func blindAfter(every time.Duration) int64 {
	return 2 * int64(max(20*every, time.Second))
}

// faultAction is a fault's injection or heal, at position pos of the
// history, timed from its decision (Sent) until it was in effect or
// undone on every container it touched (Time).
type faultAction struct {
	pos  int
	took int64
	// median is that of the same fault's other actions of the same
	// phase, -1 when it has none.
	median int64
}

func (a faultAction) usual() int64 { return max(a.median, lateFloor) }

func (a faultAction) late() bool { return a.took > lateFactor*a.usual() }

// faultActions times every injection and heal of h that says when it was
// decided, each against the other actions of its fault and phase.
func faultActions(h []history.Event) []faultAction {
	type kind struct{ fault, phase string }
	var out []faultAction
	took := map[kind][]int64{}
	for i := range h {
		e := &h[i]
		if e.Type != history.Nemesis || e.Sent <= 0 {
			continue
		}
		d := max(e.Time-e.Sent, 0)
		out = append(out, faultAction{pos: i, took: d})
		k := kind{e.F, e.Phase}
		took[k] = append(took[k], d)
	}
	for _, ds := range took {
		slices.Sort(ds)
	}
	for i := range out {
		e := &h[out[i].pos]
		out[i].median = medianWithout(took[kind{e.F, e.Phase}], out[i].took)
	}
	return out
}

// medianWithout is the median of sorted xs with one x, which it holds,
// taken out; -1 when nothing is left.
func medianWithout(xs []int64, x int64) int64 {
	skip, _ := slices.BinarySearch(xs, x)
	n := len(xs) - 1
	at := func(k int) int64 {
		if k >= skip {
			k++
		}
		return xs[k]
	}
	switch {
	case n == 0:
		return -1
	case n%2 == 1:
		return at(n / 2)
	}
	return (at(n/2-1) + at(n/2)) / 2
}

// probeLag is how late the belief (or silence) leader event e reports
// reached the observer, in ns: a poll's round trip, from its request to
// its answer; a watch line's delivery, from the latest its own timestamp
// can be dated (see dating) to its arrival, which is 0 for the line its
// clock's dating rests on, and for a line of a clock that is not steady,
// which cannot be placed. An event that says nothing of when it was
// asked is not late.
func probeLag(e *history.Event, clocks map[clock]dating) int64 {
	if pushed(e) {
		if d := clocks[clockOf(e)]; d.steady() {
			_, made := d.dates(e)
			return max(e.Time-made, 0)
		}
		return 0
	}
	if e.Sent <= 0 {
		return 0
	}
	return max(e.Time-e.Sent, 0)
}

// observerBlind finds the spans, longer than blindAfter(every), between
// two leader events that reached the observer promptly (see promptBeats),
// answered or not: the observer knew nothing fresh of any node there.
// The history's first leader event starts the watch, its last ends it.
func observerBlind(h []history.Event, every time.Duration, clocks map[clock]dating) []Span {
	gap, prompt := blindAfter(every), promptBeats*int64(every)
	var out []Span
	var last, end int64 = -1, -1 // the latest prompt record; the latest record
	for i := range h {
		e := &h[i]
		if e.Type != history.Leader {
			continue
		}
		if last < 0 {
			last = e.Time
		}
		end = e.Time
		if probeLag(e, clocks) > prompt {
			continue
		}
		if e.Time-last > gap {
			out = append(out, Span{last, e.Time})
		}
		last = max(last, e.Time)
	}
	if end-last > gap {
		out = append(out, Span{last, end})
	}
	return out
}

// lateness is what of the harness's own lateness could explain a
// liveness breach: its late fault actions and the observer's blind spans.
type lateness struct {
	late  []faultAction
	blind []Span
}

func latenessOf(h []history.Event, every time.Duration) lateness {
	every = cmp.Or(every, defaultEvery)
	var l lateness
	for _, a := range faultActions(h) {
		if a.late() {
			l.late = append(l.late, a)
		}
	}
	l.blind = observerBlind(h, every, watchClocks(h))
	return l
}

// excuse says how the harness's own lateness could explain a breach of
// bound judged over judged, "" if it cannot: a fault action within span
// (judged and what led to it, the heal it counts from) that took many
// times its usual time, or an observer that learned nothing promptly for
// so much of judged that what it did see of it is no longer than bound.
func (l lateness) excuse(h []history.Event, span, judged Span, bound int64) string {
	for _, a := range l.late {
		e := &h[a.pos]
		if e.Sent > span.End || e.Time < span.Start {
			continue
		}
		action := "heal"
		if e.Phase == history.Inject {
			action = "injection"
		}
		usual := fmt.Sprintf("it has no other %s in this run, so %v", plural(action), time.Duration(lateFloor))
		if a.median >= 0 {
			usual = fmt.Sprintf("the larger of the median of its other %s, %s, and %v", plural(action), secs(a.median), time.Duration(lateFloor))
		}
		return fmt.Sprintf("the %s of %s decided at %s (event %d) took %s, more than %d times its usual %s (%s): the harness itself was late, its host or Docker Engine struggling, and what that held back could explain the stretch",
			action, e.F, secs(e.Sent), e.Index, secs(a.took), lateFactor, secs(a.usual()), usual)
	}
	var unseen int64
	var longest Span
	for _, b := range l.blind {
		from, to := max(b.Start, judged.Start), min(b.End, judged.End)
		if to <= from {
			continue
		}
		unseen += to - from
		if to-from > longest.End-longest.Start {
			longest = Span{from, to}
		}
	}
	if seen := judged.End - judged.Start - unseen; unseen > 0 && seen <= bound {
		return fmt.Sprintf("the observer itself learned nothing promptly from any node for %s of the %s judged (the longest from %s to %s): what it saw in time, %s, is no longer than the bound of %v, and a leader it learned of late or not at all could have been there",
			secs(unseen), secs(judged.End-judged.Start), secs(longest.Start), secs(longest.End), secs(seen), time.Duration(bound))
	}
	return ""
}

func plural(action string) string {
	if action == "injection" {
		return "injections"
	}
	return "heals"
}

// HarnessTiming is how long the harness's own actions took in a run, each
// kind in a Timing; durations in ms, times in s of run time.
type HarnessTiming struct {
	// Starts are the containers' starts, from the request to a running
	// container, before the workload: the harness times them itself, the
	// history begins after them (their times are negative).
	Starts Timing `json:"starts"`
	// Injections and Heals run from a fault's decision until it was in
	// effect, or undone, on every container; Late counts those beyond
	// lateFactor times their usual time (see faultAction).
	Injections Timing `json:"injections"`
	Heals      Timing `json:"heals"`
	// Probes are the answered leader observations, each timed from when
	// its belief held at the latest until it reached the observer (see
	// probeLag); Late counts those later than promptBeats intervals.
	Probes Timing `json:"probes"`
	// Silences are the spans in which the observer learned nothing
	// promptly of any node (see observerBlind).
	Silences Timing `json:"silences"`
	// IssueGaps are the gaps between operations the workload issued, one
	// asked every AskedGapMS.
	IssueGaps  Timing  `json:"issue_gaps"`
	AskedGapMS float64 `json:"asked_gap_ms"`
}

// Timing is a compact account of one kind of the harness's actions.
type Timing struct {
	Count    int     `json:"count"`
	MedianMS float64 `json:"median_ms"`
	MaxMS    float64 `json:"max_ms"`
	Late     int     `json:"late,omitempty"`
	// Worst are the longest few, longest first.
	Worst []Took `json:"worst,omitempty"`
}

// Took is one action and how long it took.
type Took struct {
	What string  `json:"what,omitempty"` // the fault, the node, the container
	At   float64 `json:"at_s"`           // when it began
	MS   float64 `json:"ms"`
}

// worstKept is how many of the longest actions a Timing names.
const worstKept = 5

// Timer gathers the durations of one kind of action into a Timing.
type Timer struct {
	all   []int64
	late  int
	worst []took // longest first
}

type took struct {
	what    string
	at, dur int64
}

// Add counts an action named what that began at and took dur, in ns;
// late says it was later than the harness allows itself.
func (t *Timer) Add(what string, at, dur int64, late bool) {
	t.all = append(t.all, dur)
	if late {
		t.late++
	}
	// After every action at least as long: the earliest of equals is named.
	i, _ := slices.BinarySearchFunc(t.worst, dur, func(w took, d int64) int { return cmp.Or(cmp.Compare(d, w.dur), -1) })
	if i < worstKept {
		t.worst = slices.Insert(t.worst, i, took{what, at, dur})
		t.worst = t.worst[:min(len(t.worst), worstKept)]
	}
}

// Timing sums up what was added.
func (t *Timer) Timing() Timing {
	if len(t.all) == 0 {
		return Timing{}
	}
	all := slices.Sorted(slices.Values(t.all))
	n := len(all)
	out := Timing{Count: n, MedianMS: millis((all[(n-1)/2] + all[n/2]) / 2), MaxMS: millis(all[n-1]), Late: t.late}
	for _, w := range t.worst {
		out.Worst = append(out.Worst, Took{What: w.what, At: seconds(w.at), MS: millis(w.dur)})
	}
	return out
}

// HarnessTimingOf times the harness's actions that history h holds (all
// but Starts), observed every interval, the workload asked to issue rate
// operations per second.
func HarnessTimingOf(h []history.Event, every time.Duration, rate float64) HarnessTiming {
	every = cmp.Or(every, defaultEvery)
	var injections, heals, probes, silences, gaps Timer
	for _, a := range faultActions(h) {
		e := &h[a.pos]
		t := &injections
		if e.Phase == history.Heal {
			t = &heals
		}
		t.Add(e.F, e.Sent, a.took, a.late())
	}
	clocks := watchClocks(h)
	prompt := promptBeats * int64(every)
	lastInvoke := int64(-1)
	for i := range h {
		switch e := &h[i]; {
		case e.Type == history.Leader && e.Error == "":
			lag := probeLag(e, clocks)
			probes.Add(e.Node, e.Time-lag, lag, lag > prompt)
		case e.Type == history.Invoke:
			if lastInvoke >= 0 {
				gaps.Add("", lastInvoke, e.Time-lastInvoke, false)
			}
			lastInvoke = e.Time
		}
	}
	for _, s := range observerBlind(h, every, clocks) {
		silences.Add("", s.Start, s.End-s.Start, false)
	}
	t := HarnessTiming{
		Injections: injections.Timing(), Heals: heals.Timing(), Probes: probes.Timing(),
		Silences: silences.Timing(), IssueGaps: gaps.Timing(),
	}
	if rate > 0 {
		t.AskedGapMS = 1000 / rate
	}
	return t
}

// LatenessRules says in words when the harness counts itself late, for a
// report beside a HarnessTiming of a run observed every interval.
func LatenessRules(every time.Duration) string {
	every = cmp.Or(every, defaultEvery)
	return fmt.Sprintf("A fault's injection or heal is late when it took more than %d times its usual time, the median of that fault's others of the same phase or %v, whichever is larger. An answer is late when it reached the observer more than %v (%d observation intervals, twice the time after which it gives up on a node) after its belief held. A silence is a span of more than %v in which no answer of any node reached the observer in time. The availability checker does not blame the target for a stretch that a late fault action or a silence could explain.",
		lateFactor, time.Duration(lateFloor), promptBeats*every, promptBeats, time.Duration(blindAfter(every)))
}
