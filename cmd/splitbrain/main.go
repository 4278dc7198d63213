// Command splitbrain tests leader-election implementations in Docker containers under faults and judges what it saw.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/harness/suite"
	"github.com/splitbrain/splitbrain/history"
	"github.com/splitbrain/splitbrain/results"
	"github.com/splitbrain/splitbrain/targets"
)

// Exit codes, Jepsen's.
const (
	exitValid    = 0
	exitInvalid  = 1
	exitUnknown  = 2
	exitBadInput = 254
	exitFailed   = 255
)

const usage = `usage:
  splitbrain run --target raft|--target-dir PATH [--promise P] [--nodes 5] [--time-limit 60s] [--nemesis partition,pause,kill,clock] [--nemesis-interval D]
                 [--rate 100] [--concurrency 10] [--resource strict|unfenced] [--seed N] [--results DIR]
                 [--stop-on-violation [--stop-on CHECKERS]] [--junit FILE]
  splitbrain conform --target T|--target-dir PATH [--nodes 3] [--junit FILE]
                                    start a target with no fault and check the node API's rules, one line each;
                                    exit 0 only if every rule holds: the first command a target's author runs
                 [--schedule FILE]  the faults of an explicit schedule (a run's schedule.json), at its times
  splitbrain analyze RUN_DIR        re-check a stored run
  splitbrain shrink RUN_DIR [--runs 5] [--reproduce 0.8] [--budget 20m] [--parallel 2] [--violation CHECKER/KIND] [--out DIR]
                                    the smallest schedule that still reproduces the run's violation, by replays
  splitbrain serve [--addr 127.0.0.1:8080] [--results DIR]
  splitbrain targets                list targets and what each promises
  splitbrain suite FILE [--shard I/N] [--parallel N] [--stop-on-violation] [--junit FILE] [--results DIR]
                   [--target T] [--family F] [--expect valid|invalid] [--runs N] [--seed N] [--time-limit D] [--table]
                                    run a suite (targets/catalogue.yaml is one); exit 0 only if every run reached its verdict
  splitbrain merge --results DIR [--junit FILE] SHARD_DIR...
                                    join the results folders of a suite's shards into one
  splitbrain prune [--keep N] [--older-than D] [--results DIR]
                                    remove stored runs beyond the newest N, or older than D
  splitbrain images [--target T]    make every image a run of the targets builds (without --target, the tests' too) ahead of runs and tests
  splitbrain clean [--orphans]      remove every container and network of splitbrain's; with --orphans only those whose process is gone`

func main() {
	os.Exit(run(os.Args[1:]))
}

// run returns the exit code; every error becomes one line on stderr.
func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, usage)
		return exitBadInput
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var (
		code int
		err  error
	)
	switch args[0] {
	case "run":
		code, err = runCmd(ctx, args[1:])
	case "conform":
		code, err = conformCmd(ctx, args[1:])
	case "analyze":
		code, err = analyzeCmd(args[1:])
	case "shrink":
		code, err = shrinkCmd(ctx, args[1:])
	case "serve":
		code, err = serveCmd(ctx, args[1:])
	case "targets":
		code, err = targetsCmd(args[1:])
	case "suite":
		code, err = suiteCmd(ctx, args[1:])
	case "merge":
		code, err = mergeCmd(args[1:])
	case "prune":
		code, err = pruneCmd(args[1:])
	case "images":
		code, err = imagesCmd(ctx, args[1:])
	case "clean":
		code, err = cleanCmd(ctx, args[1:])
	case "-h", "--help", "help":
		fmt.Println(usage)
		return exitValid
	default:
		err = badInput("unknown command %q (run, conform, analyze, shrink, serve, targets, suite, merge, prune, images, clean)", args[0])
	}
	if errors.Is(err, errHelp) {
		return exitValid
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "splitbrain: "+oneLine(err))
		if harness.IsBadInput(err) {
			return exitBadInput
		}
		return exitFailed
	}
	return code
}

// help describes a command's flags, each with its default and meaning.
func help(fs *flag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: splitbrain %s [flags]", fs.Name())
	b.WriteString(map[string]string{"analyze": " RUN_DIR", "shrink": " RUN_DIR", "suite": " FILE", "merge": " SHARD_DIR..."}[fs.Name()])
	b.WriteString("\n\nflags:\n")
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	return b.String()
}

func badInput(format string, args ...any) error {
	return &harness.BadInputError{Msg: fmt.Sprintf(format, args...)}
}

// oneLine keeps the first line of an error as the message and indents the
// rest (a build's or a log's tail) beneath it.
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "\n    ")
}

// parse parses flags quietly: a bad flag is one line, not a usage dump.
// errHelp is a command asked for its help, which it printed: exit 0.
var errHelp = errors.New("help printed")

func parse(fs *flag.FlagSet, args []string) error {
	pos, err := parseArgs(fs, args)
	if err == nil && len(pos) > 0 {
		return badInput("%s: unexpected argument %q", fs.Name(), pos[0])
	}
	return err
}

