package contract

// DefaultPort is where a node serves the node API when its manifest names
// no other port.
const DefaultPort = 7070

// Routes of the node API.
const (
	HealthPath = "/health"
	LeaderPath = "/leader"
	WritePath  = "/write"
	ResignPath = "/resign"
	// WatchPath is the node API's stream of beliefs: GET it, with ?every= a
	// beat such as 50ms, and the node answers with one JSON line
	// (WatchLine) at once, another at every change of its belief, and one
	// every beat while nothing changes, until the request ends.
	WatchPath = "/leader/watch"
	// DataPath is the node API's optional register in the system's own
	// store (a key in Redis, a row in PostgreSQL): GET it with ?key= to
	// read (DataAnswer's Value), POST a DataWrite to write.
	DataPath = "/data"
)

// Leadership is a node's own belief, right now: the body of GET /leader.
type Leadership struct {
	Node     string `json:"node"`
	Leader   bool   `json:"leader"`
	Token    int64  `json:"token,omitempty"`     // the fencing token while leader
	LeaderID string `json:"leader_id,omitempty"` // who leads, if known
}

// WatchLine is one line of the watch: the node's belief at At, read on the
// node's own monotonic clock, in ns. A change is told as two lines, the
// last sample of the old belief and the first of the new, so the harness
// knows the moment to within one sampling period; lines never go back in
// At, and none is dated before the request arrived.
type WatchLine struct {
	Leadership
	At int64 `json:"at"`
	// Boot names the clock At reads: lines with the same Boot, from any
	// node, read the same clock, so the harness dates them together.
	Boot int64 `json:"boot"`
}

// WriteRequest is the body of a node's POST /write: the node writes Value
// to Key at the resource, itself, with its current token.
type WriteRequest struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// WriteAnswer is a node's answer to POST /write. 200: OK, with the token
// written and the resource's sequence number; 409: Error is ErrNotLeader;
// 412: Error is ErrFenced, with the stale Token and the resource's Current.
// Any other status, or none in time, leaves the write's outcome unknown.
type WriteAnswer struct {
	OK       bool   `json:"ok,omitempty"`
	Token    int64  `json:"token,omitempty"`
	Seq      int64  `json:"seq,omitempty"`
	Current  int64  `json:"current,omitempty"`
	Error    string `json:"error,omitempty"`
	LeaderID string `json:"leader_id,omitempty"`
}

// The errors of a node's write answers.
const (
	ErrNotLeader = "not-leader" // 409: the node does not lead
	ErrFenced    = "fenced"     // 412: the resource refused the node's token
)

// DataWrite is the body of a node's POST /data: the node writes Value to
// Key in the system's own store, as the system's clients write through
// that node.
type DataWrite struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// DataAnswer is a node's answer on DataPath. 200: the store acknowledged
// the write (OK), or the read found Value ("" for a key never written);
// 409: Error is ErrNotLeader, the store refused because this node is not
// where writes (or reads) go, and nothing was written. Any other status,
// or none in time, leaves a write's outcome unknown and fails a read.
type DataAnswer struct {
	OK       bool   `json:"ok,omitempty"`
	Value    string `json:"value"`
	Error    string `json:"error,omitempty"`
	LeaderID string `json:"leader_id,omitempty"`
}
