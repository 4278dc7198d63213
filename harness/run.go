package harness

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/history"
	"github.com/splitbrain/splitbrain/internal/parallel"
	"github.com/splitbrain/splitbrain/nemesis"
	"github.com/splitbrain/splitbrain/results"
	"github.com/splitbrain/splitbrain/targets"
	"github.com/splitbrain/splitbrain/workloads"
)

// Ports inside the containers.
const resourcePort = 7000

// resourceMain is the resource server's main package, relative to the
// repository root.
const resourceMain = "./workloads/resource/cmd/resource"

// Outcome is what a finished run leaves: its folder, run.json and verdict.
type Outcome struct {
	Dir    string
	Info   results.Info
	Report checkers.Report
}

// run carries one run's state from phase to phase.
type run struct {
	cfg      Config
	manifest targets.Manifest
	promise  contract.Promise
	faults   []nemesis.Fault
	schedule nemesis.Schedule
	docker   *Docker
	dir      string
	info     results.Info
	cluster  *cluster
	origin   time.Time // the history's start: run time 0
	// secret is the run's SPLITBRAIN_SECRET, for its nodes and members.
	secret string
	// faketime is the host folder of libfaketime's companions, which
	// containers whose clocks it skews mount; "" for a target with none.
	faketime string
}

// Run performs one test: build, start, drive and break the cluster, tear it
// down, check the history. Whatever happens, every container and network of
// the run is removed before Run returns. A run folder is left behind from
// the moment the cluster starts, even when the run fails.
func Run(ctx context.Context, cfg Config) (*Outcome, error) {
	r, err := prepare(cfg)
	if err != nil {
		return nil, err
	}
	if r.docker, err = ConnectDocker(ctx); err != nil {
		return nil, err
	}
	defer r.docker.Close()
	r.docker.Progress = cfg.Progress

	began := time.Now()
	store := results.Store{Root: r.cfg.ResultsDir}
	if r.dir, err = store.Create(r.info.ID); err != nil {
		return nil, err
	}
	r.info.Started = began.UTC()
	r.info.Versions.Engine = r.docker.EngineVersion(ctx)
	// run.json goes first, so that the history of a run whose controller
	// is killed can still be analyzed: it holds the promise to judge by.
	if err := results.WriteJSON(filepath.Join(r.dir, results.RunFile), r.info); err != nil {
		return nil, err
	}

	runErr := r.execute(ctx)
	if errors.Is(runErr, context.Canceled) {
		r.info.Interrupted, runErr = true, nil
	}
	// A run whose environment broke during its workload is judged all
	// the same: what it recorded until then may already prove a violation.
	broken := IsEnvironment(runErr)
	if runErr != nil {
		r.info.Error = runErr.Error()
	}
	var (
		report checkers.Report
		events []history.Event
	)
	if runErr == nil || broken {
		checkStart := time.Now()
		report, events, err = results.Analyze(r.dir, r.promise, r.cfg.ObserveInterval, r.cfg.CheckOptions(), r.info.Error)
		r.info.Faults = checkers.Faults(events)
		r.info.Notes = append(r.info.Notes, lateFaults(r.info.Faults)...)
		r.info.Timings.Check = time.Since(checkStart).Seconds()
		switch {
		case err != nil && broken:
			// The disk that failed the run may fail its judgment too:
			// the failure stays the reason.
			runErr = errors.Join(runErr, fmt.Errorf("judging the history: %v", err))
			r.info.Error = runErr.Error()
		case err != nil:
			runErr = err
			r.info.Error = err.Error()
		case broken && report.Valid == checkers.Invalid:
			// The violations stand, and the verdict with them; run.json
			// and results.json say the failure beside them.
			runErr = nil
		}
	} else {
		// Not judged, but what was recorded is still drawn (none if the
		// history cannot be read).
		events, _ = history.ReadFile(filepath.Join(r.dir, results.HistoryFile), history.ReadEvents)
	}
	r.info.HarnessTiming = r.harnessTiming(events)
	r.info.Timings.Total = time.Since(began).Seconds()
	if err := results.WriteJSON(filepath.Join(r.dir, results.RunFile), r.info); err != nil && runErr == nil {
		runErr = err
	}
	// A failed run gets a report too: it says what failed, and the index
	// links to it.
	if err := results.WriteReport(r.dir, r.info, report, events); err != nil && runErr == nil {
		runErr = err
	}
	if err := store.SetLatest(r.info.ID); err != nil && runErr == nil {
		runErr = err
	}
	if err := results.WriteIndex(store); err != nil && runErr == nil {
		runErr = err
	}
	return &Outcome{Dir: r.dir, Info: r.info, Report: report}, runErr
}

