package contract

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

// ResourceWrite is the body of the resource's POST /write: a node writes
// Value to Key with its fencing Token.
type ResourceWrite struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	Token int64  `json:"token"`
	Node  string `json:"node"`
}

// ResourceAnswer answers the resource's POST /write: 200 when accepted,
// 412 when refused.
type ResourceAnswer struct {
	Accepted bool  `json:"accepted"`
	Seq      int64 `json:"seq"`
	// Current is the highest token accepted for the key, after this decision.
	Current int64 `json:"current"`
}

// Register is what the resource's GET /read?key= returns: the key's
// current value and the token and node that wrote it. Seq is 0 for a key
// never written.
type Register struct {
	Value string `json:"value"`
	Token int64  `json:"token"`
	Node  string `json:"node,omitempty"`
	Seq   int64  `json:"seq"`
}
