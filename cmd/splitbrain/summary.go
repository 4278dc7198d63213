package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/harness/record"
	"github.com/splitbrain/splitbrain/results"
)

// summarize prints a judged run's verdict, each checker's line, the
// notes, timings and faults, and where its report is.
func summarize(out *record.Outcome) {
	t := out.Info.Timings
	verdict, harnessFailed := out.Report.Outcome()
	word := strings.ToUpper(verdict.String())
	if harnessFailed {
		word = "HARNESS FAILURE"
	}
	fmt.Printf("splitbrain: %s: %s\n", out.Info.ID, word)
	if out.Report.HarnessFailure != "" {
		fmt.Printf("  %s\n", out.Report.HarnessFailure)
	}
	names := make([]string, 0, len(out.Report.Checkers))
	for n := range out.Report.Checkers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r := out.Report.Checkers[n]
		fmt.Printf("  %-16s %-8s %s\n", n, r.Valid, figures(r.Figures))
		for i, v := range r.Violations {
			if i == 3 {
				fmt.Printf("    ... %d more in the report\n", len(r.Violations)-3)
				break
			}
			fmt.Printf("    %s\n", v.Message)
		}
	}
	for _, n := range out.Info.Notes {
		fmt.Printf("  note: %s\n", n)
	}
	for _, c := range out.Report.CutShort {
		fmt.Printf("  left out: line %d of %s (%d bytes) was cut short, its writer killed while writing it; the complete lines before it were judged\n", c.Line, c.File, c.Bytes)
	}
	if t.Total == 0 { // a run whose controller died measured nothing
		fmt.Printf("  report: %s\n", filepath.Join(out.Dir, results.ReportFile))
		return
	}
	fmt.Printf("  timings: images %.2fs, cluster healthy %.2fs, teardown %.2fs, check %.2fs, total %.1fs\n",
		t.ImageBuild, t.ClusterStart, t.Teardown, t.Check, t.Total)
	fmt.Printf("  ops/s: %.0f asked, %.1f issued, %.1f completed; ok %d, failed %d, indeterminate %d, not issued %d\n",
		t.RequestedRate, t.AchievedRate, t.CompletedRate, t.OpsOK, t.OpsFailed, t.OpsUnknown, t.OpsNotIssued)
	for _, f := range out.Info.Faults {
		fmt.Printf("  %7.2fs %-18s in effect after %.0f ms, healed in %s; %s%s\n", float64(f.At)/1e9, f.Fault,
			f.InjectMS, healed(f.HealMS), leaderChange(f), errNote(f.Error))
	}
	if out.Info.Interrupted {
		fmt.Println("  interrupted: the verdict covers the history recorded until the stop")
	}
	if _, err := os.Stat(filepath.Join(out.Dir, results.ScheduleFile)); err == nil {
		fmt.Printf("  replay: %s\n", results.ReplayCommand(out.Info.Config, filepath.Join(out.Dir, results.ScheduleFile)))
	}
	fmt.Printf("  report: %s\n", filepath.Join(out.Dir, results.ReportFile))
}

func healed(ms float64) string {
	if ms < 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f ms", ms)
}

func leaderChange(f checkers.FaultEffect) string {
	if f.After == "" {
		return "no leader change"
	}
	from := f.Before
	if from == "" {
		from = "none"
	}
	return fmt.Sprintf("leader %s -> %s after %.2f s", from, f.After, f.FailoverS)
}

func errNote(err string) string {
	if err == "" {
		return ""
	}
	return " (error: " + err + ")"
}

func figures(f map[string]float64) string {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%g", k, f[k]))
	}
	return strings.Join(parts, " ")
}

// verdictCode is the exit code of a judged run: a harness failure the
// history does not prove invalid is 255, as it was for the run itself.
func verdictCode(r checkers.Report) int {
	verdict, harnessFailed := r.Outcome()
	if harnessFailed {
		return exitFailed
	}
	switch verdict {
	case checkers.Valid:
		return exitValid
	case checkers.Invalid:
		return exitInvalid
	}
	return exitUnknown
}
