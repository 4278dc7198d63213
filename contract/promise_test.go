package contract

import (
	"strings"
	"testing"
	"time"
)

func TestParsePromise(t *testing.T) {
	tests := []struct {
		in      string
		want    Promise
		wantErr string
	}{
		{in: "exclusive", want: Promise{Kind: Exclusive}},
		{in: "fenced", want: Promise{Kind: Fenced}},
		{in: " Fenced ", want: Promise{Kind: Fenced}},
		{in: "overlap-bound: 2s", want: Promise{Kind: OverlapBound, Bound: 2 * time.Second}},
		{in: "overlap-bound:2s", want: Promise{Kind: OverlapBound, Bound: 2 * time.Second}},
		{in: "overlap-bound :  1500ms ", want: Promise{Kind: OverlapBound, Bound: 1500 * time.Millisecond}},
		{in: "", wantErr: "empty promise"},
		{in: "   ", wantErr: "empty promise"},
		{in: "lease", wantErr: "unknown promise"},
		{in: "exclusive: 2s", wantErr: "takes no bound"},
		{in: "fenced:", wantErr: "takes no bound"},
		{in: "overlap-bound", wantErr: "needs a duration"},
		{in: "overlap-bound:", wantErr: "needs a duration"},
		{in: "overlap-bound: soon", wantErr: "invalid duration"},
		{in: "overlap-bound: 2", wantErr: "missing unit"},
		{in: "overlap-bound: 0s", wantErr: "must be positive"},
		{in: "overlap-bound: -1s", wantErr: "must be positive"},
	}
	for _, tt := range tests {
		got, err := ParsePromise(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParsePromise(%q) = %v, %v; want error with %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParsePromise(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestPromiseStringRoundTrip(t *testing.T) {
	for _, p := range []Promise{{Kind: Exclusive}, {Kind: Fenced}, {Kind: OverlapBound, Bound: 2 * time.Second}, {Kind: OverlapBound, Bound: 150 * time.Millisecond}} {
		s := p.String()
		back, err := ParsePromise(s)
		if err != nil || back != p {
			t.Errorf("%+v -> %q -> %+v, %v", p, s, back, err)
		}
	}
	if s := (Promise{Kind: OverlapBound, Bound: 2 * time.Second}).String(); s != "overlap-bound: 2s" {
		t.Errorf("String = %q", s)
	}
}
