// Package suite reads suite files (runs of targets under nemeses and seeds, each with the verdict it must reach), runs them and judges them.
package suite

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/nemesis"
	"github.com/splitbrain/splitbrain/targets"
)

// Families are the nemesis families of the catalogue's table, in order.
// "service" applies only to targets with service containers.
var Families = []string{"none", "partition", "pause", "kill", "clock", "service"}

// Suite is a suite file: rows of runs, each with the verdict it must
// reach. targets/catalogue.yaml is one.
type Suite struct {
	Defaults Settings `yaml:"defaults"`
	Rows     []Row    `yaml:"rows"`
	// Bugs make the file a track record (targets/bugs.yaml): the
	// documented bugs its rows run, each row naming one.
	Bugs []Bug `yaml:"bugs"`
	// Spread is how the suite's runs use several engines (--engines).
	Spread Spread `yaml:"spread"`
	// path is the file it was read from: target_dir is relative to its
	// folder, and errors name it.
	path string
	// systems are the rows' targets' real systems (Manifest.System), by
	// target name.
	systems map[string]string
}

// Spread is how a suite run over several Docker Engines uses them.
type Spread string

const (
	// SpreadRuns holds each run whole on one engine, the runs spread
	// over the engines (Runner.Places): the default.
	SpreadRuns Spread = "runs"
	// SpreadContainers spreads each run's containers over every engine,
	// as the engines file places them: a suite about clusters across
	// hosts (targets/swarm.yaml).
	SpreadContainers Spread = "containers"
)

// Settings are the settings of a row's runs; a row's own override the
// suite's defaults, and zero means the harness's default.
type Settings struct {
	Nodes           int           `yaml:"nodes"`
	TimeLimit       time.Duration `yaml:"time_limit"`
	NemesisInterval time.Duration `yaml:"nemesis_interval"`
	// Faults bounds a row's runs by their faults instead of TimeLimit
	// (harness.Config.Faults): each goes on until it has struck and
	// healed this many and its cluster is steady after the last, however
	// slow the machine. A row without faults (nemesis none) runs for its
	// time limit.
	Faults          int           `yaml:"faults"`
	QuietPeriod     time.Duration `yaml:"quiet_period"`
	RecoveryTimeout time.Duration `yaml:"recovery_timeout"`
	Resource        string        `yaml:"resource"`
	// ReadShare is the share of reads among the workload's operations: a
	// write lost and overwritten before any read is lost to every
	// checker, so a row about lost writes reads more.
	ReadShare float64 `yaml:"read_share"`
	// Seed is the first seed of a row without seeds, and Runs how many
	// runs it gets, with seeds Seed, Seed+1, ...
	Seed uint64 `yaml:"seed"`
	Runs int    `yaml:"runs"`
}

