package harness

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/nemesis"
	"github.com/splitbrain/splitbrain/results"
	"github.com/splitbrain/splitbrain/targets"
)

// prepare checks everything the user gave before anything is started, and
// plans the run: its target, promise, faults and schedule.
func prepare(cfg Config) (*run, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, err := cfg.Manifest()
	if err != nil {
		return nil, badInput("%v", err)
	}
	promise, err := contract.ParsePromise(cmp.Or(cfg.Promise, m.Promise))
	if err != nil {
		return nil, badInput("--promise: %v", err)
	}
	if err := m.Fits(cfg.Nodes); err != nil {
		return nil, badInput("--nodes: %v", err)
	}
	// A target whose cluster takes longer to start (every node bootstraps
	// a database) says so: a run, a suite's row or conform waits that long.
	cfg.StartTimeout = max(cfg.StartTimeout, m.StartTimeout)
	explicit, err := readSchedule(&cfg)
	if err != nil {
		return nil, err
	}
	p, err := planFaults(cfg, m)
	if err != nil {
		return nil, err
	}
	schedule := cfg.schedule(p.names, paceOf(m, promise))
	if explicit != nil {
		schedule = nemesis.OfExplicit(*explicit)
	}
	if cfg.ResultsDir, err = filepath.Abs(cfg.ResultsDir); err != nil {
		return nil, badInput("--results: %v", err)
	}
	if cfg.Engines != "" {
		if cfg.Engines, err = filepath.Abs(cfg.Engines); err != nil {
			return nil, badInput("--engines: %v", err)
		}
	}
	cfg.Target = m.Name
	r := &run{
		cfg: cfg, manifest: m, promise: promise, faults: p.faults, schedule: schedule, secret: rand.Text(),
		info: results.Info{
			Format:   results.Format,
			Schedule: schedule,
			Notes:    p.notes,
			ID:       newRunID(m.Name),
			Command:  cfg.Command(),
			Target:   m.Name,
			Promise:  promise.String(),
			Config:   cfg.Settings,
			Seed:     cfg.Seed,
			Versions: results.Versions{
				Splitbrain: version(),
				Go:         runtime.Version(),
			},
		},
	}
	if err := r.loadEngines(); err != nil {
		return nil, err
	}
	return r, nil
}

// Manifest reads the target c names: the one in TargetDir, or the one
// named Target under TargetsRoot.
func (c Config) Manifest() (targets.Manifest, error) {
	if c.TargetDir != "" {
		return targets.Load(c.TargetDir)
	}
	return targets.Find(c.TargetsRoot, c.Target)
}

// readSchedule reads the explicit schedule cfg names, if it names one, and
// makes its faults the run's; nil when cfg names none.
func readSchedule(cfg *Config) (*nemesis.Explicit, error) {
	if cfg.Schedule == "" {
		return nil, nil
	}
	var err error
	if cfg.Schedule, err = filepath.Abs(cfg.Schedule); err != nil {
		return nil, badInput("--schedule: %v", err)
	}
	e, err := nemesis.ReadExplicit(cfg.Schedule)
	if err != nil {
		return nil, badInput("--schedule: %v", err)
	}
	for i, f := range e.Faults {
		if dur := time.Duration(f.At * float64(time.Second)); dur >= cfg.TimeLimit {
			return nil, badInput("--schedule: %s: faults[%d].at_s: %g s is past --time-limit %s", cfg.Schedule, i, f.At, cfg.TimeLimit)
		}
	}
	cfg.NemesisInterval, cfg.Nemesis = 0, distinct(e.Names())
	if len(cfg.Nemesis) == 0 {
		cfg.Nemesis = []string{"none"}
	}
	return &e, nil
}

// faultPlan is what the run's --nemesis comes to on its target: each
// fault once, the names the schedule draws from (a group per family,
// a fault once per unit of its weight), and notes on faults that reach
// nothing there.
type faultPlan struct {
	faults []nemesis.Fault
	names  [][]string
	notes  []string
}

