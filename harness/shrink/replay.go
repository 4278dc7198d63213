package shrink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/harness/record"
	"github.com/splitbrain/splitbrain/history"
	"github.com/splitbrain/splitbrain/nemesis"
	"github.com/splitbrain/splitbrain/results"
)

// Replays is the Runner of real runs: the run's target and settings, with
// a candidate's schedule, nodes and time limit.
type Replays struct {
	Base harness.Config
	// Dir is the shrink's folder: candidates' schedules go in schedules/,
	// their runs in runs/.
	Dir string
}

// Replay runs c once in containers.
func (r *Replays) Replay(ctx context.Context, c Candidate, _ int) (Outcome, error) {
	cfg := r.Base
	cfg.Nodes = c.Nodes
	cfg.TimeLimit = time.Duration(c.Limit * float64(time.Second))
	cfg.ResultsDir = filepath.Join(r.Dir, "runs")
	cfg.Progress = nil
	path, err := writeSchedule(filepath.Join(r.Dir, "schedules", c.Key()+".json"), c.Faults)
	if err != nil {
		return Outcome{}, err
	}
	cfg.Schedule = path
	start := time.Now()
	out, err := record.Run(ctx, cfg)
	if ctx.Err() != nil {
		if out != nil {
			sweep(out.Info.ID)
		}
		return Outcome{}, ctx.Err() // cut short: not an outcome
	}
	o := Outcome{Seconds: time.Since(start).Seconds()}
	if out != nil {
		o.Dir, o.Violations = out.Dir, Violations(out.Report)
	}
	if err != nil {
		o.Error = err.Error()
	}
	return o, nil
}

// sweep removes what a replay cut short while it started may have left:
// a network the Engine was still creating when the run's teardown looked
// for it (seen once in ten replays cut short).
func sweep(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := harness.ConnectDocker(ctx)
	if err != nil {
		return
	}
	defer d.Close()
	time.Sleep(2 * time.Second) // for the Engine to finish what it was asked
	d.Remove(ctx, harness.LabelRun+"="+id)
}

// writeSchedule writes faults as a schedule file at path.
func writeSchedule(path string, faults []nemesis.Timed) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	if faults == nil {
		faults = []nemesis.Timed{} // "faults": [], not null
	}
	return path, results.WriteJSON(path, nemesis.Explicit{Faults: faults})
}

