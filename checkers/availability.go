package checkers

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/splitbrain/splitbrain/history"
)

// An election storm is more than stormElections new leaderships within
// stormWindow: the cluster spends its time electing instead of serving.
const (
	stormElections = 5
	stormWindow    = int64(10 * time.Second)
)

// nodeBelief is what a node's latest proof said.
type nodeBelief struct {
	b     belief // noBelief until the node is first heard of
	token int64
	last  int // position of that proof
}

// election is the first claim of a new leadership.
type election struct {
	at   int64
	pos  int
	node string
}

// storm is a union of overlapping stormWindows, each holding more than
// stormElections new leaderships.
type storm struct {
	start, end  int64
	first, last int // positions of the first claims of its first and last elections
	from, to    int // ordinals of its first and last elections
	nodes       []string
}

// availability is the state of Availability's single pass.
type availability struct {
	h       []history.Event
	ids     map[string]int
	names   []string
	beliefs []nodeBelief // per node
	leading int          // nodes whose latest proof says they lead

	// now is the latest time seen: answers can be recorded slightly out of
	// order, and a period never runs backwards.
	now int64
	// Leaderless time is counted from the first leader observation.
	observing      bool
	start, since   int64 // the first observation; the start of the current leaderless period
	firstLeader    int64 // -1: no leader seen yet
	periods        int
	total, longest int64

	seen      map[nodeToken]bool // leaderships begun
	recent    [stormElections + 1]election
	elections int
	cur       storm   // the latest storm...
	nStorms   int     // ...of this many
	storms    []storm // the first maxStored, once they are over

	writesOK, writesFailed, writesInfo int
	writesNotLeader                    int // of writesFailed

	// Recovery is judged from the event at position heal, until deadline.
	heal      int
	deadline  int64
	recovered int64        // -1: no single leader seen since heal
	atLimit   []nodeBelief // beliefs at the deadline, if not recovered by then

	// After recovery, a leaderless stretch longer than recovery is a
	// leader lost for good: the first is kept.
	recovery int64
	sinceAt  int // the position of the proof that began the leaderless period
	lost     *lostLeader

	// After the final heal, a sole leader whose token is below newest's
	// leads a leadership older than one that wrote (staleleader.go): the
	// stretch in progress, and the first that outlasted recovery.
	newest          newestWrite
	staleNow, stale *staleLeader
}

// lostLeader is a leaderless stretch after recovery, from the proof at
// position from to the one at to (-1: the end of the history).
type lostLeader struct {
	start, end int64
	from, to   int
}

