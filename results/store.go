// Package results keeps runs on disk (results/<run-id>/, results/latest, results/index.html) and renders their reports.
package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/nemesis"
)

// Files of a run's folder.
const (
	RunFile      = "run.json"
	HistoryFile  = "history.jsonl"
	ResourceFile = "resource.jsonl"
	ResultsFile  = "results.json"
	ScheduleFile = "schedule.json" // the faults as they were carried out: nemesis.Explicit
	ReportFile   = "report.html"
	LogsDir      = "logs"
	LatestLink   = "latest"
	IndexFile    = "index.html"
)

// Info is run.json: what was run, how, and how long each phase took.
type Info struct {
	// Format is the store format run.json was written in (see Format).
	Format  int      `json:"format"`
	ID      string   `json:"id"`
	Command string   `json:"command"` // reproduces the run
	Target  string   `json:"target"`
	Promise string   `json:"promise"`
	Config  Settings `json:"config"`
	Seed    uint64   `json:"seed"`
	// Schedule is the nemesis's plan, fixed by the seed before the run.
	Schedule nemesis.Schedule `json:"schedule"`
	Started  time.Time        `json:"started"`
	Versions Versions         `json:"versions"`
	// Placement is the engine of each container (a node, a service
	// member, "resource") of a run spread over several (Config.Engines).
	Placement map[string]string `json:"placement,omitempty"`
	Timings   Timings           `json:"timings"`
	// Faults is what each injected fault did and cost.
	Faults []checkers.FaultEffect `json:"faults"`
	// HarnessTiming is how long the harness's own actions took: what a
	// loaded host or Docker Engine does to a run shows here first.
	HarnessTiming checkers.HarnessTiming `json:"harness_timing"`
	// Notes say plainly what the run could not test (faults that reach
	// nothing in this target), so that a valid verdict is not read as
	// more, and what the verdict alone would not tell (a container that
	// died on its own and was down at the end).
	Notes       []string `json:"notes,omitempty"`
	Interrupted bool     `json:"interrupted,omitempty"`
	// StoppedEarly is set when the run was asked to stop at a violation
	// and did, before its time limit.
	StoppedEarly *StoppedEarly `json:"stopped_early,omitempty"`
	Error        string        `json:"error,omitempty"` // why the harness failed, if it did
	// Controller is the controller's own footprint, sampled every 10 s
	// while the workload ran.
	Controller []Sample `json:"controller,omitempty"`
}

// Sample is the controller's footprint at one moment of a run.
type Sample struct {
	At     float64 `json:"at_s"`    // since the workload started
	RSSMB  float64 `json:"rss_mb"`  // resident memory, 0 where unknown
	HeapMB float64 `json:"heap_mb"` // Go heap in use
	Events int64   `json:"events"`  // history events recorded so far
}

// StoppedEarly says when a run watching its history for a violation saw
// one, and which checkers had found one by then. The verdict is still the
// checkers' over the whole history, written until the end of the run.
type StoppedEarly struct {
	At       float64  `json:"at_s"` // since the run started
	Checkers []string `json:"checkers"`
}

// Versions of what took part.
type Versions struct {
	Splitbrain string `json:"splitbrain"`
	Go         string `json:"go"`
	Engine     string `json:"docker_engine"`
	// System is the version of each Debian package a real system under
	// test runs from (redis-server: 5:7.0.15-1~deb12u6), as installed in
	// its images.
	System map[string]string `json:"system,omitempty"`
}

// Timings are the run's measured figures, durations in seconds.
type Timings struct {
	ImageBuild     float64 `json:"image_build_s"`
	ClusterStart   float64 `json:"cluster_start_s"` // until every node is healthy
	Workload       float64 `json:"workload_s"`
	Teardown       float64 `json:"teardown_s"`
	Check          float64 `json:"check_s"`
	Total          float64 `json:"total_s"`
	RequestedRate  float64 `json:"requested_ops_per_s"`
	AchievedRate   float64 `json:"achieved_ops_per_s"` // operations actually issued per second
	CompletedRate  float64 `json:"completed_ops_per_s"`
	Events         int64   `json:"events"`
	OpsOK          int64   `json:"ops_ok"`
	OpsFailed      int64   `json:"ops_failed"`
	OpsUnknown     int64   `json:"ops_indeterminate"`
	OpsNotIssued   int64   `json:"ops_not_issued"` // asked by the rate while every process was busy
	ObservedLeader int64   `json:"leader_observations"`
}

