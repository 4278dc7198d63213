// Package resource is the fenced resource: the shared register leaders write to, its HTTP API and a client for it.
package resource

// Mode says whether the resource checks fencing tokens.
type Mode string

const (
	// Strict refuses a write whose token is lower than the highest token
	// already accepted for that key.
	Strict Mode = "strict"
	// Unfenced accepts every write: the "no fencing" anti-pattern, kept so
	// users can see what it costs.
	Unfenced Mode = "unfenced"
)

// ParseMode accepts "strict" or "unfenced".
func ParseMode(s string) (Mode, bool) {
	switch m := Mode(s); m {
	case Strict, Unfenced:
		return m, true
	}
	return "", false
}

// WriteRequest is the body of POST /write.
type WriteRequest struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	Token int64  `json:"token"`
	Node  string `json:"node"`
}

// WriteResponse answers POST /write: 200 when accepted, 412 when refused.
type WriteResponse struct {
	Accepted bool  `json:"accepted"`
	Seq      int64 `json:"seq"`
	// Current is the highest token accepted for the key, after this decision.
	Current int64 `json:"current"`
}

// Register is what GET /read?key= returns: the key's current value and the
// token and node that wrote it. Seq is 0 for a key never written.
type Register struct {
	Value string `json:"value"`
	Token int64  `json:"token"`
	Node  string `json:"node,omitempty"`
	Seq   int64  `json:"seq"`
}