// Availability measures how much of the run had a leader and how fast
// leadership came back, and checks that exactly one leader was seen within
// recovery of the final heal.
//
// A node's belief that it leads holds from one proof (see beliefOf: an
// answered leader observation, a write it made as leader or refused as not
// leader) until its next one; a poll it did not answer ends it. Proofs are
// timed when their answer reached the controller, so every figure is
// precise to about one observation interval.
//
//   - The observed time (observed_s) runs from the first leader observation
//     to the end of the history. Leaderless time is the part of it in which
//     no node believed it led; the initial election is part of it, and is
//     also given alone as first_leader_s.
//   - Failovers are the faults Faults says a new leader followed.
//   - An election is a leadership that begins: a node seen leading with a
//     token it was not seen leading with before (claims without a token
//     cannot say which leadership they belong to and are not counted). More
//     than 5 within 10 s is a storm: a Window, not a violation.
//     elections_per_min is per minute of observed time.
//   - A rejoin is the heal of a fault, with no other fault in effect,
//     while one node led with a majority naming it leader, to which the
//     nodes the fault touched come back (rejoins). One that ended the
//     leadership it came back to within 3 s, before another fault, is a
//     disruption (a node returning with a higher term, where pre-vote
//     would have kept it from raising it): a Window, not a violation.
//   - Write availability is the share of completed writes that were ok.
//     Clients write through any node, so in a healthy cluster of N most
//     writes are refused by a node that does not lead: writes_not_leader
//     counts those among writes_failed.
//   - Recovery: after the final heal (the first event if no fault ever took
//     effect), there must be a moment within recovery when exactly one node
//     believes it leads; nodes that do not answer do not lead. Not seen by
//     then is Invalid, unless the final heal itself failed; a history that
//     ends sooner, still has a fault in effect, or holds no leader
//     observation is Unknown. And recovery must hold to the end: once a
//     single leader was seen, a stretch with no leader longer than
//     recovery, with no fault in effect, is Invalid too (leader-lost): a
//     cluster that re-elected and then lost its leader for good. So is a
//     stretch longer than recovery that begins with a sole leader whose
//     token is below that of a write already acknowledged, and in which
//     no node leads with a token as high (stale-leader):
//     the cluster went back to a leadership older than one that wrote, as
//     a woken primary that overwrites its successor's key does
//     (patroni#2689); the fence refuses its writes. A history that ends
//     in either stretch, not yet longer than recovery, is Unknown.
//   - The harness's own lateness (lateness.go): a breach that it could
//     explain is Unknown, its violation kept. A fault's injection or heal
//     within the stretch judged (the final heal, for no-recovery) that took
//     more than 3 times its usual time, the median of that fault's others
//     or 2 s, whichever is larger, says the host or Docker Engine was
//     struggling; an observer that learned nothing promptly of any node
//     for so much of the stretch that what it saw of it is within recovery
//     may have missed the leader, or learned of it late.
//
// Only what the history proves is judged: Valid needs a single leader
// within recovery of the final heal and a history that does not end in a
// stretch with no leader after it; Invalid needs the breach itself. A
// history that ends before either is proved (a run killed or stopped
// early) is Unknown, and the Note says how far it got.
//
// Figures: observed_s, leaderless_s, leaderless_periods,
// leaderless_longest_s, first_leader_s, failovers, failover_max_s,
// failover_mean_s, elections, elections_per_min, storms, rejoins,
// rejoin_disruptions, writes_ok,
// writes_failed, writes_not_leader, writes_indeterminate, write_availability, recovery_s,
// violations. first_leader_s, write_availability and recovery_s are left
// out when there is nothing to measure (no leader seen, no completed write,
// no single leader after the final heal, or recovery not judged).
func Availability(recovery time.Duration) func(Input) Result {
	return func(in Input) Result {
		h := in.History
		heal, unhealed := finalHeal(h)
		s := &availability{
			h: h, ids: map[string]int{}, seen: map[nodeToken]bool{},
			firstLeader: -1, recovered: -1, heal: max(heal, 0), recovery: int64(recovery),
		}
		if len(h) > 0 {
			s.deadline = h[s.heal].Time + int64(recovery)
		}
		ops := opTracker{}
		for i := range h {
			s.step(i, ops.see(h, i))
		}
		s.finish()

		r := Result{Valid: Valid, Figures: s.figures(Faults(h))}
		for _, st := range s.storms {
			r.Windows = append(r.Windows, s.describeStorm(st))
		}
		back, disruptions := rejoins(h)
		r.Figures["rejoins"], r.Figures["rejoin_disruptions"] = float64(back), float64(len(disruptions))
		r.Windows = append(r.Windows, disruptions[:min(len(disruptions), maxStored)]...)
		slices.SortStableFunc(r.Windows, func(a, b Violation) int { return cmp.Compare(a.Time, b.Time) })
		from := "the final heal"
		if heal < 0 {
			from = "the start of the run"
		}
		var (
			why string
			// The breach an invalid verdict judges, and with it what led
			// to it (the final heal), for lateness to explain.
			span, judged Span
		)
		switch {
		case !s.observing:
			r.Valid = Unknown
			why = "The history holds no leader observation: there is nothing to measure."
			delete(r.Figures, "recovery_s")
		case unhealed >= 0:
			r.Valid = Unknown
			delete(r.Figures, "recovery_s") // measured from the start, which means nothing here
			e := &h[unhealed]
			why = fmt.Sprintf("The fault %s injected at %s (event %d) was never healed in this history, so recovery cannot be judged.", e.F, secs(e.Time), e.Index)
		case s.recovered >= 0 && s.recovered <= s.deadline && s.lost != nil:
			r.Valid = Invalid
			r.Violations = []Violation{s.leaderLost(from)}
			judged = Span{s.lost.start, s.lost.end}
			span = judged
		case s.recovered >= 0 && s.recovered <= s.deadline && s.stale != nil:
			r.Valid = Invalid
			r.Violations = []Violation{s.describeStale(from)}
			judged = Span{s.stale.start, s.stale.end}
			span = judged
		case s.recovered >= 0 && s.recovered <= s.deadline && s.endsLeaderless(observedGap(in.ObserveInterval)):
			r.Valid = Unknown
			began := &h[s.sinceAt]
			why = fmt.Sprintf("After %s a single leader was seen at %s, but the history ends %s into a stretch with no leader that began at %s (event %d), before the recovery timeout of %v: it proves neither that the leader was lost for good nor that one came back.",
				from, secs(s.recovered), secs(s.now-s.since), secs(s.since), began.Index, recovery)
		case s.recovered >= 0 && s.recovered <= s.deadline && s.endsStale(observedGap(in.ObserveInterval)):
			r.Valid = Unknown
			st := s.staleNow
			began := &h[st.from]
			why = fmt.Sprintf("After %s a single leader was seen at %s, but the history ends %s into a stretch, begun at %s (event %d) when %s led alone with token %d, below the token %d of a write acknowledged at event %d, in which no node led with a token as high, before the recovery timeout of %v: it proves neither that the cluster stayed on the older leadership nor that a newer one came back.",
				from, secs(s.recovered), secs(s.now-st.start), secs(st.start), began.Index, began.Node, began.Token, s.newest.token, h[st.newer].Index, recovery)
		case s.recovered >= 0 && s.recovered <= s.deadline:
		case s.atLimit == nil:
			r.Valid = Unknown
			why = fmt.Sprintf("The history ends %s after %s, before the recovery timeout of %v, and no single leader was seen by then: it proves neither that the cluster recovered nor that it did not.",
				secs(s.now-h[s.heal].Time), from, recovery)
		case heal >= 0 && h[heal].Error != "":
			r.Valid = Unknown
			why = fmt.Sprintf("No single leader was seen within %v of the final heal, but that heal failed (%s): the fault may still have been in effect.", recovery, h[heal].Error)
		default:
			r.Valid = Invalid
			r.Violations = []Violation{s.noRecovery(recovery, from)}
			judged = Span{h[s.heal].Time, s.deadline}
			span = judged
			if heal >= 0 && h[heal].Sent > 0 {
				span.Start = min(h[heal].Sent, span.Start)
			}
		}
		if r.Valid == Invalid {
			if excuse := latenessOf(h, in.ObserveInterval).excuse(h, span, judged, int64(recovery)); excuse != "" {
				r.Valid = Unknown
				why = "Unknown, not invalid: " + excuse + ". The violation is kept for the reader."
			}
		}
		r.Figures["violations"] = float64(len(r.Violations))
		r.Note = notes(why, availabilityPrecision(in.ObserveInterval), capNote(s.nStorms, "storms"), capNote(len(disruptions), "rejoin disruptions"))
		return r
	}
}

