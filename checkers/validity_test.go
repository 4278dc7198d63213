package checkers

import (
	"encoding/json"
	"testing"
)

func TestZeroValidityIsUnknown(t *testing.T) {
	var r Result
	if r.Valid != Unknown {
		t.Fatalf("zero Result is %v, want unknown", r.Valid)
	}
}

func TestMerge(t *testing.T) {
	tests := []struct {
		in   []Validity
		want Validity
	}{
		{nil, Valid},
		{[]Validity{Valid}, Valid},
		{[]Validity{Unknown}, Unknown},
		{[]Validity{Invalid}, Invalid},
		{[]Validity{Valid, Valid}, Valid},
		{[]Validity{Valid, Unknown}, Unknown},
		{[]Validity{Unknown, Valid}, Unknown},
		{[]Validity{Valid, Invalid}, Invalid},
		{[]Validity{Invalid, Valid}, Invalid},
		{[]Validity{Unknown, Invalid}, Invalid},
		{[]Validity{Invalid, Unknown}, Invalid},
		{[]Validity{Unknown, Unknown}, Unknown},
		{[]Validity{Invalid, Invalid}, Invalid},
		{[]Validity{Valid, Validity(42)}, Unknown}, // garbage is not proof
	}
	for _, tt := range tests {
		if got := Merge(tt.in...); got != tt.want {
			t.Errorf("Merge(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestValidityJSON(t *testing.T) {
	tests := []struct {
		v    Validity
		json string
	}{
		{Valid, `true`},
		{Invalid, `false`},
		{Unknown, `"unknown"`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.v)
		if err != nil || string(b) != tt.json {
			t.Errorf("Marshal(%v) = %s, %v; want %s", tt.v, b, err, tt.json)
		}
		var back Validity = 7
		if err := json.Unmarshal(b, &back); err != nil || back != tt.v {
			t.Errorf("Unmarshal(%s) = %v, %v; want %v", b, back, err, tt.v)
		}
	}
	if b, _ := json.Marshal(Validity(9)); string(b) != `"unknown"` {
		t.Errorf("out-of-range validity marshals as %s", b)
	}

	// Inside a Result, and null leaves the value alone.
	r := Result{Valid: Invalid, Figures: map[string]float64{"violations": 1}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil || back.Valid != Invalid || back.Figures["violations"] != 1 {
		t.Errorf("Result round trip: %s -> %+v, %v", b, back, err)
	}
	v := Valid
	if err := json.Unmarshal([]byte(`null`), &v); err != nil || v != Valid {
		t.Errorf("null: %v, %v", v, err)
	}
	for _, bad := range []string{`"valid"`, `"Unknown"`, `1`, `0`, `{}`, `"true"`} {
		if err := json.Unmarshal([]byte(bad), &v); err == nil {
			t.Errorf("Unmarshal(%s) accepted", bad)
		}
	}
}

func TestValidityString(t *testing.T) {
	for v, want := range map[Validity]string{Valid: "valid", Invalid: "invalid", Unknown: "unknown", 5: "unknown"} {
		if got := v.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(v), got, want)
		}
	}
}