// parseArgs parses flags wherever they stand among the positional
// arguments (a run folder, a suite file, shards' folders), which it
// returns in order.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Print(help(fs))
				return nil, errHelp
			}
			return nil, badInput("%s: %v", fs.Name(), err)
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos, args = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
}

func runCmd(ctx context.Context, args []string) (int, error) {
	cfg := harness.DefaultConfig()
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.StringVar(&cfg.Target, "target", cfg.Target, "target name (a folder of targets/)")
	fs.StringVar(&cfg.TargetDir, "target-dir", "", "a target's folder anywhere, instead of --target")
	fs.StringVar(&cfg.Promise, "promise", "", "judge by this promise instead of the target's own")
	fs.IntVar(&cfg.Nodes, "nodes", cfg.Nodes, "number of nodes")
	fs.DurationVar(&cfg.TimeLimit, "time-limit", cfg.TimeLimit, "how long faults and workload run")
	fs.DurationVar(&cfg.QuietPeriod, "quiet-period", cfg.QuietPeriod, "workload without faults after the final heal")
	nem := fs.String("nemesis", strings.Join(cfg.Nemesis, ","), "comma-separated faults, or none")
	fs.DurationVar(&cfg.NemesisInterval, "nemesis-interval", cfg.NemesisInterval, "a fault every interval, healed half an interval later (default: each fault once the cluster has a settled leader, healed once it reacted)")
	fs.Float64Var(&cfg.Rate, "rate", cfg.Rate, "operations per second across the cluster")
	fs.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "client processes")
	fs.IntVar(&cfg.Keys, "keys", cfg.Keys, "size of the key set")
	fs.DurationVar(&cfg.OpTimeout, "op-timeout", cfg.OpTimeout, "per operation; later it is indeterminate")
	fs.DurationVar(&cfg.ObserveInterval, "observe-interval", cfg.ObserveInterval, "how often each node's belief is polled, or pushed when unchanged")
	fs.DurationVar(&cfg.StartTimeout, "start-timeout", cfg.StartTimeout, "for every node to become healthy")
	res := fs.String("resource", string(cfg.Resource), "strict or unfenced")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the workload and the nemesis schedule")
	fs.StringVar(&cfg.ResultsDir, "results", cfg.ResultsDir, "results folder")
	fs.StringVar(&cfg.Schedule, "schedule", "", "an explicit schedule file (a run's schedule.json): its faults at its times, instead of --nemesis's")
	fs.BoolVar(&cfg.StopOnViolation, "stop-on-violation", false, "end the run at the first violation its history shows as it is written, then heal, tear down and judge the whole history")
	stopOn := fs.String("stop-on", "", "with --stop-on-violation: stop once each of these checkers found one ("+strings.Join(harness.Watched, ", ")+")")
	junit := fs.String("junit", "", "write a JUnit XML report of the run to this file")
	checkFlags(fs, &cfg)
	fs.Lookup("seed").DefValue = "random, kept in run.json"
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	cfg.Nemesis = strings.Split(*nem, ",")
	cfg.Resource = contract.Mode(*res)
	if *stopOn != "" {
		cfg.StopOn = strings.Split(*stopOn, ",")
	}
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	if err := writable(cfg.ResultsDir, *junit); err != nil {
		return 0, err
	}
	root, err := repoRoot()
	if err != nil {
		return 0, err
	}
	cfg.RepoRoot, cfg.TargetsRoot = root, filepath.Join(root, "targets")

	began := time.Now()
	out, err := harness.Run(ctx, cfg)
	if *junit != "" {
		rec := suite.Single(cfg, out, err, time.Since(began))
		if jerr := writeJUnit(*junit, rec, cfg.ResultsDir); jerr != nil && err == nil {
			err = jerr
		}
	}
	if harness.IsEnvironment(err) {
		summarize(out) // judged up to the failure, which main then prints
	}
	if err != nil {
		return 0, err
	}
	summarize(out)
	return verdictCode(out.Report), nil
}

func summarize(out *harness.Outcome) {
	t := out.Info.Timings
	verdict := strings.ToUpper(out.Report.Valid.String())
	if out.Report.HarnessFailure != "" && out.Report.Valid != checkers.Invalid {
		verdict = "HARNESS FAILURE"
	}
	fmt.Printf("splitbrain: %s: %s\n", out.Info.ID, verdict)
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
	if r.HarnessFailure != "" && r.Valid != checkers.Invalid {
		return exitFailed
	}
	switch r.Valid {
	case checkers.Valid:
		return exitValid
	case checkers.Invalid:
		return exitInvalid
	}
	return exitUnknown
}

func analyzeCmd(args []string) (int, error) {
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
	summarize(&harness.Outcome{Dir: dir, Info: info, Report: report})
	return verdictCode(report), nil
}

// checkFlags are the checker settings shared by run and analyze.
func checkFlags(fs *flag.FlagSet, cfg *harness.Config) {
	fs.DurationVar(&cfg.CheckTimeout, "check-timeout", cfg.CheckTimeout, "linearizability budget; past it the verdict is unknown")
	fs.DurationVar(&cfg.RecoveryTimeout, "recovery-timeout", cfg.RecoveryTimeout, "after the final heal, for exactly one leader")
}