// Row is one expectation: targets under nemesis lists, on seeds, must
// each reach one verdict.
type Row struct {
	// Target, Targets and TargetDir name the targets: by name (a folder
	// of the repository's targets/), or a folder anywhere, relative to
	// the suite file's.
	Target    string   `yaml:"target"`
	Targets   []string `yaml:"targets"`
	TargetDir string   `yaml:"target_dir"`
	// Family is a nemesis family: the row's runs draw from it unless
	// Nemesis narrows it, and the catalogue's table shows the row in its
	// column.
	Family string `yaml:"family"`
	// Nemesis is one run's --nemesis list; Nemeses gives several, a run
	// under each.
	Nemesis []string `yaml:"nemesis"`
	Nemeses []string `yaml:"nemeses"`
	// Schedule replays an explicit schedule (a run's schedule.json; a
	// file relative to the suite file's folder) instead of drawing
	// faults: its faults at its times, within the row's time limit, the
	// same on every seed.
	Schedule string `yaml:"schedule"`
	// Seeds are the runs' seeds, instead of Seed and Runs.
	Seeds []uint64 `yaml:"seeds"`
	// Promise judges the runs by another promise than the target's own,
	// such as a claim the seeds made for it.
	Promise string `yaml:"promise"`
	// Expect is "valid" or "invalid".
	Expect string `yaml:"expect"`
	// By are the checkers that must find the violation of an invalid row;
	// May are checkers that may find one too. On a valid row, May are
	// those a documented risk of the target lets find a violation: a run
	// invalid by them alone passes. Any other invalid checker is a
	// verdict that differs.
	By  []string `yaml:"by"`
	May []string `yaml:"may"`
	// ByAny: any one of By finding the violation is enough, for a flaw
	// that shows one way or another from run to run (a primary that
	// wakes primary loses writes, or reuses a timeline, or both).
	ByAny bool `yaml:"by_any"`
	// Found, for an invalid row, is how many of its runs under each
	// nemesis list must find the violation; the others may come back
	// valid. Zero: every run. For a violation that a run has a chance of
	// meeting, not a certainty (a race between two candidates): the row
	// says the rate it stands for, and a run that misses is no failure
	// unless too many did.
	Found int `yaml:"found"`
	// Figures bound what a checker measured, each "checker.figure" (the
	// names results.json gives) to a comparison: ">= 3", "== 0". Every
	// run must reach the row's verdict and every bound: a measurement
	// the row stands for, such as the leaderships that nodes coming back
	// ended (availability.rejoin_disruptions).
	Figures map[string]string `yaml:"figures"`
	// Why says in a sentence what the row shows.
	Why string `yaml:"why"`
	// Bug, in a track record, is the ID of the bug the row runs, at a
	// version that has it (expect: invalid) or that fixed it (valid).
	Bug string `yaml:"bug"`
	// Measured says what the row's runs found when last run on seeds it
	// did not pick, for the track record's table: "invalid 5 of 5, seeds
	// 101-105, first after a median 25.5 s (2026-11-28)".
	Measured string `yaml:"measured"`

	Settings `yaml:",inline"`

	line      int      // where the row begins in its file
	scheduled []string // the faults of its schedule, once read
}

// lineOf finds "line N" in a YAML error.
var lineOf = regexp.MustCompile(`line (\d+)`)

// Load reads and validates a suite file; every target it names must be
// one of known (the repository's targets) or a folder with a manifest.
// Its errors name the file and the line.
func Load(path string, known []targets.Manifest) (*Suite, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := &Suite{path: path}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(s); err != nil && !errors.Is(err, io.EOF) {
		msg := strings.TrimPrefix(strings.ReplaceAll(err.Error(), "\n ", ""), "yaml: ")
		msg = strings.TrimPrefix(msg, "unmarshal errors: ")
		if m := lineOf.FindStringSubmatch(msg); m != nil {
			return nil, fmt.Errorf("%s:%s: %s", path, m[1], strings.TrimSpace(strings.Replace(msg, m[0]+":", "", 1)))
		}
		return nil, fmt.Errorf("%s: %s", path, msg)
	}
	if err := s.locateRows(b); err != nil {
		return nil, err
	}
	if len(s.Rows) == 0 {
		return nil, fmt.Errorf("%s: no rows", path)
	}
	switch s.Spread {
	case "":
		s.Spread = SpreadRuns
	case SpreadRuns, SpreadContainers:
	default:
		return nil, fmt.Errorf("%s: spread must be %s or %s, not %q", path, SpreadRuns, SpreadContainers, s.Spread)
	}
	byName := make(map[string]targets.Manifest, len(known))
	for _, m := range known {
		byName[m.Name] = m
	}
	s.systems = map[string]string{}
	for i := range s.Rows {
		r := &s.Rows[i]
		err := s.readSchedule(r)
		var ms []targets.Manifest
		if err == nil {
			ms, err = s.manifests(*r, byName)
		}
		if err == nil {
			err = s.validate(*r, ms)
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: row %d: %v", path, r.line, i+1, err)
		}
		for j, t := range s.targets(*r) {
			s.systems[t.name] = ms[j].System()
		}
	}
	if err := s.validateBugs(); err != nil {
		return nil, err
	}
	return s, nil
}

// locateRows notes the line each row begins on, for the errors that
// name a row.
func (s *Suite) locateRows(b []byte) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil || len(doc.Content) == 0 {
		return err
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "rows" {
			continue
		}
		for j, row := range root.Content[i+1].Content {
			if j < len(s.Rows) {
				s.Rows[j].line = row.Line
			}
		}
	}
	return nil
}

