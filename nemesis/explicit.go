package nemesis

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"
)

// Timed is one fault of an explicit schedule: which fault, when, for how
// long, and how it was aimed. A run writes down each fault as it strikes
// and heals it (whether its nemesis is paced, on a rhythm or explicit), so
// that `splitbrain run --schedule` can do the same again, or less of it.
type Timed struct {
	// At is when the fault is struck, in seconds since the workload began.
	At    float64 `json:"at_s"`
	Fault string  `json:"fault"`
	// For is how long it is held, in seconds; 0: until the run's end (a
	// run killed while the fault was in effect wrote down no heal).
	For float64 `json:"for_s,omitempty"`
	// Aim seeds the fault's own choices (which node is "one", which
	// halves, how far a clock jumps): the same aim on the same nodes makes
	// the same choices. A fault on the leader hits whoever leads when it
	// strikes.
	Aim uint64 `json:"aim"`
	// Nodes are the containers it hit when it was written down: for the
	// reader, since a replay aims again.
	Nodes []string `json:"nodes,omitempty"`
	// Until, when set, heals the fault once the cluster reacted to it, as
	// the pace of the run that wrote it down did, and For is only how
	// long it was held then. A fault paced to the cluster's reaction is
	// another fault when held for a fixed time on a cluster that reacts
	// sooner or later: a frozen leader woken before its successor leads,
	// or long after.
	Until *Until `json:"until,omitempty"`
}

// Until is a paced fault's Hold, and the pace's React, in a schedule
// file: seconds, as the file's other times are.
type Until struct {
	React     float64 `json:"react_s"`
	Hold      float64 `json:"hold_s,omitempty"`
	Write     bool    `json:"write,omitempty"`
	Silence   bool    `json:"silence,omitempty"`
	Least     float64 `json:"least_s,omitempty"`
	Successor bool    `json:"successor,omitempty"`
}

// untilOf writes hold, and react, down.
func untilOf(hold Hold, react time.Duration) *Until {
	return &Until{React: seconds(react), Hold: seconds(hold.For), Write: hold.UntilWrite, Silence: hold.UntilSilence,
		Least: seconds(hold.Least), Successor: hold.Successor}
}

// held follows the fault it describes, in effect since since and struck
// when before led.
func (u Until) holding(since time.Time, before []string) holding {
	hold := Hold{For: dur(u.Hold), UntilWrite: u.Write, UntilSilence: u.Silence, Least: dur(u.Least), Successor: u.Successor}
	return newHolding(hold, dur(u.React), since, before)
}

// validate names the first field that cannot hold a fault.
func (u Until) validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"hold_s", u.Hold}, {"least_s", u.Least}} {
		if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return fmt.Errorf("%s: %v is not a duration", f.name, f.v)
		}
	}
	if !(u.React > 0) || math.IsInf(u.React, 0) {
		return fmt.Errorf("react_s: %v is not a positive duration", u.React)
	}
	return nil
}

// End is when the fault is healed, in seconds; +Inf for one held until
// the run's end.
func (s Timed) End() float64 {
	if s.For == 0 {
		return math.Inf(1)
	}
	return s.At + s.For
}

// Explicit is an explicit schedule, the content of a schedule file.
type Explicit struct {
	Faults []Timed `json:"faults"`
}

// Names lists the faults it strikes, in order.
func (e Explicit) Names() []string {
	names := make([]string, len(e.Faults))
	for i, s := range e.Faults {
		names[i] = s.Fault
	}
	return names
}

// Validate names the first strike, and its field, that cannot be carried
// out: an unknown fault, a negative time, a fault struck before the one
// before it is healed (one fault at a time, as every nemesis does), or a
// hold Until that heals nothing.
func (e Explicit) Validate() error {
	for i, s := range e.Faults {
		field := func(name string) string { return fmt.Sprintf("faults[%d].%s", i, name) }
		_, ok := catalogue[s.Fault]
		switch {
		case s.Fault == "":
			return fmt.Errorf("%s: missing", field("fault"))
		case !ok:
			return fmt.Errorf("%s: unknown fault %q (faults: %s)", field("fault"), s.Fault, strings.Join(Names(), ", "))
		case s.At < 0 || math.IsNaN(s.At) || math.IsInf(s.At, 0):
			return fmt.Errorf("%s: %v is not a time since the workload began", field("at_s"), s.At)
		case s.For < 0 || math.IsNaN(s.For) || math.IsInf(s.For, 0):
			return fmt.Errorf("%s: %v is not a duration (0 holds it until the run's end)", field("for_s"), s.For)
		case i > 0 && s.At < e.Faults[i-1].End():
			return fmt.Errorf("%s: %g s is before faults[%d] is healed (%g s): one fault at a time", field("at_s"), s.At, i-1, e.Faults[i-1].End())
		}
		if s.Until != nil {
			if err := s.Until.validate(); err != nil {
				return fmt.Errorf("%s.%v", field("until"), err)
			}
		}
	}
	return nil
}

// ReadExplicit reads and checks a schedule file; an error names the file
// and the field.
func ReadExplicit(path string) (Explicit, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Explicit{}, err
	}
	var e Explicit
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te):
			return Explicit{}, fmt.Errorf("%s: %s: %s is not a %s", path, te.Field, te.Value, te.Type)
		case errors.As(err, &se):
			return Explicit{}, fmt.Errorf("%s: not JSON at byte %d: %v", path, se.Offset, err)
		}
		return Explicit{}, fmt.Errorf("%s: %v", path, err)
	}
	if e.Faults == nil {
		return Explicit{}, fmt.Errorf("%s: faults: missing (an empty schedule is \"faults\": [])", path)
	}
	if err := e.Validate(); err != nil {
		return Explicit{}, fmt.Errorf("%s: %v", path, err)
	}
	return e, nil
}

// seconds is d in seconds, to the millisecond: a schedule is read by
// people, and no fault is carried out more precisely than that.
func seconds(d time.Duration) float64 { return math.Round(d.Seconds()*1000) / 1000 }

// dur is s seconds as a duration.
func dur(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