// storeError is bad input: a file of the store that could not be read, as
// what, or one written by a newer splitbrain, which says to upgrade.
func storeError(cmd, what string, err error) error {
	var newer *results.NewerFormatError
	if errors.As(err, &newer) {
		return badInput("%s: %v", cmd, err)
	}
	return badInput("%s: %s: %v", cmd, what, err)
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

func serveCmd(ctx context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address (loopback by default)")
	dir := fs.String("results", "results", "results folder")
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	h, err := resultsHandler(*dir)
	if err != nil {
		return 0, err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return 0, badInput("serve: %v", err)
	}
	fmt.Printf("splitbrain: serving %s on http://%s/\n", *dir, ln.Addr())
	srv := &http.Server{Handler: h}
	go func() { <-ctx.Done(); srv.Close() }()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return 0, err
	}
	return exitValid, nil
}

// resultsHandler serves a results folder with its index as the home page.
// The index is rewritten first, so runs analyzed again or copied in since
// the last run are listed as they are now.
func resultsHandler(dir string) (http.Handler, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, badInput("serve: %s is not a results folder (a run creates it; --results names another)", dir)
	}
	if err := results.WriteIndex(results.Store{Root: dir}); err != nil {
		return nil, fmt.Errorf("serve: %v", err)
	}
	return http.FileServer(http.Dir(dir)), nil
}

func targetsCmd(args []string) (int, error) {
	fs := flag.NewFlagSet("targets", flag.ContinueOnError)
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	_, all, err := repoTargets()
	if err != nil {
		return 0, err
	}
	fmt.Printf("%-22s %-20s %-10s %s\n", "TARGET", "PROMISE", "SERVICES", "DESCRIPTION")
	for _, m := range all {
		services := make([]string, len(m.Services))
		for i, s := range m.Services {
			services[i] = s.Name
			switch {
			case s.Beside == targets.BesideNodes:
				services[i] += "×node"
			case s.Beside != "":
				services[i] += "×n1-n" + s.Beside
			case s.Members > 1:
				services[i] += fmt.Sprintf("×%d", s.Members)
			}
		}
		fmt.Printf("%-22s %-20s %-10s %s\n", m.Name, m.Promise, cmp.Or(strings.Join(services, ","), "-"), m.Description)
	}
	return exitValid, nil
}

// imagesCmd makes every image of the repository's targets (the heavy bases
// once per machine, their programs compiled) and, without --target, of the
// harness's own tests, so that a CI job can pay for them in a step of its
// own and no run or test waits for them.
func imagesCmd(ctx context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("images", flag.ContinueOnError)
	target := fs.String("target", "", "only this target's images")
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	root, all, err := repoTargets()
	if err != nil {
		return 0, err
	}
	if *target != "" {
		m, err := targets.Find(filepath.Join(root, "targets"), *target)
		if err != nil {
			return 0, badInput("%v", err)
		}
		all = []targets.Manifest{m}
	}
	d, err := harness.ConnectDocker(ctx)
	if err != nil {
		return 0, err
	}
	defer d.Close()
	d.Progress = os.Stdout
	start := time.Now()
	if err := d.Images(ctx, root, all, *target == ""); err != nil {
		return 0, err
	}
	fmt.Printf("splitbrain: the images of %d targets are on this machine (%.1f s)\n", len(all), time.Since(start).Seconds())
	return exitValid, nil
}

func cleanCmd(ctx context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("clean", flag.ContinueOnError)
	orphans := fs.Bool("orphans", false, "only what processes that are gone left behind: make test's first step")
	if err := parse(fs, args); err != nil {
		return 0, err
	}
	d, err := harness.ConnectDocker(ctx)
	if err != nil {
		return 0, err
	}
	defer d.Close()
	remove := func(ctx context.Context) (harness.Removed, error) { return d.Remove(ctx, harness.LabelManaged+"=true") }
	if *orphans {
		remove = d.RemoveOrphans
	}
	n, err := remove(ctx)
	fmt.Printf("splitbrain: removed %d containers and %d networks\n", n.Containers, n.Networks)
	if len(n.Stuck) > 0 {
		fmt.Printf("splitbrain: the Docker Engine holds a stale endpoint in networks %s and will not remove them before it restarts; nothing runs in them\n", strings.Join(n.Stuck, ", "))
	}
	if err != nil {
		return 0, err
	}
	return exitValid, nil
}

// repoTargets finds splitbrain's source folder and reads the manifests of
// its targets; one that does not read is bad input.
func repoTargets() (root string, all []targets.Manifest, err error) {
	if root, err = repoRoot(); err != nil {
		return "", nil, err
	}
	if all, err = targets.List(filepath.Join(root, "targets")); err != nil {
		return "", nil, badInput("%v", err)
	}
	return root, all, nil
}

// repoRoot is splitbrain's source folder, found upwards from the working
// directory: runs build their images from it.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/splitbrain/splitbrain\n") {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", badInput("run splitbrain inside its source folder (no splitbrain go.mod above %s)", dir)
		}
	}
}