// readSchedule reads the explicit schedule row r names, if any, for the
// faults it strikes.
func (s *Suite) readSchedule(r *Row) error {
	if r.Schedule == "" {
		return nil
	}
	if len(r.Nemesis)+len(r.Nemeses) > 0 {
		return errors.New("give nemesis, nemeses or schedule, not two")
	}
	e, err := nemesis.ReadExplicit(s.schedulePath(*r))
	if err != nil {
		return fmt.Errorf("schedule: %v", err)
	}
	for _, n := range e.Names() {
		if !slices.Contains(r.scheduled, n) {
			r.scheduled = append(r.scheduled, n)
		}
	}
	if len(r.scheduled) == 0 {
		return fmt.Errorf("schedule %s: no fault", r.Schedule)
	}
	return nil
}

// schedulePath is row r's schedule file, relative to the suite file's
// folder unless absolute.
func (s *Suite) schedulePath(r Row) string {
	if r.Schedule == "" || filepath.IsAbs(r.Schedule) {
		return r.Schedule
	}
	return filepath.Join(filepath.Dir(s.path), r.Schedule)
}

// target is one of a row's targets: a name of the repository's targets,
// or a folder anywhere (dir).
type target struct{ name, dir string }

// targets are the targets a row names, in order: its target, its targets,
// then its target_dir, relative to the suite file's folder.
func (s *Suite) targets(r Row) []target {
	var out []target
	for _, n := range slices.Concat([]string{r.Target}, r.Targets) {
		if n != "" {
			out = append(out, target{name: n})
		}
	}
	if r.TargetDir != "" {
		dir := r.TargetDir
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(filepath.Dir(s.path), dir)
		}
		out = append(out, target{name: filepath.Base(dir), dir: dir})
	}
	return out
}

