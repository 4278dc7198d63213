package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/harness/record"
	"github.com/splitbrain/splitbrain/history"
	"github.com/splitbrain/splitbrain/results"
)

// analyzeUsage is the usage of `splitbrain analyze`.
const analyzeUsage = `  splitbrain analyze RUN_DIR        re-check a stored run`

// analyzeCmd judges a stored run again and writes its report anew.
func analyzeCmd(_ context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("analyze", flag.ContinueOnError)
	var flags harness.Config
	checkFlags(fs, &flags)
	dir, err := parseWithFile(fs, args, "one run folder, e.g. results/latest")
	if err != nil {
		return 0, err
	}
	info, err := results.ReadInfo(dir)
	if err != nil {
		return 0, storeError("analyze", fmt.Sprintf("%s is not a run folder", dir), err)
	}
	promise, err := contract.ParsePromise(info.Promise)
	if err != nil {
		return 0, badInput("analyze: run.json: %v", err)
	}
	// The run's own settings, then the flags given here.
	cfg := &info.Config
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "check-timeout":
			cfg.CheckTimeout = flags.CheckTimeout
		case "recovery-timeout":
			cfg.RecoveryTimeout = flags.RecoveryTimeout
		}
	})
	report, events, err := results.Analyze(dir, promise, cfg.ObserveInterval, cfg.CheckOptions(), info.Error)
	if err != nil {
		return 0, analyzeError(err)
	}
	if err := results.WriteReport(dir, info, report, events); err != nil {
		return 0, err
	}
	summarize(&record.Outcome{Dir: dir, Info: info, Report: report})
	return verdictCode(report), nil
}

// analyzeError makes an unreadable history bad input: the run folder, not
// splitbrain, is at fault.
func analyzeError(err error) error {
	var le *history.LineError
	if errors.As(err, &le) {
		return badInput("analyze: %v", err)
	}
	return err
}
