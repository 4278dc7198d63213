package contract

import "time"

// Skew is the content of a node's clock file (EnvClockFile): the node's
// wall clock reads real time + Offset, and from Since on runs at Rate times
// real speed. The harness rewrites the file to inject clock faults; the
// host's clock is never touched.
type Skew struct {
	Offset time.Duration `json:"offset_ns"`
	Rate   float64       `json:"rate,omitempty"`     // 0 or 1: normal speed
	Since  int64         `json:"since_ns,omitempty"` // unix ns where Rate starts to apply
}

// Apply returns the skewed reading of the real time t.
func (s Skew) Apply(t time.Time) time.Time {
	out := t.Add(s.Offset)
	if s.Rate != 0 && s.Rate != 1 && s.Since != 0 {
		elapsed := t.UnixNano() - s.Since
		out = out.Add(time.Duration(float64(elapsed) * (s.Rate - 1)))
	}
	return out
}