// finalHeal finds the last heal in h (-1: none). A fault injected after it
// (open, -1: none) was never healed: it is still in effect at the end of
// the history. A failed injection that nothing heals took no effect.
func finalHeal(h []history.Event) (heal, open int) {
	for i := len(h) - 1; i >= 0; i-- {
		e := &h[i]
		switch {
		case e.Type != history.Nemesis:
		case e.Phase == history.Heal:
			return i, -1
		case e.Phase == history.Inject && e.Error == "":
			return -1, i
		}
	}
	return -1, -1
}

// step takes h[i]; inv is the invoke it completes, or -1.
func (s *availability) step(i, inv int) {
	e := &s.h[i]
	// Beliefs are judged at each instant, after every proof made at it: a
	// handover seen at one instant is not a moment with no leader or two.
	if i > s.heal && e.Time > s.now {
		s.instant()
		// The beliefs at the deadline are those before the first event past it.
		if s.recovered < 0 && s.atLimit == nil && e.Time > s.deadline {
			s.atLimit = slices.Clone(s.beliefs)
		}
	}
	s.now = max(s.now, e.Time)
	if e.Type == history.Leader && !s.observing {
		s.observing, s.start = true, s.now
		if s.leading > 0 {
			s.firstLeader = s.now
		} else {
			s.since, s.sinceAt = s.now, i
		}
	}
	bel := beliefOf(s.h, i, inv)
	switch e.Type {
	case history.OK, history.Fail, history.Info:
		if isWrite(s.h, i, inv) {
			switch e.Type {
			case history.OK:
				s.writesOK++
				if e.Token > s.newest.token {
					s.newest = newestWrite{token: e.Token, pos: i}
				}
			case history.Fail:
				s.writesFailed++
				if bel == follows { // refused as not leader
					s.writesNotLeader++
				}
			default:
				s.writesInfo++
			}
		}
	}
	if bel != noBelief {
		s.believe(i, bel)
	}
}

