// Package history defines the events of a run and reads and writes them as JSON lines.
package history

// Type says what kind of event a line of the history is.
type Type string

// Client operations follow Jepsen: an invoke, then exactly one ok, fail or
// info from the same process. Leader observations and nemesis actions are
// single events of their own.
const (
	Invoke  Type = "invoke"  // a client operation starts
	OK      Type = "ok"      // it took effect
	Fail    Type = "fail"    // it certainly did not take effect
	Info    Type = "info"    // unknown: it may or may not have taken effect
	Leader  Type = "leader"  // one node's belief: a GET /leader answer or a line of its watch
	Nemesis Type = "nemesis" // a fault injected or healed
)

// Operation names (the F field) of client events.
// Write and Read are on the harness's fenced resource; DataWrite and
// DataRead on the register a target keeps in its own store (the node
// API's /data), through the node the event names.
const (
	Write     = "write"
	Read      = "read"
	DataWrite = "data-write"
	DataRead  = "data-read"
)

// Phases of a nemesis event.
const (
	Inject = "inject"
	Heal   = "heal"
)

// Event is one line of history.jsonl. Times are nanoseconds since the run
// started, read from the controller's monotonic clock; node clocks are never
// used for ordering.
type Event struct {
	Index int64 `json:"index"`
	Time  int64 `json:"time"`
	Type  Type  `json:"type"`

	// Client operations. Processes are numbered from 1; a process whose
	// operation ended in info is retired and never used again.
	Process int    `json:"process,omitempty"`
	F       string `json:"f,omitempty"`
	Key     string `json:"key,omitempty"`
	Value   string `json:"value,omitempty"`
	// Node is the node a write was sent to, the node observed by a leader
	// event, or the node that wrote the value a read returned.
	Node string `json:"node,omitempty"`
	// Token is the fencing token a write used or a leader claimed; a read's
	// token is the one stored with the value it returned. 0 means none.
	Token int64  `json:"token,omitempty"`
	Seq   int64  `json:"seq,omitempty"` // the resource's sequence number of the decision
	Error string `json:"error,omitempty"`

	// Leader observations. Sent is when the request left the controller:
	// the belief held at some instant between Sent and Time.
	Sent     int64  `json:"sent,omitempty"`
	IsLeader bool   `json:"leader,omitempty"`
	LeaderID string `json:"leader_id,omitempty"`
	// At marks a pushed observation, one line of the node's watch stream
	// (GET /leader/watch): the belief held at At on the node's own
	// monotonic clock, in ns. Sent is then when the watch request left
	// the controller, the same for every line of one stream, and Time
	// when the line arrived. Polled observations have no At. Boot names
	// the node process whose clock At is: lines with one Boot share it.
	At   int64 `json:"at,omitempty"`
	Boot int64 `json:"boot,omitempty"`

	// Nemesis events: Phase is inject or heal, Nodes the nodes affected,
	// Value says what was done in words.
	Phase string   `json:"phase,omitempty"`
	Nodes []string `json:"nodes,omitempty"`
}

// Decision is one line of resource.jsonl: the resource's ground truth about
// one write it was asked to make.
type Decision struct {
	Seq      int64  `json:"seq"`
	Key      string `json:"key"`
	Value    string `json:"value"`
	Token    int64  `json:"token"`
	Node     string `json:"node"`
	Accepted bool   `json:"accepted"`
	// Highest is the highest token accepted for the key before this decision.
	Highest int64 `json:"highest"`
	// Mode is the resource's mode when it decided: strict or unfenced.
	Mode string `json:"mode"`
}
