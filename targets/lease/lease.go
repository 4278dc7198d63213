// Package lease is leader election by a lease in a compare-and-swap store, as Kubernetes' Lease objects are used: the holder renews a record stamped with its wall clock, and a node whose own clock says the record has expired takes it over.
package lease

import (
	"errors"
	"time"
)

// Record is the lease as the store keeps it.
type Record struct {
	Holder string `json:"holder,omitempty"`
	// Renewed is the holder's wall clock when it last renewed, in Unix
	// nanoseconds. Readers judge expiry against their own wall clocks:
	// the design's weak point, which clock faults expose.
	Renewed int64 `json:"renewed_ns,omitempty"`
	// Transitions counts the holders so far; each new holder raises it,
	// so it is the leadership's fencing token.
	Transitions uint64 `json:"transitions"`
	// Version is raised by every write; a write names the version it was
	// based on, and the store refuses it if that is no longer current.
	Version uint64 `json:"version"`
}

// Request is what an elector asks the store in one round: to read the
// record, or to replace version Expect by Record.
type Request struct {
	Write  bool   `json:"write,omitempty"`
	Expect uint64 `json:"expect"`
	Record Record `json:"record"`
}

// Response is the store's answer: OK when the request did what it asked (a
// read always does; a write when the version it expected was current), and
// the record now current either way.
type Response struct {
	OK     bool   `json:"ok"`
	Record Record `json:"record"`
}

// Config of one elector.
type Config struct {
	ID string
	// Duration is how long a record stays valid after its renewal, by a
	// reader's clock. A node takes over a record older than that.
	Duration time.Duration
	// RenewDeadline is how long the holder believes it leads after a
	// renewal that took, counted from when it sent it. Shorter than
	// Duration, so the holder gives up before anyone may take over, as
	// long as their clocks agree.
	RenewDeadline time.Duration
}

// Validate says what is wrong with c.
func (c Config) Validate() error {
	switch {
	case c.ID == "":
		return errors.New("lease: no ID")
	case c.Duration <= 0 || c.RenewDeadline <= 0:
		return errors.New("lease: Duration and RenewDeadline must be positive")
	case c.RenewDeadline >= c.Duration:
		return errors.New("lease: RenewDeadline must be shorter than Duration")
	}
	return nil
}

// Elector is one node's side of the election as a deterministic state
// machine. A round, once a tick, is a write for the holder (a renewal) and
// for anyone else a read, followed at once by a write when the record
// turns out free or expired (a takeover), as client-go's leader election
// does it: a takeover based on an old read would lose to every renewal
// made since. The caller asks Next for a request, sends it to the store,
// and hands the answer to Done, which says whether the round goes on.
// Time comes in as arguments, read from the node's (skewable) wall clock;
// the Elector owns no clock and no network.
type Elector struct {
	cfg   Config
	seen  Record // the record as last read or written
	known bool   // seen holds an answer of the store's
	fresh bool   // seen was read in this round, and calls for a write
	// until is when the holder stops believing it leads, by its own wall
	// clock: the sending of its last renewal that took, plus RenewDeadline.
	until time.Time
}

// New returns the elector of cfg.
func New(cfg Config) (*Elector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Elector{cfg: cfg}, nil
}

// Next is the next request of the round, at now: the holder renews, any
// other node reads, and writes if the read calls for a takeover.
func (e *Elector) Next(now time.Time) Request {
	s := e.seen
	mine := e.known && s.Holder == e.cfg.ID
	if !mine && !e.fresh {
		return Request{}
	}
	e.fresh = false
	next := Record{Holder: e.cfg.ID, Renewed: now.UnixNano(), Transitions: s.Transitions}
	if !mine {
		next.Transitions++
	}
	return Request{Write: true, Expect: s.Version, Record: next}
}

// Done takes the store's answer to req, which was sent at sent, and says
// whether the round goes on with another request. ok is false when no
// answer came (the store is down, frozen or cut off): the node then knows
// nothing new, and a holder leads on until its deadline.
func (e *Elector) Done(req Request, sent time.Time, resp Response, ok bool) bool {
	e.fresh = false
	if !ok {
		return false
	}
	e.seen, e.known = resp.Record, true
	switch {
	case resp.Record.Holder != e.cfg.ID:
		e.until = time.Time{}
	case req.Write && resp.OK:
		e.until = sent.Add(e.cfg.RenewDeadline)
	}
	if req.Write {
		return false
	}
	e.fresh = resp.Record.Holder == "" || e.expired(sent)
	return e.fresh
}

func (e *Elector) expired(now time.Time) bool {
	return now.After(time.Unix(0, e.seen.Renewed).Add(e.cfg.Duration))
}

// Status is the node's belief at now.
type Status struct {
	Leader bool
	Holder string // who holds the lease, as far as the node knows; "" if nobody or expired
	Token  uint64 // the lease's transitions while Leader
}

// Status is the node's belief at its wall time now.
func (e *Elector) Status(now time.Time) Status {
	var st Status
	// A holder past its deadline names nobody: the record may still look
	// live, but it no longer counts on it.
	if e.known && e.seen.Holder != "" && e.seen.Holder != e.cfg.ID && !e.expired(now) {
		st.Holder = e.seen.Holder
	}
	if now.Before(e.until) {
		st.Leader, st.Holder, st.Token = true, e.cfg.ID, e.seen.Transitions
	}
	return st
}
