// Package zkelection is the belief of an elector on ZooKeeper's election recipe (ephemeral sequential znodes, the lowest leads) and the order of the znodes it queues with.
package zkelection

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Flaw selects how the elector reads its own leadership.
type Flaw string

const (
	// Correct leads only while it can prove its session alive: connected,
	// and ZooKeeper's quorum confirmed a request of its session sent less
	// than the bound ago.
	Correct Flaw = ""
	// Naive leads from the moment its znode is the lowest until ZooKeeper
	// tells it the session expired, which the client hears only once it
	// reaches a server again: cut off or frozen, it leads on while the
	// session expires and another elector wins (CURATOR-220, CURATOR-460).
	Naive Flaw = "naive"
)

// ParseFlaw reads a flaw's name: "" or "naive".
func ParseFlaw(s string) (Flaw, error) {
	switch f := Flaw(s); f {
	case Correct, Naive:
		return f, nil
	}
	return "", fmt.Errorf("zkelection: unknown flaw %q (want \"\" or %q)", s, Naive)
}

// Conn is what the ZooKeeper client says of its connection at the moment
// the belief is asked for.
type Conn struct {
	// Session is the session the client holds or is trying to keep: it
	// changes only once a server told the client its session expired.
	Session int64
	// Live says a server accepted the session on the connection the client
	// has now.
	Live bool
}

// Belief is what the node believes.
//
// The token is the leading znode's czxid, the zxid of the transaction that
// created it. It grows with every new leadership: a leader's znode is the
// lowest live one, so the znode of any later leader was either alive then
// with a higher sequence number or created afterwards. ZooKeeper hands out
// sequence numbers (the parent's counter) and zxids (its epoch, then a
// counter, in one total order that survives its own leader changes) in
// the order it commits transactions, so a higher sequence number means a
// later creation and a higher czxid. A czxid is never 0, and no two
// znodes share one.
type Belief struct {
	Leader bool
	Token  int64 // the leading znode's czxid, while Leader
}

// Elector is one node's belief. It does no I/O and reads no clock: the
// driver tells it what happened and passes the time in when it asks.
//
// Why the correct elector never overlaps the next leader: the next leader
// can only lead once this one's znode is gone, and an ephemeral znode goes
// only with its session, which ZooKeeper expires a whole session timeout
// after it last heard of it. A request of the session that the quorum
// confirmed was heard by ZooKeeper no earlier than it was sent, so the
// session lives at least until its send time plus the timeout, give or
// take the time a follower takes to pass the news on to its leader (half
// a tick, every tick). Belief ends at the send time plus the bound, which
// is safely below the timeout; both are measured on monotonic clocks of
// one kernel. A frozen elector is covered too: the bound is counted on a
// clock that runs on through the freeze, so a thawed elector believes
// nothing until ZooKeeper confirms a request sent after the thaw.
type Elector struct {
	flaw  Flaw
	bound time.Duration

	leading bool
	session int64 // the session that owns the leading znode
	token   int64
	// heard is when the newest confirmed request of session was sent;
	// zero until the first one after the win.
	heard time.Time
}

// New returns an elector that does not lead. bound is how long after the
// send time of its last confirmed request the correct elector believes: it
// must be below the session timeout by more than the heartbeat period plus
// a tick.
func New(flaw Flaw, bound time.Duration) (*Elector, error) {
	if _, err := ParseFlaw(string(flaw)); err != nil {
		return nil, err
	}
	if bound <= 0 {
		return nil, fmt.Errorf("zkelection: bound %v: want a positive duration", bound)
	}
	return &Elector{flaw: flaw, bound: bound}, nil
}

// Flaw is the elector's flaw.
func (e *Elector) Flaw() Flaw { return e.flaw }

// Won says the node's znode, owned by session and created with czxid
// token, is the lowest in the queue. The correct elector leads only once
// a request of the session is confirmed after this (Heard): the read that
// showed the znode lowest may have come from a follower that lost its
// leader.
func (e *Elector) Won(session, token int64) {
	e.leading, e.session, e.token, e.heard = true, session, token, time.Time{}
}

// Heard says the quorum confirmed a request of session that was sent at
// sent. Only the leading session's requests count, and a late answer never
// moves the time back.
func (e *Elector) Heard(session int64, sent time.Time) {
	if e.leading && session == e.session && sent.After(e.heard) {
		e.heard = sent
	}
}

// Lost says the node's znode is gone, or it is queueing anew.
func (e *Elector) Lost() {
	e.leading, e.session, e.token, e.heard = false, 0, 0, time.Time{}
}

// Belief is the elector's belief at now, with the client's connection c as
// it is at now.
func (e *Elector) Belief(now time.Time, c Conn) Belief {
	if !e.leading || c.Session != e.session {
		// The naive elector too: a new session means it was told.
		return Belief{}
	}
	if e.flaw == Correct && (!c.Live || e.heard.IsZero() || now.Sub(e.heard) >= e.bound) {
		return Belief{}
	}
	return Belief{Leader: true, Token: e.token}
}

// seqDigits is how many digits ZooKeeper appends to a sequential znode's
// name: its parent's counter, zero-padded.
const seqDigits = 10

// Seq is the sequence number ZooKeeper appended to the name of a
// sequential znode.
func Seq(name string) (int64, bool) {
	if len(name) < seqDigits {
		return 0, false
	}
	n, err := strconv.ParseInt(name[len(name)-seqDigits:], 10, 64)
	return n, err == nil && n >= 0
}

// Queue sorts the names of sequential znodes by their sequence numbers,
// lowest first, and leaves out names that carry none.
func Queue(children []string) []string {
	q := slices.DeleteFunc(slices.Clone(children), func(c string) bool {
		_, ok := Seq(c)
		return !ok
	})
	slices.SortFunc(q, func(a, b string) int {
		x, _ := Seq(a)
		y, _ := Seq(b)
		return cmp.Compare(x, y)
	})
	return q
}

// Mine lists, lowest first, the znodes among children that a node queued
// with prefix.
func Mine(children []string, prefix string) []string {
	return slices.DeleteFunc(Queue(children), func(c string) bool {
		return !strings.HasPrefix(c, prefix)
	})
}

// Place finds the znode named mine among children: whether it is the
// lowest (it leads) or, if not, the znode just before it, the one it
// watches. ok is false when mine is not among them.
func Place(children []string, mine string) (pred string, lowest, ok bool) {
	q := Queue(children)
	i := slices.Index(q, mine)
	switch {
	case i < 0:
		return "", false, false
	case i == 0:
		return "", true, true
	}
	return q[i-1], false, true
}
