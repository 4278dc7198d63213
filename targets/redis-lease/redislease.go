// Package redislease is the seeds' Redis elector (SET NX PX and INCR to acquire, GET then PEXPIRE to renew) as a deterministic state machine.
package redislease

import (
	"errors"
	"time"
)

// Op is what a request asks of Redis.
type Op int

const (
	// Acquire sets Key to Value if it is free, with TTL, and if that took,
	// increments Counter: one script, so the two happen together.
	Acquire Op = iota + 1
	// Get reads Key.
	Get
	// Expire gives Key the TTL again, whoever holds it: the seed sends it
	// apart from the Get that found its own name there.
	Expire
)

func (o Op) String() string {
	switch o {
	case Acquire:
		return "acquire"
	case Get:
		return "get"
	case Expire:
		return "expire"
	}
	return "op?"
}

// Request is one command for Redis, with what it names.
type Request struct {
	Op      Op
	Key     string        // the lock
	Counter string        // Acquire: the fencing token's counter
	Value   string        // Acquire: this node's name
	TTL     time.Duration // Acquire, Expire
}

// Answer is Redis's reply to a Request.
type Answer struct {
	Token  uint64 // Acquire: the counter's new value; 0 when the lock was held
	Holder string // Get: the lock's value; "" when there is no lock
	Set    bool   // Expire: the lock existed and got the TTL
}

// Config of one elector.
type Config struct {
	ID string
	// Key is the lock; the token's counter is Key + CounterSuffix.
	Key string
	// TTL is how long the lock lives after an acquire or a renewal,
	// by Redis's clock.
	TTL time.Duration
}

// CounterSuffix makes the counter's key from the lock's.
const CounterSuffix = ":token"

// Validate says what is wrong with c.
func (c Config) Validate() error {
	switch {
	case c.ID == "":
		return errors.New("redislease: no ID")
	case c.Key == "":
		return errors.New("redislease: no Key")
	case c.TTL < time.Millisecond:
		// PX and PEXPIRE count whole milliseconds.
		return errors.New("redislease: TTL must be at least 1ms")
	}
	return nil
}

// Elector is one node's side of the election. A round, once every renew
// interval, is an acquire for a node that does not lead, and for the
// leader a Get followed, if the lock still names it, by an Expire. The
// caller asks Next for a request, sends it, and hands the answer to Done,
// which says whether the round goes on.
//
// The elector reads no clock: it leads from an acquire that took until a
// renewal fails, as the seed does. A leader frozen for longer than TTL
// wakes still leading, while another node may have taken the expired lock:
// the flaw this target is there to show.
type Elector struct {
	cfg    Config
	leader bool
	token  uint64
	// expire is set when a Get found the lock still ours: the round's
	// next request is the Expire.
	expire bool
}

// New returns the elector of cfg.
func New(cfg Config) (*Elector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Elector{cfg: cfg}, nil
}

// Next is the round's next request.
func (e *Elector) Next() Request {
	switch {
	case e.expire:
		return Request{Op: Expire, Key: e.cfg.Key, TTL: e.cfg.TTL}
	case e.leader:
		return Request{Op: Get, Key: e.cfg.Key}
	}
	return Request{Op: Acquire, Key: e.cfg.Key, Counter: e.cfg.Key + CounterSuffix, Value: e.cfg.ID, TTL: e.cfg.TTL}
}

// Done takes Redis's answer to req and says whether the round goes on.
// ok is false when no answer came (an error, a timeout): a leader's
// renewal has then failed, and a follower's acquire may or may not have
// taken, which the follower cannot tell, so it does not lead.
func (e *Elector) Done(req Request, a Answer, ok bool) bool {
	e.expire = false
	if !ok {
		e.leader = false
		return false
	}
	switch req.Op {
	case Acquire:
		if a.Token > 0 {
			e.leader, e.token = true, a.Token
		}
	case Get:
		if a.Holder == e.cfg.ID {
			e.expire = true
			return true
		}
		e.leader = false
	case Expire:
		if !a.Set {
			e.leader = false
		}
	}
	return false
}

// Status is a node's belief.
type Status struct {
	Leader bool
	Token  uint64 // the counter's value that the acquire returned, while Leader
}

// Status is the node's belief now.
func (e *Elector) Status() Status {
	if !e.leader {
		return Status{}
	}
	return Status{Leader: true, Token: e.token}
}
