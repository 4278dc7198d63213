package checkers

import "github.com/splitbrain/splitbrain/history"

// FaultEffect is what one injected fault did: how long it took to take and
// to heal, and the leader change that followed it, if one did.
type FaultEffect struct {
	Fault string   `json:"fault"`
	What  string   `json:"what"`
	Nodes []string `json:"nodes,omitempty"`
	At    int64    `json:"at"` // when it was decided, ns since the run started
	// InjectMS and HealMS run from the decision until the fault was in
	// effect (healed) on every node it touched. HealMS is -1 if the history
	// holds no heal.
	InjectMS float64 `json:"inject_ms"`
	HealMS   float64 `json:"heal_ms"`
	Error    string  `json:"error,omitempty"`
	// Before is the leader last seen before the fault, After the first
	// other node seen leading with a higher token before the next fault
	// ("" for none), FailoverS the time from the fault to that sighting.
	Before    string  `json:"leader_before,omitempty"`
	After     string  `json:"leader_after,omitempty"`
	FailoverS float64 `json:"failover_s,omitempty"`
}

// Faults lists the effect of every fault injected in h, in order.
func Faults(h []history.Event) []FaultEffect {
	var (
		out     []FaultEffect
		open    = -1 // the fault whose heal or successor we wait for
		leader  string
		token   int64
		waiting bool // for a new leader after out[open]
	)
	for i := range h {
		e := &h[i]
		switch {
		case e.Type == history.Nemesis && e.Phase == history.Inject:
			out = append(out, FaultEffect{
				Fault: e.F, What: e.Value, Nodes: e.Nodes, At: e.Sent,
				InjectMS: millis(e.Time - e.Sent), HealMS: -1, Error: e.Error, Before: leader,
			})
			open, waiting = len(out)-1, true
		case e.Type == history.Nemesis && e.Phase == history.Heal && open >= 0:
			if f := &out[open]; f.HealMS < 0 && f.Fault == e.F {
				f.HealMS = millis(e.Time - e.Sent)
				if e.Error != "" && f.Error == "" {
					f.Error = "heal: " + e.Error
				}
			}
		case e.Type == history.Leader && e.IsLeader && e.Error == "":
			if waiting && e.Node != leader && e.Token > token {
				f := &out[open]
				f.After, f.FailoverS = e.Node, float64(e.Time-f.At)/1e9
				waiting = false
			}
			if e.Token >= token {
				leader, token = e.Node, e.Token
			}
		}
	}
	return out
}

func millis(ns int64) float64 { return float64(ns) / 1e6 }
