package contract

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// PromiseKind names what a target promises about overlapping leaders.
type PromiseKind string

// The promises a target can declare (docs/contract.md, Checkers).
const (
	// Exclusive: never two leaders at once (a lease meant to exclude).
	Exclusive PromiseKind = "exclusive"
	// OverlapBound: two leaders at once for no longer than Promise.Bound
	// (Raft with check-quorum: a deposed leader steps down in time).
	OverlapBound PromiseKind = "overlap-bound"
	// Fenced: no promise about overlap, only unique, growing tokens. Overlap
	// is then a measured risk, not a violation.
	Fenced PromiseKind = "fenced"
)

// Promise is a target's declared promise about leader overlap.
type Promise struct {
	Kind  PromiseKind   `json:"kind"`
	Bound time.Duration `json:"bound,omitempty"` // only for OverlapBound
}

// ParsePromise reads "exclusive", "fenced" or "overlap-bound: D" (the space
// after the colon is optional; D is a Go duration such as 2s or 1500ms). The
// kind is case-insensitive. ParsePromise(p.String()) gives p back.
func ParsePromise(s string) (Promise, error) {
	kind, arg, hasArg := strings.Cut(strings.TrimSpace(s), ":")
	kind = strings.ToLower(strings.TrimSpace(kind))
	arg = strings.TrimSpace(arg)
	switch k := PromiseKind(kind); k {
	case Exclusive, Fenced:
		if hasArg {
			return Promise{}, fmt.Errorf("promise %q: %s takes no bound", s, k)
		}
		return Promise{Kind: k}, nil
	case OverlapBound:
		if arg == "" {
			return Promise{}, fmt.Errorf("promise %q: overlap-bound needs a duration, as in \"overlap-bound: 2s\"", s)
		}
		d, err := time.ParseDuration(arg)
		if err != nil {
			return Promise{}, fmt.Errorf("promise %q: %w", s, err)
		}
		if d <= 0 {
			return Promise{}, fmt.Errorf("promise %q: the bound must be positive (for no overlap at all, promise exclusive)", s)
		}
		return Promise{Kind: OverlapBound, Bound: d}, nil
	case "":
		return Promise{}, errors.New("empty promise: want exclusive, fenced or overlap-bound: D")
	}
	return Promise{}, fmt.Errorf("unknown promise %q: want exclusive, fenced or overlap-bound: D", s)
}

// String is the form ParsePromise reads: "exclusive", "fenced",
// "overlap-bound: 2s".
func (p Promise) String() string {
	if p.Kind == OverlapBound {
		return string(OverlapBound) + ": " + p.Bound.String()
	}
	return string(p.Kind)
}

// Known reports whether p is one of the promises the overlap checker can
// judge against.
func (p Promise) Known() bool {
	switch p.Kind {
	case Exclusive, Fenced:
		return true
	case OverlapBound:
		return p.Bound > 0
	}
	return false
}