// instant judges the beliefs at now, after the final heal.
func (s *availability) instant() {
	if s.recovered < 0 && s.leading == 1 {
		s.recovered = s.now
	}
	s.judgeStale()
}

// believe records that h[i] proved b about its node.
func (s *availability) believe(i int, b belief) {
	e := &s.h[i]
	id, ok := s.ids[e.Node]
	if !ok {
		id = len(s.names)
		s.ids[e.Node] = id
		s.names = append(s.names, e.Node)
		s.beliefs = append(s.beliefs, nodeBelief{})
	}
	nb := &s.beliefs[id]
	was := nb.b == leads
	*nb = nodeBelief{b: b, token: e.Token, last: i}
	switch {
	case was && b != leads:
		s.leading--
		if s.leading == 0 {
			s.since, s.sinceAt = s.now, i
		}
	case !was && b == leads:
		if s.leading == 0 && s.observing {
			if s.firstLeader < 0 {
				s.firstLeader = s.now
			}
			s.endLeaderless(i)
		}
		s.leading++
	}
	if b == leads && e.Token > 0 && !s.seen[nodeToken{e.Node, e.Token}] {
		s.seen[nodeToken{e.Node, e.Token}] = true
		s.elect(election{at: s.now, pos: i, node: e.Node})
	}
}

// endLeaderless closes a leaderless period at now, ended by the proof at
// position by (-1: the end of the history). A period of no length is a
// handover seen at one instant, not time without a leader.
func (s *availability) endLeaderless(by int) {
	d := s.now - s.since
	if d > 0 {
		s.periods++
		s.total += d
		s.longest = max(s.longest, d)
	}
	if s.recovered >= 0 && s.since >= s.recovered && d > s.recovery && s.lost == nil {
		s.lost = &lostLeader{start: s.since, end: s.now, from: s.sinceAt, to: by}
	}
}

