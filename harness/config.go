// Package harness runs a target in containers in three steps: up (images, network, resource, services, nodes), drive (workload, observer and nemesis into a history), down (logs, teardown).
package harness

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/nemesis"
	"github.com/splitbrain/splitbrain/results"
	"github.com/splitbrain/splitbrain/targets"
)

// Config of one run: the settings run.json records, and where this
// machine keeps what the run needs. Start from DefaultConfig; Validate
// says what is wrong.
type Config struct {
	results.Settings
	// RepoRoot is splitbrain's source folder, where the resource server is
	// built from; TargetsRoot is where named targets live (its targets/).
	RepoRoot    string
	TargetsRoot string
	ResultsDir  string
	// Schedule, when set, is an explicit schedule file (`--schedule`):
	// its faults, at its times, instead of --nemesis's.
	Schedule string
	// Faults, when set (`--faults N`), bounds the run by its faults
	// instead of its time limit: it goes on until the nemesis has struck
	// and healed this many and the cluster is steady after the last (see
	// nemesis.Bounded), or until its violation with StopOnViolation. A
	// slow restart on a loaded machine then delays the next fault instead
	// of eating the run. Its ceiling (nemesis.Schedule.Ceiling, with
	// StartTimeout for a restart) keeps it from hanging: a run that
	// reaches it has not tested what it planned, a harness failure unless
	// its history already proves it invalid.
	Faults int
	// Engine, with Engines, is the engine of its file that holds the
	// whole run (`--engine`, or a suite spreading its runs over the
	// engines): every container there, the gateway too. run.json's
	// placement records it.
	Engine string
	// Progress receives the live progress line; nil for none.
	Progress io.Writer
}

// DefaultConfig is results.DefaultSettings with a seed drawn from the
// clock, run from the working folder.
func DefaultConfig() Config {
	s := results.DefaultSettings()
	s.Seed = uint64(time.Now().UnixNano())
	return Config{
		Settings:    s,
		RepoRoot:    ".",
		TargetsRoot: "targets",
		ResultsDir:  "results",
		Progress:    os.Stderr,
	}
}

// Command is the `splitbrain run` that repeats the run, with its
// explicit schedule if it has one.
func (c Config) Command() string {
	cmd := c.Settings.Command()
	switch {
	case c.Schedule != "":
		cmd = results.ReplayCommand(c.Settings, c.Schedule)
	case c.Faults > 0:
		cmd += fmt.Sprintf(" --faults=%d", c.Faults)
	}
	if c.Engine != "" {
		cmd += " --engine=" + c.Engine
	}
	return cmd
}

// schedule is what the nemesis does with the faults names (Order's
// groups), paced by pace unless the config sets a rhythm: as many faults
// as the time limit holds, or Faults.
func (c Config) schedule(names [][]string, pace nemesis.Pace) nemesis.Schedule {
	switch {
	case c.Faults > 0:
		return nemesis.Bounded(names, c.Faults, pace, c.NemesisInterval, c.Seed)
	case c.NemesisInterval > 0:
		return nemesis.Fixed(names, c.NemesisInterval, c.TimeLimit, c.Seed)
	}
	return nemesis.Paced(names, pace, c.TimeLimit, c.Seed)
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
	case c.Nodes > targets.MaxNodes:
		return badInput("--nodes must be at most %d, not %d", targets.MaxNodes, c.Nodes)
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
	case c.Faults < 0:
		return badInput("--faults must not be negative, not %d", c.Faults)
	case c.Faults > 0 && c.Schedule != "":
		return badInput("--faults and --schedule: an explicit schedule has its own faults")
	case c.Faults > 0 && slices.Equal(c.Nemesis, []string{"none"}):
		return badInput("--faults %d with --nemesis none: there is no fault to count", c.Faults)
	case c.Engine != "" && c.Engines == "":
		return badInput("--engine %s needs --engines FILE, the file that names it", c.Engine)
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