// planFaults expands cfg's --nemesis for target m, refusing a fault the
// target has nothing to strike with.
func planFaults(cfg Config, m targets.Manifest) (faultPlan, error) {
	skewable := len(skewableServices(m, cfg.Nodes)) > 0
	groups, err := nemesis.ExpandFor(cfg.Nemesis, &nemesis.Shape{SkewableServices: skewable, Services: serviceClusters(m, cfg.Nodes)})
	if err != nil {
		return faultPlan{}, badInput("%v", err)
	}
	p := faultPlan{names: make([][]string, len(groups))}
	var blind []string      // clock faults on nodes that read no clock
	var unfaithful []string // clock rates a family drew on nodes that wait on deadlines
	for i, g := range groups {
		for _, f := range g {
			if f.Rate && !f.OnServices && m.Clock == targets.ClockProcess && m.Waits == targets.WaitsAbsolute {
				if slices.Contains(cfg.Nemesis, f.Name) {
					return faultPlan{}, badInput("--nemesis %s: target %s's nodes wait until absolute deadlines (waits: %s in its %s), which a clock rate does not move: its waits would last the time gained longer, or end at once, as no real clock makes them",
						f.Name, m.Name, targets.WaitsAbsolute, targets.ManifestFile)
				}
				if !slices.Contains(unfaithful, f.Name) {
					unfaithful = append(unfaithful, f.Name)
				}
				continue
			}
			if f.OnServices && len(m.Services) == 0 {
				return faultPlan{}, badInput("--nemesis %s: target %s has no service containers (services in its %s)", f.Name, m.Name, targets.ManifestFile)
			}
			if f.Kind == nemesis.Clock && !f.OnServices && m.Clock == targets.ClockNone {
				blind = append(blind, f.Name)
			}
			if f.Kind == nemesis.PauseProcess && !declares(m, f.OnServices, m.Processes, func(s targets.Service) []string { return s.Processes }) {
				where := "processes in its " + targets.ManifestFile
				if f.OnServices {
					where = "processes under a service in its " + targets.ManifestFile
				}
				return faultPlan{}, badInput("--nemesis %s: target %s names no process a fault may stop (%s)", f.Name, m.Name, where)
			}
			if f.Kind.Disk() && !declares(m, f.OnServices, m.Data, func(s targets.Service) []string { return s.Data }) {
				where := "data in its " + targets.ManifestFile
				if f.OnServices {
					where = "data under a service in its " + targets.ManifestFile
				}
				return faultPlan{}, badInput("--nemesis %s: target %s declares no data directory for a disk fault to reach (%s)", f.Name, m.Name, where)
			}
			if f.Process != "" && !slices.Contains(m.Processes, f.Process) {
				return faultPlan{}, badInput("--nemesis %s: target %s names no %s process (processes in its %s)", f.Name, m.Name, f.Process, targets.ManifestFile)
			}
			if f.Kind == nemesis.Clock && f.OnServices && !skewable {
				return faultPlan{}, badInput("--nemesis %s: no service of target %s has clock: %s or %s in its %s", f.Name, m.Name, targets.ClockFaketime, targets.ClockProcess, targets.ManifestFile)
			}
			// A family names a fault once per unit of its weight: the
			// plan draws from the names, the nemesis needs each fault once.
			if !slices.ContainsFunc(p.faults, func(g nemesis.Fault) bool { return g.Name == f.Name }) {
				p.faults = append(p.faults, f)
			}
			p.names[i] = append(p.names[i], f.Name)
		}
	}
	if len(unfaithful) > 0 {
		p.notes = append(p.notes, fmt.Sprintf("%s left out for target %s: its nodes wait until absolute deadlines (waits: %s in its %s), which a clock rate does not move",
			strings.Join(unfaithful, ", "), m.Name, targets.WaitsAbsolute, targets.ManifestFile))
	}
	if len(blind) > 0 {
		p.notes = append(p.notes, fmt.Sprintf("%s reach nothing in target %s: its nodes read no clock that can be skewed (clock: %s in its %s), so they prove nothing here",
			strings.Join(blind, ", "), m.Name, targets.ClockNone, targets.ManifestFile))
	}
	return p, nil
}

// distinct is names without repeats, in their first order.
func distinct(names []string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// Paced faults: a single leader seen for settle makes the cluster ready,
// and a fault the cluster reacted to is kept for linger beyond any overlap
// the promise bounds, long enough for a new leader to write and for an
// overlap to outlast the bound; a pause of nodes until a new leader
// writes, for linger at most (see nemesis.Pace's Thaw).
const (
	settle = time.Second
	linger = time.Second
)

// paceOf paces the faults on target m, judged by promise p: each healed
// once the target reacted, or after the reaction time its manifest
// declares, and the next struck once the cluster settled, or after that
// time again if it never does.
func paceOf(m targets.Manifest, p contract.Promise) nemesis.Pace {
	return nemesis.Pace{Settle: settle, Wait: m.Reaction + settle, React: m.Reaction, Hold: p.Bound + linger, Thaw: linger}
}

// newRunID names a run of target: when it began, the target, and random
// hex that keeps runs begun in the same second apart.
func newRunID(target string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405") + "-" + target + "-" + hex.EncodeToString(b[:])
}

// version is the commit splitbrain was built from, for run.json.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
		return bi.Main.Version
	}
	return "unknown"
}

// declares says whether m's nodes declare some of what (nodes, as
// processes or data), or, on services, whether some service's members
// do (of).
func declares(m targets.Manifest, services bool, nodes []string, of func(targets.Service) []string) bool {
	if !services {
		return len(nodes) > 0
	}
	return slices.ContainsFunc(m.Services, func(s targets.Service) bool { return len(of(s)) > 0 })
}
