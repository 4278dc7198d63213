package results

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// SuiteFile is the record a suite leaves in its results folder: the
// verdict of each of its runs against what the run had to find. JUnit
// files, the summary table and merged shards are all made from it.
const SuiteFile = "suite.json"

// Outcomes of a suite's case, as JUnit names them.
const (
	Pass    = "pass"    // the verdict the case had to reach
	Failure = "failure" // a definite verdict, not the expected one
	Error   = "error"   // unknown, or the harness failed: nothing was proven
	Skipped = "skipped" // not judged: what it stands on failed first
)

// Suite is suite.json: the cases of one suite file that one invocation
// (all of them, or a shard) ran.
type Suite struct {
	// Format is the store format suite.json was written in (see Format).
	Format int `json:"format"`
	// Name is the suite file's name without its folder and extension.
	Name string `json:"name"`
	// File is the suite file as it was given.
	File string `json:"file"`
	// Shard is "I/N" when only every N-th case, from the I-th, was run.
	Shard   string    `json:"shard,omitempty"`
	Total   int       `json:"total"` // cases in the whole suite
	Started time.Time `json:"started"`
	Cases   []Case    `json:"cases"`
}

// Case is one run of a suite and how it compares with its expectation.
type Case struct {
	// Index is the case's place in the whole suite, from 0: shards merge
	// back into the suite's order by it.
	Index int `json:"index"`
	// Name says the target (and how it was run or judged), the nemesis
	// and the seed: "bully, judged as exclusive; partition; seed 1".
	Name string `json:"name"`
	// Row is the name without the seed: the summary table's line.
	Row    string `json:"row"`
	Target string `json:"target"`
	// Expect is what the run had to find: "valid", or "invalid by
	// leader-overlap".
	Expect string `json:"expect"`
	// Found, when set, is how many of the runs of the case's row must
	// find the violation (the suite file's found): a valid verdict is
	// then a pass, a miss the row allows, unless too few of them found
	// it. 0: every run must.
	Found   int    `json:"found,omitempty"`
	Outcome string `json:"outcome"` // Pass, Failure, Error or Skipped
	// Verdict is the run's: valid, invalid or unknown; empty when the
	// harness failed before judging.
	Verdict string `json:"verdict,omitempty"`
	// Message says why a case did not pass: the first violation in words,
	// the expectation it missed, or the harness's error.
	Message string `json:"message,omitempty"`
	// FirstViolation is when the first violation was found, in seconds
	// since the run started; absent when none was.
	FirstViolation *float64 `json:"first_violation_s,omitempty"`
	// StoppedEarly is set when the run stopped at its violation instead
	// of running out its time limit.
	StoppedEarly bool    `json:"stopped_early,omitempty"`
	Seconds      float64 `json:"seconds"` // the run's wall time
	Command      string  `json:"command"` // reproduces the run
	Run          string  `json:"run,omitempty"`
}

// Report is the path of the case's report under results folder root.
func (c Case) Report(root string) string {
	if c.Run == "" {
		return ""
	}
	return filepath.Join(root, c.Run, ReportFile)
}

// Failed says whether any case did not pass.
func (s Suite) Failed() bool {
	return slices.ContainsFunc(s.Cases, func(c Case) bool { return c.Outcome != Pass })
}

// WriteSuite writes root/suite.json, in today's format.
func WriteSuite(root string, s Suite) error {
	s.Format = Format
	return WriteJSON(filepath.Join(root, SuiteFile), s)
}

// ReadSuite reads root/suite.json, of any format: every format so far
// holds today's fields or fewer.
func ReadSuite(root string) (Suite, error) {
	b, format, err := readStored(filepath.Join(root, SuiteFile))
	if err != nil {
		return Suite{}, err
	}
	var s Suite
	err = json.Unmarshal(b, &s)
	s.Format = format
	return s, err
}

// MergeSuites joins the shards of one suite into the suite a single
// invocation would have recorded: every case once, in the suite's order.
// Shards of different suites, a case run twice or a case no shard ran are
// errors: a merged record must not pass for a whole suite it is not.
func MergeSuites(shards []Suite) (Suite, error) {
	if len(shards) == 0 {
		return Suite{}, fmt.Errorf("no suite to merge")
	}
	out := Suite{Name: shards[0].Name, File: shards[0].File, Total: shards[0].Total, Started: shards[0].Started}
	seen := map[int]bool{}
	for _, s := range shards {
		if s.Name != out.Name || s.Total != out.Total {
			return Suite{}, fmt.Errorf("suite %s of %d cases cannot merge with suite %s of %d", s.Name, s.Total, out.Name, out.Total)
		}
		if s.Started.Before(out.Started) {
			out.Started = s.Started
		}
		for _, c := range s.Cases {
			if seen[c.Index] {
				return Suite{}, fmt.Errorf("case %d (%s) is in two shards", c.Index+1, c.Name)
			}
			seen[c.Index] = true
			out.Cases = append(out.Cases, c)
		}
	}
	if len(seen) != out.Total {
		var missing []int
		for i := range out.Total {
			if !seen[i] {
				missing = append(missing, i+1)
			}
		}
		return Suite{}, fmt.Errorf("suite %s: %d of its %d cases are in no shard (cases %v)", out.Name, len(missing), out.Total, missing)
	}
	slices.SortFunc(out.Cases, func(a, b Case) int { return cmp.Compare(a.Index, b.Index) })
	return out, nil
}

// CopyRun copies run id's folder from results folder from into to,
// unless it is there already (the same folder, or merged before).
func CopyRun(from, to, id string) error {
	src, dst := filepath.Join(from, id), filepath.Join(to, id)
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		return copyFile(path, target)
	})
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