// elect counts a new leadership and finds storms: when the election
// stormElections before it began less than stormWindow earlier, the window
// from there holds one too many.
func (s *availability) elect(el election) {
	k := s.elections
	s.recent[k%len(s.recent)] = el
	s.elections++
	if k < stormElections {
		return
	}
	from := k - stormElections
	oldest := s.recent[from%len(s.recent)]
	if el.at-oldest.at >= stormWindow {
		return
	}
	// Windows that share an election are one storm.
	if s.nStorms > 0 && from <= s.cur.to {
		s.cur.end, s.cur.last, s.cur.to = el.at, el.pos, k
		if !slices.Contains(s.cur.nodes, el.node) {
			s.cur.nodes = append(s.cur.nodes, el.node)
		}
		return
	}
	s.keepStorm()
	s.nStorms++
	s.cur = storm{start: oldest.at, end: el.at, first: oldest.pos, last: el.pos, from: from, to: k}
	for j := from; j <= k; j++ {
		if n := s.recent[j%len(s.recent)].node; !slices.Contains(s.cur.nodes, n) {
			s.cur.nodes = append(s.cur.nodes, n)
		}
	}
}

// keepStorm stores the latest storm, if there is one and room for it.
func (s *availability) keepStorm() {
	if s.nStorms > len(s.storms) && len(s.storms) < maxStored {
		s.storms = append(s.storms, s.cur)
	}
}

// finish closes what is still open at the end of the history.
func (s *availability) finish() {
	if len(s.h) > 0 {
		s.instant()
	}
	if st := s.staleNow; st != nil && s.now-st.start > s.recovery {
		s.endStale(-1)
	}
	if s.observing && s.leading == 0 {
		s.endLeaderless(-1)
	}
	s.keepStorm()
	if s.recovered < 0 && s.atLimit == nil && len(s.h) > 0 && s.now >= s.deadline {
		s.atLimit = s.beliefs
	}
}

// endsLeaderless says the history ends in a stretch with no leader that
// began after recovery and outlasts gap. One longer than recovery is
// already a leader lost; one not longer is undecided: the history stops
// before it does. One no longer than gap is the observation's own grain:
// a polled node's answers leave gaps between them, and a complete run
// ends as the controller sees a single leader.
func (s *availability) endsLeaderless(gap int64) bool {
	return s.observing && s.leading == 0 && s.recovered >= 0 && s.since >= s.recovered && s.now-s.since > gap
}

// observedGap is how long a leader can go unobserved between a node's
// answers without the history saying anything about it: a polled node
// answers once an interval, each answer late by up to another.
func observedGap(interval time.Duration) int64 {
	return int64(2 * interval)
}

func (s *availability) figures(faults []FaultEffect) map[string]float64 {
	var observed int64
	if s.observing {
		observed = s.now - s.start
	}
	f := map[string]float64{
		"observed_s":           seconds(observed),
		"leaderless_s":         seconds(s.total),
		"leaderless_periods":   float64(s.periods),
		"leaderless_longest_s": seconds(s.longest),
		"elections":            float64(s.elections),
		"elections_per_min":    0,
		"storms":               float64(s.nStorms),
		"writes_ok":            float64(s.writesOK),
		"writes_failed":        float64(s.writesFailed),
		"writes_not_leader":    float64(s.writesNotLeader),
		"writes_indeterminate": float64(s.writesInfo),
	}
	if observed > 0 {
		f["elections_per_min"] = float64(s.elections) / (seconds(observed) / 60)
	}
	if s.firstLeader >= 0 {
		f["first_leader_s"] = seconds(s.firstLeader - s.start)
	}
	if done := s.writesOK + s.writesFailed + s.writesInfo; done > 0 {
		f["write_availability"] = float64(s.writesOK) / float64(done)
	}
	if s.recovered >= 0 {
		f["recovery_s"] = seconds(s.recovered - s.h[s.heal].Time)
	}
	var n int
	var sum, longest float64
	for _, fe := range faults {
		if fe.After != "" {
			n++
			sum += fe.FailoverS
			longest = max(longest, fe.FailoverS)
		}
	}
	f["failovers"], f["failover_max_s"], f["failover_mean_s"] = float64(n), longest, 0
	if n > 0 {
		f["failover_mean_s"] = sum / float64(n)
	}
	return f
}