// Violations are the report's violations as "checker/kind", each once,
// sorted.
func Violations(r checkers.Report) []string {
	var out []string
	for name, c := range r.Checkers {
		if c.Valid != checkers.Invalid {
			continue
		}
		for _, v := range c.Violations {
			if k := name + "/" + v.Kind; !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

// first is the report's earliest violation, as "checker/kind"; "" if
// there is none.
func first(r checkers.Report) string {
	if checker, v, ok := r.FirstViolation(); ok {
		return checker + "/" + v.Kind
	}
	return ""
}

// Config of `splitbrain shrink`.
type Config struct {
	Options
	// RunDir is the run to shrink; Out the shrink's folder.
	RunDir, Out string
	// RepoRoot and TargetsRoot are as for a run.
	RepoRoot, TargetsRoot string
	// Log hears the progress lines.
	Log io.Writer
}

// fewestNodes is the fewest nodes a shrink tries: three, a majority to
// lose, or more if the target needs them.
const fewestNodes = 3

// Outcome files of a shrink's folder.
const (
	JournalFile = "journal.jsonl"
	ShrunkDir   = "shrunk"
	MinimalFile = "minimal.json"
)

// Run shrinks the schedule of the run in cfg.RunDir, replaying with its
// settings, and leaves the shrunk run folder in Out/shrunk: a replay of
// the minimal schedule that reproduced, with shrink.json and its report.
// Its Result says whether the run's schedule reproduced at all.
func Run(ctx context.Context, cfg Config) (Result, string, error) {
	info, err := results.ReadInfo(cfg.RunDir)
	if err != nil {
		return Result{}, "", bad("%s is not a run folder: %v", cfg.RunDir, err)
	}
	e, err := nemesis.ReadExplicit(filepath.Join(cfg.RunDir, results.ScheduleFile))
	if errors.Is(err, os.ErrNotExist) {
		return Result{}, "", bad("%s has no %s: it was run by a splitbrain that did not write down its schedule; run it again", cfg.RunDir, results.ScheduleFile)
	}
	if err != nil {
		return Result{}, "", bad("%v", err)
	}
	report, err := results.ReadResults(cfg.RunDir)
	if err != nil {
		return Result{}, "", bad("%s has no verdict to reproduce (%v): run splitbrain analyze on it first", cfg.RunDir, err)
	}
	if cfg.Violation == "" {
		if cfg.Violation = first(report); cfg.Violation == "" {
			return Result{}, "", bad("%s found no violation: there is nothing to shrink", cfg.RunDir)
		}
	}
	base := harness.Config{Settings: info.Config, RepoRoot: cfg.RepoRoot, TargetsRoot: cfg.TargetsRoot}
	m, err := base.Manifest()
	if err != nil {
		return Result{}, "", bad("%v", err)
	}
	cfg.MinNodes = fewestNodes
	for cfg.MinNodes < info.Config.Nodes && m.Fits(cfg.MinNodes) != nil {
		cfg.MinNodes++
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return Result{}, "", bad("--out: %v", err)
	}
	if cfg.Journal, err = OpenJournal(filepath.Join(cfg.Out, JournalFile)); err != nil {
		return Result{}, "", bad("%v", err)
	}
	defer cfg.Journal.Close()
	if cfg.Log != nil {
		cfg.Progress = func(p Progress) { fmt.Fprintln(cfg.Log, p) }
	}
	original := Candidate{Faults: e.Faults, Nodes: info.Config.Nodes, Limit: info.Config.TimeLimit.Seconds()}
	began := time.Now()
	res, err := Shrink(ctx, &Replays{Base: base, Dir: cfg.Out}, original, cfg.Options)
	if err != nil || !res.Reproduced {
		return res, "", err
	}
	dir, err := shrunkFolder(cfg, res, time.Since(began))
	return res, dir, err
}

// shrunkFolder copies a replay of the best schedule that reproduced into
// Out/shrunk, with the schedule as minimal.json, shrink.json, and its
// report written again to show both schedules and the likelihood.
func shrunkFolder(cfg Config, res Result, took time.Duration) (string, error) {
	dir, err := filepath.Abs(filepath.Join(cfg.Out, ShrunkDir))
	if err != nil {
		return "", err
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.CopyFS(dir, os.DirFS(res.BestTal.Example.Dir)); err != nil {
		return "", err
	}
	minimal, err := writeSchedule(filepath.Join(dir, MinimalFile), res.Best.Faults)
	if err != nil {
		return "", err
	}
	info, err := results.ReadInfo(dir)
	if err != nil {
		return "", err
	}
	schedule := func(c Candidate, t Tally) results.ShrunkSchedule {
		return results.ShrunkSchedule{Faults: c.Faults, Nodes: c.Nodes, TimeLimit: c.Limit, Runs: t.Runs, Reproduced: t.Reproduced}
	}
	runDir, _ := filepath.Abs(cfg.RunDir)
	s := results.Shrunk{
		From: runDir, Violation: cfg.Violation,
		Original: schedule(res.Original, res.OriginalTally), Minimal: schedule(res.Best, res.BestTal),
		Command:    results.ReplayCommand(info.Config, minimal),
		Likelihood: res.Likelihood, Candidates: res.Candidates, Replays: res.Replays,
		Seconds: took.Seconds(), OutOfBudget: res.OutOfBudget,
	}
	if err := results.WriteJSON(filepath.Join(dir, results.ShrinkFile), s); err != nil {
		return "", err
	}
	report, err := results.ReadResults(dir)
	if err != nil {
		return "", err
	}
	events, _ := history.ReadFile(filepath.Join(dir, results.HistoryFile), history.ReadEvents)
	return dir, results.WriteReport(dir, info, report, events)
}

// bad is input the user must fix.
func bad(format string, args ...any) error {
	return &harness.BadInputError{Msg: "shrink: " + fmt.Sprintf(format, args...)}
}
