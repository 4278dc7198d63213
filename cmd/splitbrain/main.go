// Command splitbrain tests leader-election implementations in Docker containers under faults and judges what it saw.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/splitbrain/splitbrain/harness"
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

// command is one of splitbrain's commands.
type command struct {
	name string
	// operands follow the flags in its --help: " RUN_DIR".
	operands string
	// usage is its entry in splitbrain's usage, beside its code.
	usage string
	do    func(ctx context.Context, args []string) (int, error)
}

// commands are splitbrain's, in the order a newcomer meets them. A
// function, not a table: each command's help looks itself up in it.
func commands() []command {
	return []command{
		{"run", "", runUsage, runCmd},
		{"conform", "", conformUsage, conformCmd},
		{"analyze", " RUN_DIR", analyzeUsage, analyzeCmd},
		{"shrink", " RUN_DIR", shrinkUsage, shrinkCmd},
		{"serve", "", serveUsage, serveCmd},
		{"targets", "", targetsUsage, targetsCmd},
		{"suite", " FILE", suiteUsage, suiteCmd},
		{"merge", " SHARD_DIR...", mergeUsage, mergeCmd},
		{"prune", "", pruneUsage, pruneCmd},
		{"images", "", imagesUsage, imagesCmd},
		{"clean", "", cleanUsage, cleanCmd},
		{"engines", "", enginesUsage, enginesCmd},
	}
}

// lookup is the command named name.
func lookup(name string) (command, bool) {
	i := slices.IndexFunc(commands(), func(c command) bool { return c.name == name })
	if i < 0 {
		return command{}, false
	}
	return commands()[i], true
}

// usage is every command's usage.
func usage() string {
	lines := []string{"usage:"}
	for _, c := range commands() {
		lines = append(lines, c.usage)
	}
	return strings.Join(lines, "\n")
}

func main() {
	os.Exit(run(os.Args[1:]))
}

// run returns the exit code; every error becomes one line on stderr.
func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, usage())
		return exitBadInput
	}
	if slices.Contains([]string{"-h", "--help", "help"}, args[0]) {
		fmt.Println(usage())
		return exitValid
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var (
		code int
		err  error
	)
	if c, ok := lookup(args[0]); ok {
		code, err = c.do(ctx, args[1:])
	} else {
		var names []string
		for _, c := range commands() {
			names = append(names, c.name)
		}
		err = badInput("unknown command %q (%s)", args[0], strings.Join(names, ", "))
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
	c, _ := lookup(fs.Name())
	fmt.Fprintf(&b, "usage: splitbrain %s [flags]%s", fs.Name(), c.operands)
	b.WriteString("\n\nflags:\n")
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	return b.String()
}

// badInput is an error the user must fix: exit 254.
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

// parseWithFile parses flags around one positional argument, a file
// (flags may come before or after it).
func parseWithFile(fs *flag.FlagSet, args []string, what string) (string, error) {
	pos, err := parseArgs(fs, args)
	switch {
	case err != nil:
		return "", err
	case len(pos) == 0:
		return "", badInput("%s: give %s", fs.Name(), what)
	case len(pos) > 1:
		return "", badInput("%s: give one file, not also %q", fs.Name(), pos[1])
	}
	return pos[0], nil
}

// probeSize is what a results folder must take before a run starts: the
// run.json, reports and the first seconds of history of a run.
const probeSize = 1 << 20

// writable checks, before anything starts, that the results folder and
// the JUnit file can be written.
func writable(root, junit string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return badInput("--results: %v", err)
	}
	// A folder that exists but takes no file (read-only) or no bytes (a
	// full disk, where an empty file still fits) would otherwise fail the
	// run after its containers started.
	probe, err := os.CreateTemp(root, ".splitbrain-probe-")
	if err != nil {
		return badInput("--results %s cannot be written: %v", root, err)
	}
	_, err = probe.Write(make([]byte, probeSize))
	probe.Close()
	os.Remove(probe.Name())
	if err != nil {
		return badInput("--results %s cannot be written: %v", root, err)
	}
	if junit == "" {
		return nil
	}
	if st, err := os.Stat(filepath.Dir(junit)); err != nil || !st.IsDir() {
		return badInput("--junit %s: its folder does not exist", junit)
	}
	return nil
}

// writeJUnit writes suite s as a JUnit XML report at path; root is the
// results folder its runs' reports are in.
func writeJUnit(path string, s results.Suite, root string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := results.WriteJUnit(f, s, root); err != nil {
		f.Close()
		return err
	}
	return f.Close()
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