// Store is a results folder.
type Store struct{ Root string }

// Create makes the folder of a new run.
func (s Store) Create(id string) (string, error) {
	dir := filepath.Join(s.Root, id)
	if err := os.MkdirAll(filepath.Join(dir, LogsDir), 0o755); err != nil {
		return "", fmt.Errorf("results: %v", err)
	}
	return dir, nil
}

// SetLatest points results/latest at the run id.
func (s Store) SetLatest(id string) error {
	link := filepath.Join(s.Root, LatestLink)
	tmp := tempBeside(link)
	if err := os.Symlink(id, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, link) // atomic: latest is never missing
}

// WriteJSON writes v to path, indented, through a temporary file so a
// reader never sees half of it.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := tempBeside(path)
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

var temps atomic.Int64

// tempBeside names a temporary file beside path that no other writer
// uses, in this process or another: every run that ends replaces the
// store's shared files (latest, index.html), and a suite's runs end at
// once. With one name for all, one writer renamed away the file another
// was about to rename, and that run failed.
func tempBeside(path string) string {
	return fmt.Sprintf("%s.%d-%d.tmp", path, os.Getpid(), temps.Add(1))
}

// ReadJSON reads path into v.
func ReadJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// Runs lists the runs in the store, newest first. Folders without a
// readable run.json are skipped: those of no run, and those of a newer
// store format than this splitbrain reads.
func (s Store) Runs() ([]Info, error) {
	entries, err := os.ReadDir(s.Root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if info, err := ReadInfo(filepath.Join(s.Root, e.Name())); err == nil {
			out = append(out, info)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.After(out[j].Started) })
	return out, nil
}

// Prune bounds the store: it removes the runs beyond the newest keep
// (keep <= 0: no bound by count) and those started before now-olderThan
// (olderThan <= 0: no bound by age; a run of unknown start is never too
// old), then rewrites index.html if it removed anything. It never removes
// the run latest points to, nor a folder that is not the run's: one
// without a run.json naming it, or whose run.json is another run's.
// removed holds the removed runs' ids, newest first, also when err says
// why the others were not removed.
func (s Store) Prune(keep int, olderThan time.Duration, now time.Time) (removed []string, err error) {
	runs, err := s.Runs()
	if err != nil {
		return nil, err
	}
	latest, _ := os.Stat(filepath.Join(s.Root, LatestLink)) // nil: no latest run
	cutoff := now.Add(-olderThan)
	for i, info := range runs { // newest first
		tooMany := keep > 0 && i >= keep
		tooOld := olderThan > 0 && !info.Started.IsZero() && info.Started.Before(cutoff)
		if !tooMany && !tooOld {
			continue
		}
		dir, ok := s.runDir(info)
		if !ok {
			continue
		}
		if st, serr := os.Stat(dir); serr != nil || (latest != nil && os.SameFile(st, latest)) {
			continue
		}
		if err = os.RemoveAll(dir); err != nil {
			break
		}
		removed = append(removed, info.ID)
	}
	if len(removed) > 0 || err != nil { // a failed removal may have removed part of a run
		err = errors.Join(err, WriteIndex(s))
	}
	return removed, err
}

// runDir is the folder of run info, if it has one: a single path element,
// the run's id, whose run.json is the run's (same id, same start). An id is
// read from a file: one that is empty or "..", or one that another
// folder's run.json names, must not lead a removal outside the run.
func (s Store) runDir(info Info) (string, bool) {
	id := info.ID
	if id == "." || filepath.Base(id) != id || !filepath.IsLocal(id) {
		return "", false
	}
	dir := filepath.Join(s.Root, id)
	own, err := ReadInfo(dir)
	if err != nil || own.ID != id || !own.Started.Equal(info.Started) {
		return "", false
	}
	return dir, true
}
