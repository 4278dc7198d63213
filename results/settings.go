package results

import (
	"fmt"
	"strings"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/contract"
)

// Settings are how a run was asked for: run.json's "config". A run's
// folder keeps them so that it can be judged again, and replayed, by a
// later version on another machine.
type Settings struct {
	Target    string `json:"target"`               // a folder name under the targets' root
	TargetDir string `json:"target_dir,omitempty"` // or a target's folder anywhere
	// Promise, if set, judges the run by this promise instead of the one
	// the target's manifest declares: to test a claim the target does not
	// make, such as the seeds' "exclusive" for bully.
	Promise string `json:"promise,omitempty"`

	Nodes       int           `json:"nodes"`
	TimeLimit   time.Duration `json:"time_limit"`
	QuietPeriod time.Duration `json:"quiet_period"` // after the final heal, workload only
	Nemesis     []string      `json:"nemesis"`
	// NemesisInterval, when set, injects a fault every interval and heals
	// it half an interval later; zero paces the faults by the cluster:
	// each struck once a single leader has settled, healed once the
	// cluster reacted to it.
	NemesisInterval time.Duration `json:"nemesis_interval,omitempty"`
	Rate            float64       `json:"rate"`
	Concurrency     int           `json:"concurrency"`
	Keys            int           `json:"keys"`
	ReadShare       float64       `json:"read_share"`
	OpTimeout       time.Duration `json:"op_timeout"`
	ObserveInterval time.Duration `json:"observe_interval"`
	StartTimeout    time.Duration `json:"start_timeout"` // for every node to become healthy
	Resource        contract.Mode `json:"resource"`
	Seed            uint64        `json:"seed"`
	// CheckTimeout bounds the linearizability search, RecoveryTimeout the
	// time from the final heal until exactly one leader must be seen.
	CheckTimeout    time.Duration `json:"check_timeout"`
	RecoveryTimeout time.Duration `json:"recovery_timeout"`
	// StopOnViolation ends the run once its history, judged as it is
	// written, shows a violation (by each checker of StopOn, if given),
	// instead of at the time limit. The verdict is still judged over the
	// whole history.
	StopOnViolation bool     `json:"stop_on_violation,omitempty"`
	StopOn          []string `json:"stop_on,omitempty"`
	// Engines is the engines file the run spread its containers over
	// (--engines); empty: this machine's Docker Engine alone.
	Engines string `json:"engines,omitempty"`
}

// DefaultSettings are a 5-node Raft run of 60 s at 100 ops/s with
// partitions, pauses, kills and clock faults paced by the cluster, against
// the strict resource, seed 0. A stored run.json that lacks a field reads
// as these.
func DefaultSettings() Settings {
	return Settings{
		Target:          "raft",
		Nodes:           5,
		TimeLimit:       60 * time.Second,
		QuietPeriod:     10 * time.Second,
		Nemesis:         []string{"partition", "pause", "kill", "clock"},
		Rate:            100,
		Concurrency:     10,
		Keys:            5,
		ReadShare:       0.25,
		OpTimeout:       time.Second,
		ObserveInterval: 50 * time.Millisecond,
		CheckTimeout:    checkers.DefaultCheckTimeout,
		RecoveryTimeout: checkers.DefaultRecoveryTimeout,
		StartTimeout:    30 * time.Second,
		Resource:        contract.Strict,
	}
}

// CheckOptions are the checkers' settings of the run.
func (s Settings) CheckOptions() checkers.Options {
	return checkers.Options{CheckTimeout: s.CheckTimeout, RecoveryTimeout: s.RecoveryTimeout}
}

// Command is the `splitbrain run` that repeats the run: its target, nodes,
// faults, time limits, resource and seed always, and every other setting
// that is not its default.
func (s Settings) Command() string {
	parts := []string{"splitbrain run"}
	add := func(format string, args ...any) { parts = append(parts, fmt.Sprintf(format, args...)) }
	if s.TargetDir != "" {
		add("--target-dir=%s", s.TargetDir)
	} else {
		add("--target=%s", s.Target)
	}
	if s.Promise != "" {
		add("--promise=%q", s.Promise)
	}
	add("--nodes=%d", s.Nodes)
	add("--nemesis=%s", strings.Join(s.Nemesis, ","))
	if s.NemesisInterval > 0 {
		add("--nemesis-interval=%s", s.NemesisInterval)
	}
	add("--time-limit=%s", s.TimeLimit)
	add("--quiet-period=%s", s.QuietPeriod)
	add("--recovery-timeout=%s", s.RecoveryTimeout)
	add("--resource=%s", s.Resource)
	add("--seed=%d", s.Seed)
	d := DefaultSettings()
	for _, f := range []struct {
		flag      string
		val, dflt any
	}{
		{"rate", s.Rate, d.Rate},
		{"concurrency", s.Concurrency, d.Concurrency},
		{"keys", s.Keys, d.Keys},
		{"read-share", s.ReadShare, d.ReadShare},
		{"op-timeout", s.OpTimeout, d.OpTimeout},
		{"observe-interval", s.ObserveInterval, d.ObserveInterval},
		{"start-timeout", s.StartTimeout, d.StartTimeout},
		{"check-timeout", s.CheckTimeout, d.CheckTimeout},
	} {
		if f.val != f.dflt {
			add("--%s=%v", f.flag, f.val)
		}
	}
	if s.Engines != "" {
		add("--engines=%s", s.Engines)
	}
	if s.StopOnViolation {
		parts = append(parts, "--stop-on-violation")
		if len(s.StopOn) > 0 {
			add("--stop-on=%s", strings.Join(s.StopOn, ","))
		}
	}
	return strings.Join(parts, " ")
}

// ReplayCommand is the `splitbrain run` that carries out the explicit
// schedule file schedule with settings s: a run's own schedule.json
// replays the run.
func ReplayCommand(s Settings, schedule string) string {
	return s.Command() + " --schedule=" + schedule
}
