// Package etcdelection is the belief of an elector on etcd's concurrency election recipe, as a deterministic state machine stepped by what the recipe reports.
package etcdelection

import "fmt"

// Flaw selects how the elector reads its own leadership.
type Flaw string

const (
	// Correct leads from a won campaign until its session ends, and not at
	// all when the session had ended before the campaign returned.
	Correct Flaw = ""
	// Naive is the elector as it is often written: it leads from a won
	// campaign until it resigns and never looks at its session, so a lease
	// that expired under it (a pause, a partition) leaves it leading while
	// another node wins.
	Naive Flaw = "naive"
)

// ParseFlaw reads a flaw's name: "" or "naive".
func ParseFlaw(s string) (Flaw, error) {
	switch f := Flaw(s); f {
	case Correct, Naive:
		return f, nil
	}
	return "", fmt.Errorf("etcdelection: unknown flaw %q (want \"\" or %q)", s, Naive)
}

// Kind is what happened.
type Kind int

const (
	// Won is a Campaign that returned nil.
	Won Kind = iota + 1
	// SessionEnded is a session's Done channel closing: its lease expired,
	// or the client gave up keeping it alive.
	SessionEnded
	// Resigned is the node giving up its leadership.
	Resigned
)

func (k Kind) String() string {
	switch k {
	case Won:
		return "won"
	case SessionEnded:
		return "session-ended"
	case Resigned:
		return "resigned"
	}
	return "kind?"
}

// Event is one thing the recipe reported.
type Event struct {
	Kind Kind
	// Session is the generation of the session the event concerns (Won,
	// SessionEnded): the driver numbers its sessions 1, 2, ... in the
	// order it makes them. Lease IDs would not do: they are not ordered
	// across etcd members.
	Session uint64
	// Rev is Won's fencing token: Election.Rev(), the leader key's create
	// revision, or the revision of the lock service's answer.
	Rev int64
	// SessionDone says, for Won, that the session was already done when
	// Campaign returned: Campaign can return nil after the session's lease
	// expired (etcd-io/etcd#19597), when the key it waited on was already
	// deleted with the lease.
	SessionDone bool
}

// Belief is what the node believes now.
type Belief struct {
	Leader bool
	Token  int64 // the leader key's create revision, while Leader
}

// Elector is one node's belief. It does no I/O and reads no clock: the
// driver steps it with what etcd's client reported, in that order.
type Elector struct {
	flaw Flaw

	// newest is the newest session generation any event named: an event
	// about an older session is stale.
	newest uint64
	// ended is the newest generation known to have ended: a win in it, or
	// in an older one, is no leadership.
	ended uint64

	leader bool
	token  int64
	// session is the generation the leadership was won in.
	session uint64
}

// New returns an elector that does not lead.
func New(flaw Flaw) (*Elector, error) {
	if _, err := ParseFlaw(string(flaw)); err != nil {
		return nil, err
	}
	return &Elector{flaw: flaw}, nil
}

// Flaw is the elector's flaw.
func (e *Elector) Flaw() Flaw { return e.flaw }

// Belief is the elector's belief now.
func (e *Elector) Belief() Belief {
	if !e.leader {
		return Belief{}
	}
	return Belief{Leader: true, Token: e.token}
}

// Step applies ev.
func (e *Elector) Step(ev Event) {
	switch ev.Kind {
	case Won:
		if ev.Session < e.newest {
			return // a campaign of a session already superseded
		}
		e.newest = ev.Session
		// The correct elector takes a campaign that outlived its session
		// for what it is: the key it won with is gone with the lease, and
		// another node may already lead.
		if e.flaw == Correct && (ev.SessionDone || ev.Session <= e.ended) {
			e.leader, e.token = false, 0
			return
		}
		e.leader, e.token, e.session = true, ev.Rev, ev.Session
	case SessionEnded:
		if e.flaw == Naive {
			return // it never looks
		}
		e.newest = max(e.newest, ev.Session)
		e.ended = max(e.ended, ev.Session)
		if e.leader && ev.Session == e.session {
			e.leader, e.token = false, 0
		}
	case Resigned:
		e.leader, e.token = false, 0
	}
}