func (s *availability) describeStorm(st storm) Violation {
	return Violation{
		Kind:   "election-storm",
		Time:   st.start,
		Events: sortedUnique([]int64{s.h[st.first].Index, s.h[st.last].Index}),
		Nodes:  st.nodes,
		Message: fmt.Sprintf("%d new leaderships (of %s) began between %s and %s (%s); more than %d within %v is an election storm: the cluster spent its time electing instead of serving",
			st.to-st.from+1, joinAnd(st.nodes), secs(st.start), secs(st.end), secs(st.end-st.start), stormElections, time.Duration(stormWindow)),
	}
}

// noRecovery describes what the nodes believed at the deadline, with the
// final heal and every node's latest proof as evidence.
func (s *availability) noRecovery(recovery time.Duration, from string) Violation {
	heal := &s.h[s.heal]
	v := Violation{Kind: "no-recovery", Time: s.deadline}
	events := []int64{heal.Index}
	var claims, quiet []string
	for id, nb := range s.atLimit {
		events = append(events, s.h[nb.last].Index)
		name := s.names[id]
		switch nb.b {
		case leads:
			v.Nodes = append(v.Nodes, name)
			if nb.token > 0 {
				name = fmt.Sprintf("%s (token %d)", name, nb.token)
			}
			claims = append(claims, name)
		case silent:
			quiet = append(quiet, name)
		}
	}
	v.Events = sortedUnique(events)

	var b strings.Builder
	fmt.Fprintf(&b, "no single leader within %v of %s (event %d at %s): at %s ", recovery, from, heal.Index, secs(heal.Time), secs(s.deadline))
	if len(claims) == 0 {
		b.WriteString("no node believed it led")
	} else {
		both := "both"
		if len(claims) > 2 {
			both = "all"
		}
		fmt.Fprintf(&b, "%s %s believed they led", joinAnd(claims), both)
	}
	if len(quiet) > 0 {
		fmt.Fprintf(&b, " (%s did not answer)", joinAnd(quiet))
	}
	if s.recovered >= 0 {
		fmt.Fprintf(&b, "; a single leader was first seen %s after it", secs(s.recovered-heal.Time))
	} else {
		fmt.Fprintf(&b, "; none was seen by the end of the history, %s after it", secs(s.now-heal.Time))
	}
	v.Message = b.String()
	return v
}

// leaderLost describes the first leaderless stretch after recovery that
// outlasted the recovery timeout.
func (s *availability) leaderLost(from string) Violation {
	l, heal := s.lost, &s.h[s.heal]
	began := &s.h[l.from]
	v := Violation{Kind: "leader-lost", Time: l.start, Nodes: []string{began.Node}}
	until, events := s.until(l.end, l.to, []int64{heal.Index, began.Index})
	v.Events = sortedUnique(events)
	v.Message = fmt.Sprintf("after %s (event %d at %s) a single leader was seen at %s, but from %s, when %s stopped leading (event %d), no node believed it led for %s, %s: longer than the recovery timeout of %v, with no fault in effect",
		from, heal.Index, secs(heal.Time), secs(s.recovered), secs(l.start), began.Node, began.Index, secs(l.end-l.start), until, time.Duration(s.recovery))
	return v
}

// until says how a stretch that ended at end ended: with the proof at
// position to that a node led (-1: none), which joins events, or with the
// history.
func (s *availability) until(end int64, to int, events []int64) (string, []int64) {
	if to < 0 {
		return fmt.Sprintf("to the end of the history at %s", secs(end)), events
	}
	e := &s.h[to]
	return fmt.Sprintf("until %s led at %s (event %d)", e.Node, secs(end), e.Index), append(events, e.Index)
}

// joinAnd lists names as "a", "a and b", "a, b and c".
func joinAnd(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func availabilityPrecision(every time.Duration) string {
	const how = "Figures are measured from leader observations and writes, timed when each answer reached the controller"
	if every <= 0 {
		return how + "; their precision is unknown, since no observation interval was given."
	}
	return fmt.Sprintf("%s, so they are precise to about ±%v (the observation interval).", how, every)
}
