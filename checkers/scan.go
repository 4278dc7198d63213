package checkers

import (
	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/history"
)

// opTracker pairs each completion with its invoke: a Jepsen process has at
// most one operation open, so the process number is the key.
type opTracker map[int]int

// see takes h[i] and, when it completes an operation, returns the position
// of its invoke; otherwise -1.
func (t opTracker) see(h []history.Event, i int) int {
	e := &h[i]
	switch e.Type {
	case history.Invoke:
		t[e.Process] = i
	case history.OK, history.Fail, history.Info:
		if p, ok := t[e.Process]; ok {
			delete(t, e.Process)
			return p
		}
	}
	return -1
}

// isWrite reports whether h[i] is part of a write. Completions normally
// repeat the invoke's F; when one does not, the invoke decides.
func isWrite(h []history.Event, i, inv int) bool {
	if f := h[i].F; f != "" || inv < 0 {
		return f == history.Write
	}
	return h[inv].F == history.Write
}

// belief is what one event proves about its node's belief that it leads.
type belief uint8

const (
	noBelief belief = iota // proves nothing
	leads                  // the node believed it led, with the event's Token (0: not told)
	follows                // the node believed it did not lead
	silent                 // the node was polled and did not answer
)

// beliefOf says what h[i] proves about h[i].Node; inv is the invoke h[i]
// completes, or -1. Proofs are an answered leader observation, a write the
// node acknowledged (it wrote as leader), a write the fence refused (the
// node wrote as leader, with the token it reports) and a write the node
// refused as not leader. An indeterminate write proves nothing, and neither
// does a read: its Node and Token are the register's, not a belief. An
// observation that got no answer proves silence: the node was frozen, down
// or cut off from the controller.
func beliefOf(h []history.Event, i, inv int) belief {
	e := &h[i]
	if e.Node == "" {
		return noBelief
	}
	switch e.Type {
	case history.Leader:
		switch {
		case e.Error != "":
			return silent
		case e.IsLeader:
			return leads
		}
		return follows
	case history.OK, history.Fail:
		if !isWrite(h, i, inv) {
			return noBelief
		}
		switch {
		case e.Type == history.OK:
			return leads
		case e.Error == contract.ErrNotLeader:
			return follows
		case e.Token > 0:
			return leads
		}
	}
	return noBelief
}

// span is when the belief h[i] reports was held: at some instant between
// the request leaving the controller (a leader observation's Sent, a
// write's invoke) and the answer arriving (h[i].Time), or, for a line a
// node pushed, between the earliest and the latest its clock's dating
// allows (clocks: see watchClocks).
func span(h []history.Event, i, inv int, clocks map[clock]dating) (start, end int64) {
	e := &h[i]
	start, end = e.Time, e.Time
	switch {
	case pushed(e):
		if d, ok := clocks[clockOf(e)]; ok {
			return d.dates(e)
		}
		start = min(e.Sent, e.Time)
	case e.Type == history.Leader:
		if e.Sent > 0 && e.Sent <= e.Time {
			start = e.Sent
		}
	case inv >= 0:
		if t := h[inv].Time; t <= e.Time {
			start = t
		}
	}
	return start, end
}

// source names the kind of proof h[i] is, for messages.
func source(e *history.Event) string {
	switch e.Type {
	case history.Leader:
		return "leader observation"
	case history.OK:
		return "acknowledged write"
	case history.Fail:
		return "write refused by the fence"
	}
	return string(e.Type)
}
