// Package harness runs one test end to end: config, images, containers, workload, nemesis, history, verdict and teardown.
package harness

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/contract"
)

// Config of one run. Start from DefaultConfig; Validate says what is wrong.
type Config struct {
	Target    string `json:"target"`               // a folder name under TargetsRoot
	TargetDir string `json:"target_dir,omitempty"` // or a target's folder anywhere
	// Promise, if set, judges the run by this promise instead of the one
	// the target's manifest declares: to test a claim the target does not
	// make, such as the seeds' "exclusive" for bully.
	Promise string `json:"promise,omitempty"`
	// RepoRoot is splitbrain's source folder, where the resource server is
	// built from; TargetsRoot is where named targets live (its targets/).
	RepoRoot    string `json:"-"`
	TargetsRoot string `json:"-"`

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
	ResultsDir      string        `json:"-"`
	// StopOnViolation ends the run once its history, judged as it is
	// written, shows a violation (by each checker of StopOn, if given;
	// each must be Watched), instead of at the time limit. The verdict is
	// still judged over the whole history.
	StopOnViolation bool     `json:"stop_on_violation,omitempty"`
	StopOn          []string `json:"stop_on,omitempty"`

	// Progress receives the live progress line; nil for none.
	Progress io.Writer `json:"-"`
	// Command is the command line that reproduces the run, for run.json.
	Command string `json:"-"`
}

// DefaultConfig is a 5-node Raft run of 60 s at 100 ops/s with partitions,
// pauses, kills and clock faults paced by the cluster, against the strict
// resource.
func DefaultConfig() Config {
	return Config{
		Target:          "raft",
		RepoRoot:        ".",
		TargetsRoot:     "targets",
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
		Seed:            uint64(time.Now().UnixNano()),
		ResultsDir:      "results",
		Progress:        os.Stderr,
	}
}

// BadInputError is a configuration the user must fix; the CLI exits 254.
type BadInputError struct{ Msg string }

func (e *BadInputError) Error() string { return e.Msg }

func badInput(format string, args ...any) error {
	return &BadInputError{Msg: fmt.Sprintf(format, args...)}
}

// IsBadInput reports whether err is the user's to fix.
func IsBadInput(err error) bool {
	var b *BadInputError
	return errors.As(err, &b)
}

// Validate checks every field and names the first that is wrong.
func (c Config) Validate() error {
	switch {
	case c.Target == "" && c.TargetDir == "":
		return badInput("no target: give --target NAME or --target-dir PATH")
	case c.Nodes < 1:
		return badInput("--nodes must be at least 1, not %d", c.Nodes)
	case c.Nodes > 99:
		return badInput("--nodes must be at most 99, not %d", c.Nodes)
	case c.TimeLimit <= 0:
		return badInput("--time-limit must be positive, not %s", c.TimeLimit)
	case c.QuietPeriod < 0:
		return badInput("--quiet-period must not be negative, not %s", c.QuietPeriod)
	case c.NemesisInterval < 0:
		return badInput("--nemesis-interval must not be negative, not %s (leave it out to pace faults by the cluster)", c.NemesisInterval)
	case c.Rate <= 0:
		return badInput("--rate must be positive, not %g", c.Rate)
	case c.Concurrency < 1:
		return badInput("--concurrency must be at least 1, not %d", c.Concurrency)
	case c.Keys < 1:
		return badInput("--keys must be at least 1, not %d", c.Keys)
	case c.ReadShare < 0 || c.ReadShare > 1:
		return badInput("the read share must be between 0 and 1, not %g", c.ReadShare)
	case c.OpTimeout <= 0:
		return badInput("--op-timeout must be positive, not %s", c.OpTimeout)
	case c.CheckTimeout <= 0:
		return badInput("--check-timeout must be positive, not %s", c.CheckTimeout)
	case c.RecoveryTimeout <= 0:
		return badInput("--recovery-timeout must be positive, not %s", c.RecoveryTimeout)
	case c.ObserveInterval < time.Millisecond:
		return badInput("--observe-interval must be at least 1ms, not %s", c.ObserveInterval)
	case c.StartTimeout <= 0:
		return badInput("--start-timeout must be positive, not %s", c.StartTimeout)
	case c.ResultsDir == "":
		return badInput("--results must name a folder")
	}
	if c.Promise != "" {
		if _, err := contract.ParsePromise(c.Promise); err != nil {
			return badInput("--promise: %v", err)
		}
	}
	for _, c := range c.StopOn {
		if !slices.Contains(Watched, c) {
			return badInput("--stop-on: %q is not one of the checkers a run can watch as it goes (%s)", c, strings.Join(Watched, ", "))
		}
	}
	if len(c.StopOn) > 0 && !c.StopOnViolation {
		return badInput("--stop-on needs --stop-on-violation")
	}
	if _, ok := contract.ParseMode(string(c.Resource)); !ok {
		return badInput("--resource must be strict or unfenced, not %q", c.Resource)
	}
	return nil
}

func (c Config) checkOptions() checkers.Options {
	return checkers.Options{CheckTimeout: c.CheckTimeout, RecoveryTimeout: c.RecoveryTimeout}
}
