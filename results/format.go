package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/nemesis"
)

// Format is the version of the store this splitbrain writes: of run.json,
// results.json and suite.json, each of which says the format it was
// written in, and of history.jsonl and resource.jsonl, whose format is
// their run.json's. A nightly store is read for months by newer versions,
// so every change of what these files hold raises it, and the readers
// here read every format from 1 into today's types (docs/contract.md,
// "Store formats"; testdata/formats keeps a run of each).
//
// Format 1 is every file without a "format" (or with 0, Go's zero value):
// what splitbrain wrote before it numbered them. Format 3 added run.json's
// harness_timing, which a run of format 2 or older lacks: it reads as
// none. Format 4 added suite.json's cases' found, which an older case
// lacks: 0, every run of its row had to find the violation. Format 5
// added run.json's config.engines and placement, which an older run, on
// one Docker Engine, lacks: none.
const Format = 5

// NewerFormatError is a file written by a newer splitbrain, in a format
// this one does not know.
type NewerFormatError struct {
	Path   string
	Format int
}

func (e *NewerFormatError) Error() string {
	return fmt.Sprintf("%s is of store format %d, newer than this splitbrain reads (formats 1 to %d): upgrade splitbrain", e.Path, e.Format, Format)
}

// formatOf is the store format of path's content b: its "format", or 1
// without one.
func formatOf(path string, b []byte) (int, error) {
	var v struct {
		Format int `json:"format"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case v.Format < 0:
		return 0, fmt.Errorf("%s: format %d: no splitbrain writes it", path, v.Format)
	case v.Format > Format:
		return 0, &NewerFormatError{Path: path, Format: v.Format}
	}
	return max(v.Format, 1), nil
}

// readStored reads path, a file that says its store format, refusing a
// format newer than this splitbrain's.
func readStored(path string) ([]byte, int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	format, err := formatOf(path, b)
	return b, format, err
}

// ReadInfo reads the run.json of the run folder dir, of any format, into
// today's Info; Info.Format is the format it was stored in. A setting its
// config lacks reads as in DefaultSettings.
func ReadInfo(dir string) (Info, error) {
	path := filepath.Join(dir, RunFile)
	b, format, err := readStored(path)
	if err != nil {
		return Info{}, err
	}
	info := Info{Config: DefaultSettings()}
	if format == 1 {
		err = readInfo1(b, &info)
	} else {
		err = json.Unmarshal(b, &info)
	}
	if err != nil {
		return Info{}, fmt.Errorf("%s: %w", path, err)
	}
	info.Format = format
	return info, nil
}

// readInfo1 reads a run.json of format 1. Its schedule had three forms:
// none (before the nemesis had a plan), a list of steps (until the faults
// were paced by the cluster, 2026-11-23), and today's object. A list was
// always a fixed rhythm, and today's schedule of a fixed rhythm is those
// very steps with the faults they inject, so it reads as that, losing
// nothing.
func readInfo1(b []byte, info *Info) error {
	stored := struct {
		*Info
		Schedule json.RawMessage `json:"schedule"` // shadows Info's
	}{Info: info}
	if err := json.Unmarshal(b, &stored); err != nil {
		return err
	}
	switch raw := bytes.TrimSpace(stored.Schedule); {
	case len(raw) == 0: // before the nemesis had a plan
		return nil
	case raw[0] != '[':
		return json.Unmarshal(raw, &info.Schedule)
	}
	var steps []nemesis.Step
	if err := json.Unmarshal(stored.Schedule, &steps); err != nil {
		return fmt.Errorf("schedule: %w", err)
	}
	info.Schedule = nemesis.OfSteps(steps)
	return nil
}

// storedReport is results.json: the checkers' report and the store format
// it was written in. analyze rewrites it in today's format, so it may be
// newer than its run.json.
type storedReport struct {
	Format int `json:"format"`
	checkers.Report
}

// writeResults writes results.json of the run folder dir.
func writeResults(dir string, report checkers.Report) error {
	return WriteJSON(filepath.Join(dir, ResultsFile), storedReport{Format: Format, Report: report})
}

// ReadResults reads results.json of the run folder dir, of any format.
// Every format so far holds today's fields or fewer, and a field a format
// lacks reads as none.
func ReadResults(dir string) (checkers.Report, error) {
	b, _, err := readStored(filepath.Join(dir, ResultsFile))
	if err != nil {
		return checkers.Report{}, err
	}
	var report checkers.Report
	return report, json.Unmarshal(b, &report)
}