// harnessTiming times the harness's own actions: those history h holds,
// and the containers' starts before it, which a run that never began its
// workload times before now.
func (r *run) harnessTiming(h []history.Event) checkers.HarnessTiming {
	t := checkers.HarnessTimingOf(h, r.cfg.ObserveInterval, r.cfg.Rate)
	if r.cluster != nil {
		zero := r.origin
		if zero.IsZero() {
			zero = time.Now()
		}
		t.Starts = r.cluster.startTiming(zero)
	}
	return t
}

// prepare checks everything the user gave before anything is started.
func prepare(cfg Config) (*run, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var (
		m   targets.Manifest
		err error
	)
	if cfg.TargetDir != "" {
		m, err = targets.Load(cfg.TargetDir)
	} else {
		m, err = targets.Find(cfg.TargetsRoot, cfg.Target)
	}
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
	var explicit *nemesis.Explicit
	if cfg.Schedule != "" {
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
		// The schedule's faults are the run's.
		explicit, cfg.NemesisInterval, cfg.Nemesis = &e, 0, distinct(e.Names())
		if len(cfg.Nemesis) == 0 {
			cfg.Nemesis = []string{"none"}
		}
	}
	groups, err := nemesis.ExpandFor(cfg.Nemesis, len(skewableServices(m, cfg.Nodes)) > 0)
	if err != nil {
		return nil, badInput("%v", err)
	}
	var (
		faults []nemesis.Fault
		names  = make([][]string, len(groups))
		blind  []string // clock faults on nodes that read no clock
		notes  []string
	)
	for i, g := range groups {
		for _, f := range g {
			if f.OnServices && len(m.Services) == 0 {
				return nil, badInput("--nemesis %s: target %s has no service containers (services in its %s)", f.Name, m.Name, targets.ManifestFile)
			}
			if f.Kind == nemesis.Clock && !f.OnServices && m.Clock == targets.ClockNone {
				blind = append(blind, f.Name)
			}
			if f.Kind == nemesis.Clock && f.OnServices && len(skewableServices(m, cfg.Nodes)) == 0 {
				return nil, badInput("--nemesis %s: no service of target %s has clock: %s or %s in its %s", f.Name, m.Name, targets.ClockFaketime, targets.ClockProcess, targets.ManifestFile)
			}
			// A family names a fault once per unit of its weight: the
			// plan draws from the names, the nemesis needs each fault once.
			if !slices.ContainsFunc(faults, func(g nemesis.Fault) bool { return g.Name == f.Name }) {
				faults = append(faults, f)
			}
			names[i] = append(names[i], f.Name)
		}
	}
	if len(blind) > 0 {
		notes = append(notes, fmt.Sprintf("%s reach nothing in target %s: its nodes read no clock that can be skewed (clock: %s in its %s), so they prove nothing here",
			strings.Join(blind, ", "), m.Name, targets.ClockNone, targets.ManifestFile))
	}
	schedule := cfg.schedule(names, paceOf(m, promise))
	if explicit != nil {
		schedule = nemesis.OfExplicit(*explicit)
	}
	if cfg.ResultsDir, err = filepath.Abs(cfg.ResultsDir); err != nil {
		return nil, badInput("--results: %v", err)
	}
	cfg.Target = m.Name
	return &run{
		cfg: cfg, manifest: m, promise: promise, faults: faults, schedule: schedule, secret: rand.Text(),
		info: results.Info{
			Format:   results.Format,
			Schedule: schedule,
			Notes:    notes,
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
	}, nil
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

// execute is the part of a run that holds containers; teardown always runs.
func (r *run) execute(ctx context.Context) (err error) {
	defer func() {
		// Teardown must not be cut short by the Ctrl-C that may have
		// brought us here.
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
		defer cancel()
		if terr := r.teardown(tctx); terr != nil {
			err = errors.Join(err, terr)
		}
	}()
	if err := r.buildImages(ctx); err != nil {
		return err
	}
	if err := r.startCluster(ctx); err != nil {
		return err
	}
	return r.drive(ctx)
}

// Images of a run: the target's nodes and services, the resource, and the
// packet-filter sidecar.
func (r *run) nodeImage() string { return "splitbrain/" + r.manifest.Name + ":latest" }

func (r *run) serviceImage(s targets.Service) string {
	return "splitbrain/" + r.manifest.Name + "/" + s.Name + ":latest"
}

const (
	resourceImage  = "splitbrain/resource:latest"
	netfilterImage = "splitbrain/netfilter:latest"
	netfilterMain  = "./nemesis/netfilter/cmd/netfilter"
	vdsoclockImage = "splitbrain/vdsoclock:latest"
	vdsoclockMain  = "./nemesis/vdsoclock/cmd/vdsoclock"
)

// partitions says whether the plan needs packet-filter sidecars.
func (r *run) partitions() bool {
	return slices.ContainsFunc(r.faults, func(f nemesis.Fault) bool { return f.Kind == nemesis.Partition })
}

func (r *run) buildImages(ctx context.Context) error {
	start := time.Now()
	d := r.docker
	image := func(tag, dir string, b targets.Build) func() error {
		return func() error {
			return d.buildOnce(ctx, tag, fmt.Sprintf("%s %+v", dir, b), func() error { return d.BuildTargetImage(ctx, tag, dir, b) })
		}
	}
	target := func(tag string, b targets.Build) func() error { return image(tag, r.manifest.Dir, b) }
	ours := func(tag, pkg string) func() error { return image(tag, r.cfg.RepoRoot, targets.Build{Go: pkg}) }
	builds := []func() error{target(r.nodeImage(), nodeBuild(r.manifest)), ours(resourceImage, resourceMain)}
	for _, s := range r.manifest.Services {
		builds = append(builds, target(r.serviceImage(s), serviceBuild(s)))
	}
	if r.partitions() {
		builds = append(builds, ours(netfilterImage, netfilterMain))
	}
	if r.clockSidecars(false) || r.clockSidecars(true) {
		builds = append(builds, ours(vdsoclockImage, vdsoclockMain))
	}
	if usesFaketime(r.manifest) {
		builds = append(builds, func() (err error) {
			r.faketime, err = d.faketimeDir(ctx)
			return err
		})
	}
	err := parallel.Each(builds, func(build func() error) error { return build() })
	r.info.Timings.ImageBuild = time.Since(start).Seconds()
	return err
}

// systemVersions notes the Debian packages the nodes and services run
// from, read from one container of each image, for run.json and the
// report: a real system's version is part of what a run tested.
func (r *run) systemVersions(ctx context.Context) error {
	containers := []string{r.cluster.nodes[0]}
	for _, s := range r.manifest.Services {
		containers = append(containers, s.MemberNames(r.cfg.Nodes)[0])
	}
	for _, name := range containers {
		v, err := r.docker.PackageVersions(ctx, r.cluster.ids[name])
		if err != nil {
			return fmt.Errorf("reading the package versions of %s: %v", name, err)
		}
		if len(v) > 0 && r.info.Versions.System == nil {
			r.info.Versions.System = map[string]string{}
		}
		maps.Copy(r.info.Versions.System, v)
	}
	return nil
}

// addressPlan gives every container of a run a fixed address in subnet:
// the resource .2, node ni .10+i, the service members of their own from
// .120; a member beside a node has the node's. Each container also lists
// them all in its /etc/hosts: on an internal network Docker's DNS takes
// 20 s to give up on the name of a container that is down (killed by a
// fault), and a real server that resolves names in its event loop (a
// Sentinel, a Redis replica) stalls that long. A deployed system's names
// outlive its hosts' crashes; here they do too.
func addressPlan(subnet netip.Prefix, nodes []string, members []targets.Member) (map[string]netip.Addr, error) {
	base := subnet.Masked().Addr().As4()
	if subnet.Bits() > 24 || len(nodes) > targets.MaxNodes || len(members) > 130 {
		return nil, fmt.Errorf("subnet %s is too small for %d nodes and %d service containers", subnet, len(nodes), len(members))
	}
	at := func(i int) netip.Addr {
		a := base
		a[3] += byte(i)
		return netip.AddrFrom4(a)
	}
	plan := map[string]netip.Addr{"resource": at(2)}
	for i, n := range nodes {
		plan[n] = at(11 + i)
	}
	apart := 0
	for _, m := range members {
		if m.Node != "" {
			plan[m.Name] = plan[m.Node]
			continue
		}
		plan[m.Name] = at(120 + apart)
		apart++
	}
	return plan, nil
}

// withLog explains a node that did not start: its exit code if its process
// ended (that is the cause, whatever err says), and the tail of its log.
func (r *run) withLog(ctx context.Context, node string, err error) error {
	ctx = context.WithoutCancel(ctx)
	id := r.cluster.ids[node]
	if id == "" {
		return err
	}
	if exited, code := r.docker.Exited(ctx, id); exited {
		err = fmt.Errorf("%s never became healthy: its process exited with code %d", r.cluster.kind(node), code)
	}
	logs, lerr := r.docker.Logs(ctx, id)
	if lerr != nil || len(logs) == 0 {
		return err
	}
	return fmt.Errorf("%v; last lines of %s's log:\n%s", err, node, tail(logs, 10))
}

// nodeEnv is the environment of the node contract (docs/contract.md, Environment)
// plus the target's own.
func (r *run) nodeEnv(node string) map[string]string {
	var peers []string
	for _, p := range r.cluster.nodes {
		if p != node {
			peers = append(peers, fmt.Sprintf("%s:%d", p, r.manifest.Port))
		}
	}
	env := map[string]string{
		contract.EnvNode:      node,
		contract.EnvPeers:     strings.Join(peers, ","),
		contract.EnvResource:  fmt.Sprintf("http://resource:%d", resourcePort),
		contract.EnvClockFile: clockMount + "/" + clockFile,
		contract.EnvAddr:      fmt.Sprintf(":%d", r.manifest.Port),
		contract.EnvSecret:    r.secret,
	}
	switch r.manifest.Clock {
	case targets.ClockFaketime:
		maps.Copy(env, faketimeEnv())
	case targets.ClockProcess:
		// Its processes' clocks are skewed already: an SDK clock that
		// read the file too would skew twice.
		delete(env, contract.EnvClockFile)
	}
	if len(r.manifest.Services) > 0 {
		var services []string
		for _, s := range r.manifest.Services {
			for _, m := range s.MemberNames(r.cfg.Nodes) {
				services = append(services, fmt.Sprintf("%s:%d", m, s.Port))
			}
		}
		env[contract.EnvServices] = strings.Join(services, ",")
	}
	for k, v := range r.manifest.Env {
		env[k] = v
	}
	return env
}

// quiet lets the workload run on after the final heal for the quiet
// period and, while no single leader is seen, on until the recovery
// timeout has passed since the heal or since a single leader was last
// seen, so that the history can prove a recovery, its absence, or a
// leader lost for good after it, instead of ending too soon to tell.
func (r *run) quiet(ctx context.Context, obs *workloads.Observer, broken <-chan struct{}) {
	healed := time.Now()
	lastSingle, lastAny := healed, healed
	covered := r.cfg.RecoveryTimeout + 2*r.cfg.ObserveInterval
	for {
		now := time.Now()
		// As the availability checker counts: a single leader by fresh
		// answers alone could be a second one whose answer is late.
		leading := obs.Leading()
		if leading == 1 {
			lastSingle = now
		}
		if leading > 0 {
			lastAny = now
		}
		// A stretch with no leader at all is judged as a leader lost for
		// good only once it outlasts the bound: one that began after two
		// leaders were last seen is waited out too, so that the history
		// decides it.
		noSingleForLong := now.Sub(lastSingle) > covered && (leading > 0 || now.Sub(lastAny) > covered)
		if (leading == 1 && now.Sub(healed) >= r.cfg.QuietPeriod) || noSingleForLong {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-broken:
			// What the history shows from here is the breakage, not the
			// target.
			return
		case <-time.After(r.cfg.ObserveInterval):
		}
	}
}

// drive runs the workload, the observer and the nemesis for the time limit,
// heals every fault, lets the workload run on for the quiet period, and
// stops. Ctrl-C ends it early; the history so far is kept.
func (r *run) drive(ctx context.Context) error {
	r.origin = time.Now()
	rec, err := history.NewRecorder(filepath.Join(r.dir, results.HistoryFile), r.origin)
	if err != nil {
		return err
	}
	defer rec.Close()
	start := time.Now()

	obs := workloads.NewObserver(r.cluster, rec, r.cfg.ObserveInterval)
	fresh := 4 * r.cfg.ObserveInterval
	r.cluster.leader = func() string {
		n, _ := obs.Leader(fresh)
		return n
	}
	writer := workloads.NewWriter(workloads.Config{
		Rate: r.cfg.Rate, Concurrency: r.cfg.Concurrency, Keys: r.cfg.Keys,
		ReadShare: r.cfg.ReadShare, Timeout: r.cfg.OpTimeout, Seed: r.cfg.Seed,
	}, r.cluster, rec)
	r.cluster.view = func() nemesis.View {
		v := nemesis.View{}
		wrote := writer.Wrote(fresh)
		for n, leads := range obs.Beliefs(fresh) {
			switch {
			case leads && wrote[n]:
				v[n] = nemesis.Writes
			case leads:
				v[n] = nemesis.Leads
			default:
				v[n] = nemesis.Follows
			}
		}
		return v
	}
	nem := nemesis.New(r.schedule, r.faults, r.cfg.Seed, r.cluster, rec)
	guard, stopGuard := r.guard(ctx, start)
	defer stopGuard()
	nem.Failed = func(err error) { guard.failed("%v", err) }
	// What the nemesis does is written down as it does it, so that even
	// a run killed half-way can be replayed.
	schedule := filepath.Join(r.dir, results.ScheduleFile)
	taken := func(e nemesis.Explicit) {
		if err := results.WriteJSON(schedule, e); err != nil {
			guard.fail("the schedule could not be written (%v)", err)
		}
	}
	taken(nemesis.Explicit{Faults: []nemesis.Timed{}})
	nem.Taken = taken
	go func() {
		select {
		case <-rec.Failed():
			guard.fail("the history could not be written (%v)", rec.Err())
		case <-guard.Broken():
		}
	}()

	workCtx, stopWork := context.WithCancel(ctx)
	nemCtx, stopNemesis := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, f := range []func(context.Context){obs.Run, writer.Run} {
		wg.Add(1)
		go func() { defer wg.Done(); f(workCtx) }()
	}
	nemDone := make(chan struct{})
	go func() { defer close(nemDone); nem.Run(nemCtx) }()
	progress := startProgress(r.cfg, start, writer, obs, nem)
	foot := startFootprint(start, footprintEvery, rec)

	var violation <-chan results.StoppedEarly
	if r.cfg.StopOnViolation {
		violation = r.watch(workCtx, start)
	}
	select {
	case <-ctx.Done():
	case <-nem.Spent(): // --faults: every fault healed, the cluster steady after the last
	case <-time.After(r.cfg.limit(r.schedule)):
	case <-guard.Broken():
	case v := <-violation:
		// Ended as the time limit would end it: the fault in effect is
		// healed and the quiet period shows whether the cluster recovers,
		// so that the verdict is the one the whole run would reach.
		r.info.StoppedEarly = &v
		r.info.Notes = append(r.info.Notes, fmt.Sprintf("stopped early: %s found a violation %.1f s into the run, which ended there instead of at its time limit of %s; the verdict judges the whole history, healed and quiet",
			strings.Join(v.Checkers, ", "), v.At, r.cfg.TimeLimit))
	}
	r.faultsOver(guard, nem, time.Since(start)) // --faults
	stopNemesis()
	<-nemDone // every fault healed
	if guard.err() == nil {
		r.quiet(ctx, obs, guard.Broken())
	}
	stopWork()
	wg.Wait()
	progress.stop()
	r.info.Controller = foot.stop()
	r.noteDown(ctx)

	elapsed := time.Since(start).Seconds()
	t := &r.info.Timings
	t.Workload = elapsed
	t.RequestedRate = r.cfg.Rate
	t.AchievedRate = float64(writer.Stats.Issued.Load()) / elapsed
	t.CompletedRate = float64(writer.Stats.OK.Load()+writer.Stats.Fail.Load()) / elapsed
	t.OpsOK, t.OpsFailed, t.OpsUnknown = writer.Stats.OK.Load(), writer.Stats.Fail.Load(), writer.Stats.Info.Load()
	t.OpsNotIssued = writer.Stats.Asked.Load() - writer.Stats.Issued.Load()
	t.Events = rec.Count()
	if err := rec.Close(); err != nil {
		guard.fail("the history could not be written (%v)", err)
	}
	stopGuard()
	return cmp.Or(guard.err(), ctx.Err())
}

// guard starts watching the run's containers for what breaks the run
// under it; stop ends the watch, before teardown removes them.
func (r *run) guard(ctx context.Context, start time.Time) (g *guard, stop func()) {
	g = newGuard(start)
	c := r.cluster
	for _, name := range append(slices.Clone(c.nodes), c.services...) {
		g.watch(c.ids[name], c.kind(name), false)
	}
	g.watch(c.ids["resource"], "the resource", true)
	for node, id := range c.sidecars {
		g.watch(id, node+"'s packet-filter sidecar", true)
	}
	// A clock sidecar dies with the PID namespace it joined, when its
	// node or member exits, which may be the target's doing: its death is
	// judged as theirs.
	for name, id := range c.clockSidecars {
		g.watch(id, name+"'s clock sidecar", false)
	}
	c.guard = g
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	msgs, errs := r.docker.Events(ctx, r.info.ID)
	done := make(chan struct{})
	go func() { defer close(done); g.follow(ctx, msgs, errs) }()
	var once sync.Once
	return g, func() {
		once.Do(func() {
			if g.onlySymptom() {
				time.Sleep(2 * grace) // for the Engine's account of the cause
			}
			cancel()
			<-done
		})
	}
}

// noteDown says which containers were down when the run ended, after
// every fault was healed and every killed container started again: they
// exited on their own (a server that crashed, an agent whose server did)
// and took the target's ability to recover with them, which the verdict
// alone would not tell.
func (r *run) noteDown(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	for _, name := range append(slices.Clone(r.cluster.nodes), r.cluster.services...) {
		id := r.cluster.ids[name]
		exited, code := r.docker.Exited(ctx, id)
		if !exited {
			continue
		}
		note := fmt.Sprintf("%s was down when the run ended: it exited on its own, with code %d", r.cluster.kind(name), code)
		if logs, err := r.docker.Logs(ctx, id); err == nil && len(logs) > 0 {
			note += "; its log ends: " + strings.Join(strings.Split(tail(logs, 3), "\n"), " | ")
		}
		r.info.Notes = append(r.info.Notes, note)
	}
}

// teardown saves every container's log, then removes everything labelled
// with the run's id, whether or not this process still knows about it.
func (r *run) teardown(ctx context.Context) error {
	start := time.Now()
	if r.cluster != nil && r.cluster.faketime != nil {
		r.cluster.faketime.close()
	}
	// An Engine that broke the run (restarting) may be back in seconds.
	if err := r.docker.WaitEngine(ctx); err != nil {
		return fmt.Errorf("teardown: %v (run `splitbrain clean` once it does)", err)
	}
	var errs []error
	if r.cluster != nil {
		containers := maps.Clone(r.cluster.ids)
		for node, id := range r.cluster.sidecars {
			containers[node+"-netfilter"] = id
		}
		for name, id := range r.cluster.clockSidecars {
			containers[name+"-clock"] = id
		}
		for name, id := range containers {
			if logs, err := r.docker.Logs(ctx, id); err == nil {
				errs = append(errs, os.WriteFile(filepath.Join(r.dir, results.LogsDir, name+".log"), logs, 0o644))
			}
		}
	}
	removed, err := r.docker.Remove(ctx, LabelRun+"="+r.info.ID)
	if err != nil {
		errs = append(errs, fmt.Errorf("teardown: %v (run `splitbrain clean`)", err))
	}
	if len(removed.Stuck) > 0 {
		// Every container is gone and the history whole: the verdict
		// stands, and the note says what stays.
		r.info.Notes = append(r.info.Notes, fmt.Sprintf("teardown: the Docker Engine kept an endpoint of a removed container, so it would not remove the run's network %s: nothing runs in it, and it stays until the Engine restarts", strings.Join(removed.Stuck, ", ")))
	}
	r.info.Timings.Teardown = time.Since(start).Seconds()
	return errors.Join(errs...)
}

func newRunID(target string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405") + "-" + target + "-" + hex.EncodeToString(b[:])
}

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
