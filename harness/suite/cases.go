package suite

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/harness"
)

// Case is one run of a suite: a row's target under one of its nemesis
// lists on one of its seeds.
type Case struct {
	// Index is the case's place among the cases selected to run, from 0.
	Index  int
	Row    Row
	Target string // the target's name
	System string // the real system it runs, "" for Go alone: Manifest.System
	Config harness.Config
}

// Name says the target (and how it was run or judged), the nemesis and
// the seed: JUnit's test case name.
func (c Case) Name() string {
	return fmt.Sprintf("%s; seed %d", c.RowName(), c.Config.Seed)
}

// RowName is the name without the seed: the runs of a row under one
// nemesis list share it, and the summary table has a line for each.
func (c Case) RowName() string {
	return label(c.Target, c.Row) + "; " + strings.Join(c.Config.Nemesis, ",")
}

// Options change how a suite's cases are run, from the command line.
type Options struct {
	RepoRoot   string // splitbrain's source folder
	ResultsDir string
	// Seed, TimeLimit and Runs replace every row's when set; TimeLimit
	// replaces a row's Faults too.
	Seed      uint64
	TimeLimit time.Duration
	Runs      int
	// StopOnViolation ends each run at the violation it had to find (or
	// at any, for a row that must be valid) instead of at its time limit.
	StopOnViolation bool
	// Engines, when set, spreads every run over the engines this file
	// names (harness.Config's).
	Engines string
}

// Filter picks rows; an empty field picks all.
type Filter struct {
	Target, Family, Expect string
	Bug                    string // a track record's rows of one bug
}

func (f Filter) keeps(r Row, target string) bool {
	return (f.Target == "" || f.Target == target) && (f.Family == "" || f.Family == r.Family) &&
		(f.Expect == "" || f.Expect == r.Expect) && (f.Bug == "" || f.Bug == r.Bug)
}

// Cases expands the rows f keeps into runs, in the file's order: each
// row's targets, then its nemesis lists, then its seeds. Every run's
// settings are validated here, before any starts: a bad row must not
// fail an hour in.
func (s *Suite) Cases(f Filter, o Options) ([]Case, error) {
	var out []Case
	for i, r := range s.Rows {
		st := s.Settings(r)
		st.Seed, st.TimeLimit, st.Runs = cmp.Or(o.Seed, st.Seed), cmp.Or(o.TimeLimit, st.TimeLimit), cmp.Or(o.Runs, st.Runs)
		if o.TimeLimit > 0 {
			st.Faults = 0 // runs of the time asked for, not of the rows' faults
		}
		for _, t := range s.targets(r) {
			if !f.keeps(r, t.name) {
				continue
			}
			seeds := r.seeds(st)
			if r.Found > len(seeds) {
				return nil, fmt.Errorf("%s:%d: row %d: found %d: more than its %d runs", s.path, r.line, i+1, r.Found, len(seeds))
			}
			for _, nem := range r.nemesisLists() {
				for _, seed := range seeds {
					cfg := config(st, r, nem, o)
					cfg.Schedule = s.schedulePath(r)
					if cfg.Schedule != "" {
						cfg.Faults = 0 // the schedule's own
					}
					cfg.Target, cfg.TargetDir, cfg.Seed = t.name, t.dir, seed
					if t.dir != "" {
						cfg.Target = ""
					}
					if err := cfg.Validate(); err != nil {
						return nil, fmt.Errorf("%s:%d: row %d: %v", s.path, r.line, i+1, err)
					}
					out = append(out, Case{Index: len(out), Row: r, Target: t.name, System: s.systems[t.name], Config: cfg})
				}
			}
		}
	}
	if len(out) == 0 {
		if f.Bug != "" {
			return nil, fmt.Errorf("%s: no row runs bug %q", s.path, f.Bug)
		}
		return nil, fmt.Errorf("%s: no row for target %q, family %q, expect %q", s.path, f.Target, f.Family, f.Expect)
	}
	return out, nil
}

// config is a run of row r under nemesis nem with settings st.
func config(st Settings, r Row, nem []string, o Options) harness.Config {
	cfg := harness.DefaultConfig()
	cfg.RepoRoot, cfg.TargetsRoot = o.RepoRoot, filepath.Join(o.RepoRoot, "targets")
	cfg.ResultsDir = cmp.Or(o.ResultsDir, cfg.ResultsDir)
	cfg.Promise, cfg.Nemesis = r.Promise, nem
	cfg.Engines = o.Engines
	cfg.Progress = nil
	cfg.Nodes = cmp.Or(st.Nodes, cfg.Nodes)
	cfg.TimeLimit = cmp.Or(st.TimeLimit, cfg.TimeLimit)
	cfg.NemesisInterval = cmp.Or(st.NemesisInterval, cfg.NemesisInterval)
	if !slices.Equal(nem, []string{"none"}) {
		cfg.Faults = st.Faults
	}
	cfg.QuietPeriod = cmp.Or(st.QuietPeriod, cfg.QuietPeriod)
	cfg.RecoveryTimeout = cmp.Or(st.RecoveryTimeout, cfg.RecoveryTimeout)
	cfg.Resource = cmp.Or(contract.Mode(st.Resource), cfg.Resource)
	cfg.ReadShare = cmp.Or(st.ReadShare, cfg.ReadShare)
	// A row that must be valid stops at any violation: it has failed. One
	// that must be invalid stops once each checker it expects found one,
	// unless one of them judges only whole runs.
	if o.StopOnViolation && !slices.ContainsFunc(r.By, func(c string) bool { return !slices.Contains(harness.Watched, c) }) {
		cfg.StopOnViolation, cfg.StopOn = true, r.By
	}
	return cfg
}

// Shard keeps every n-th case from the i-th (1 <= i <= n): n CI runners,
// each given its own i, run the whole suite between them. Dealing the
// cases round-robin spreads each row's seeds, and the slow rows, over
// the runners.
func Shard(cases []Case, i, n int) []Case {
	var out []Case
	for _, c := range cases {
		if c.Index%n == i-1 {
			out = append(out, c)
		}
	}
	return out
}

// ParseShard reads "I/N".
func ParseShard(s string) (i, n int, err error) {
	if _, err := fmt.Sscanf(s, "%d/%d", &i, &n); err != nil || fmt.Sprintf("%d/%d", i, n) != s || n < 1 || i < 1 || i > n {
		return 0, 0, fmt.Errorf("--shard %q: want I/N with 1 <= I <= N, such as 1/4", s)
	}
	return i, n, nil
}
