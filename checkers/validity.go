package checkers

import (
	"encoding/json"
	"fmt"
)

// Validity is a checker's verdict. JSON: true, false, or "unknown" (Jepsen's
// convention).
//
// The zero value is Unknown, so a Result nobody filled in can never pass for
// valid.
type Validity int

// The three verdicts. A Validity holding any other number is treated as
// Unknown everywhere: by Merge, String and MarshalJSON.
const (
	Unknown Validity = iota // nothing could be proved either way
	Valid                   // checked, and nothing was wrong
	Invalid                 // checked, and something was wrong
)

// String is "valid", "invalid" or "unknown".
func (v Validity) String() string {
	switch v {
	case Valid:
		return "valid"
	case Invalid:
		return "invalid"
	}
	return "unknown"
}

// Merge combines verdicts as Jepsen does: invalid beats unknown beats valid.
// Merging nothing is Valid: no checker objected.
func Merge(vs ...Validity) Validity {
	out := Valid
	for _, v := range vs {
		switch v {
		case Invalid:
			return Invalid
		case Valid:
		default:
			out = Unknown
		}
	}
	return out
}

// MarshalJSON writes true, false or "unknown".
func (v Validity) MarshalJSON() ([]byte, error) {
	switch v {
	case Valid:
		return []byte("true"), nil
	case Invalid:
		return []byte("false"), nil
	}
	return []byte(`"unknown"`), nil
}

// UnmarshalJSON reads true, false or "unknown". null leaves v as it is, as
// encoding/json does for its own types.
func (v *Validity) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "null":
		return nil
	case "true":
		*v = Valid
		return nil
	case "false":
		*v = Invalid
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil && s == "unknown" {
		*v = Unknown
		return nil
	}
	return fmt.Errorf("checkers: a verdict is true, false or \"unknown\", not %s", b)
}