// manifests are the manifests of a row's targets, from the repository's
// (known) or from their folders.
func (s *Suite) manifests(r Row, known map[string]targets.Manifest) ([]targets.Manifest, error) {
	var out []targets.Manifest
	for _, t := range s.targets(r) {
		if t.dir != "" {
			m, err := targets.Load(t.dir)
			if err != nil {
				return nil, fmt.Errorf("target_dir: %v", err)
			}
			out = append(out, m)
			continue
		}
		m, ok := known[t.name]
		if !ok {
			return nil, fmt.Errorf("unknown target %q", t.name)
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, errors.New("no target: give target, targets or target_dir")
	}
	return out, nil
}

// validate checks row r, whose targets' manifests are ms.
func (s *Suite) validate(r Row, ms []targets.Manifest) error {
	if r.Family != "" && !slices.Contains(Families, r.Family) {
		return fmt.Errorf("family %q is not one of %s", r.Family, strings.Join(Families, ", "))
	}
	if r.Family == "" && len(r.Nemesis)+len(r.Nemeses)+len(r.scheduled) == 0 {
		return errors.New("no faults: give family, nemesis, nemeses or schedule")
	}
	if len(r.Nemesis) > 0 && len(r.Nemeses) > 0 {
		return errors.New("give nemesis (one list) or nemeses (several), not both")
	}
	for _, m := range ms {
		if r.Family != "" && !m.Faces(r.Family) {
			return fmt.Errorf("no fault of the %s family reaches target %s (no services, or clock: none)", r.Family, m.Name)
		}
	}
	for _, list := range r.nemesisLists() {
		if _, err := nemesis.Expand(list); err != nil {
			return err
		}
		for _, n := range list {
			if r.Family != "" && familyOf(n) != r.Family {
				return fmt.Errorf("nemesis %q is not of the %s family", n, r.Family)
			}
		}
	}
	if r.Promise != "" {
		if _, err := contract.ParsePromise(r.Promise); err != nil {
			return err
		}
	}
	names := checkerNames()
	for _, c := range slices.Concat(r.By, r.May) {
		if !slices.Contains(names, c) {
			return fmt.Errorf("unknown checker %q (the checkers: %s)", c, strings.Join(names, ", "))
		}
	}
	if _, err := r.bounds(); err != nil {
		return err
	}
	if r.Faults < 0 || s.Defaults.Faults < 0 {
		return errors.New("faults must not be negative")
	}
	if r.Runs < 0 || s.Defaults.Runs < 0 || (r.Runs > 0 && len(r.Seeds) > 0) {
		return errors.New("give seeds, or runs (at least 1) from seed, not both")
	}
	switch {
	case r.Expect == "valid" && len(r.By) > 0:
		return errors.New("a valid row names no checkers that must find a violation (by); may names those a documented risk lets find one")
	case r.Expect == "invalid" && len(r.By) == 0:
		return errors.New("an invalid row names the checkers that find it (by)")
	case r.ByAny && (r.Expect != "invalid" || len(r.By) < 2):
		return errors.New("by_any is for an invalid row with two checkers or more in by")
	case r.Found < 0:
		return errors.New("found must not be negative")
	case r.Found > 0 && r.Expect != "invalid":
		return errors.New("found is for an invalid row: how many of its runs must find the violation")
	case r.Found > 0 && r.Runs == 0 && len(r.Seeds) == 0:
		return errors.New("found counts the row's own runs: give it runs or seeds")
	case r.Expect != "valid" && r.Expect != "invalid":
		return fmt.Errorf("expect %q: want valid or invalid", r.Expect)
	}
	return nil
}

// checkerNames are the checkers a row may name.
func checkerNames() []string {
	var names []string
	for _, c := range checkers.All(checkers.Options{}) {
		names = append(names, c.Name)
	}
	return names
}

// familyOf is the family an item of a --nemesis list belongs to: a
// fault's, or the family the item names itself (or none).
func familyOf(item string) string {
	if f, ok := nemesis.Lookup(item); ok {
		return f.Family
	}
	return item
}

// nemesisLists are the --nemesis values of the row's runs.
func (r Row) nemesisLists() [][]string {
	switch {
	case len(r.Nemeses) > 0:
		out := make([][]string, len(r.Nemeses))
		for i, n := range r.Nemeses {
			out[i] = strings.Split(n, ",")
		}
		return out
	case len(r.Nemesis) > 0:
		return [][]string{r.Nemesis}
	case len(r.scheduled) > 0:
		return [][]string{r.scheduled}
	}
	return [][]string{{r.Family}}
}

// Settings are the row's run settings over the suite's defaults.
func (s *Suite) Settings(r Row) Settings {
	o, d := r.Settings, s.Defaults
	return Settings{
		Nodes:           cmp.Or(o.Nodes, d.Nodes),
		TimeLimit:       cmp.Or(o.TimeLimit, d.TimeLimit),
		NemesisInterval: cmp.Or(o.NemesisInterval, d.NemesisInterval),
		Faults:          cmp.Or(o.Faults, d.Faults),
		QuietPeriod:     cmp.Or(o.QuietPeriod, d.QuietPeriod),
		RecoveryTimeout: cmp.Or(o.RecoveryTimeout, d.RecoveryTimeout),
		Resource:        cmp.Or(o.Resource, d.Resource),
		ReadShare:       cmp.Or(o.ReadShare, d.ReadShare),
		Seed:            cmp.Or(o.Seed, d.Seed),
		Runs:            cmp.Or(o.Runs, d.Runs),
	}
}

// seeds are the row's seeds under settings st.
func (r Row) seeds(st Settings) []uint64 {
	if len(r.Seeds) > 0 {
		return r.Seeds
	}
	out := make([]uint64, max(st.Runs, 1))
	for i := range out {
		out[i] = st.Seed + uint64(i)
	}
	return out
}

// Label names the row's line of the table: the target, and what the row
// changes about how it is run or judged.
func (r Row) Label() string {
	return label(r.Target, r)
}

func label(target string, r Row) string {
	l := target
	if r.Resource != "" {
		l += ", resource " + r.Resource
	}
	if r.Promise != "" {
		l += ", judged as " + r.Promise
	}
	return l
}

// byWords are the checkers of By, joined as the row needs them: all, or
// any one.
func (r Row) byWords() string {
	if r.ByAny {
		return strings.Join(r.By, " or ")
	}
	return strings.Join(r.By, ", ")
}

// Expected says what the row must find, in words.
func (r Row) Expected() string {
	if r.Expect == "valid" {
		if len(r.May) > 0 {
			return "valid, or invalid by only " + strings.Join(r.May, ", ")
		}
		return "valid"
	}
	by := "invalid by " + r.byWords()
	if r.Found > 0 {
		by += fmt.Sprintf(" in %d+ runs", r.Found)
	}
	return by
}
