package harness

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/splitbrain/splitbrain/history"
	"github.com/splitbrain/splitbrain/nemesis"
	"github.com/splitbrain/splitbrain/results"
	"github.com/splitbrain/splitbrain/workloads"
)

// quiet lets the workload run on after the final heal for the quiet
// period, and on while the history cannot yet tell whether the cluster
// recovered (settling), up to the recovery timeout.
func (r *run) quiet(ctx context.Context, w *workload) {
	s := newSettling(time.Now(), r.cfg.QuietPeriod, r.cfg.RecoveryTimeout+2*r.cfg.ObserveInterval)
	for !s.done(time.Now(), w.obs.Leaders(), w.writer.NewestToken()) {
		select {
		case <-ctx.Done():
			return
		case <-w.guard.Broken():
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
	w := r.newWorkload(rec, time.Now())
	stopGuard := r.guardWorkload(ctx, w)
	defer stopGuard()
	w.begin(ctx, r.cfg)
	r.awaitEnd(ctx, w)
	r.windDown(ctx, w)
	r.noteDown(ctx)
	r.noteWorkload(w)
	if err := rec.Close(); err != nil {
		w.guard.fail("the history could not be written (%v)", err)
	}
	stopGuard()
	return cmp.Or(w.guard.err(), ctx.Err())
}

// workload is a run's drive under way: the observer and the writer on the
// cluster, the nemesis breaking it, the guard watching what breaks the run
// under it, and the live progress line and footprint.
type workload struct {
	start  time.Time
	rec    *history.Recorder
	obs    *workloads.Observer
	writer *workloads.Writer
	nem    *nemesis.Nemesis
	guard  *guard

	workCtx               context.Context // the observer's and the writer's
	stopWork, stopNemesis context.CancelFunc
	running               sync.WaitGroup // the observer and the writer
	nemDone               chan struct{}  // closed once every fault is healed
	progress              *progress
	foot                  *footprint
}

// recentAnswer is how long a node's last answer counts as what it believes
// now, for the nemesis to aim and pace by: a node that is down or frozen
// fails every poll and drops out within it, while a poll timed out now and
// then does not unsettle a steady cluster. On a loaded machine (a make
// test's clusters, built for the race detector, on two cores) a steady
// cluster's nodes went 200-800 ms between answers 1,007 times in 310 s,
// and a Patroni's and a Redis Cluster's agents missed the observer's
// 200 ms every few seconds each: with the last poll's outcome and four
// intervals (200 ms) as the rule, those runs were never steady for the
// 6-16 s their paces asked.
const recentAnswer = time.Second

// newWorkload makes the run's observer, writer and nemesis, recording into
// rec from start, and shows the nemesis the cluster as the observer and
// the writer see it, to aim its faults by.
func (r *run) newWorkload(rec *history.Recorder, start time.Time) *workload {
	obs := workloads.NewObserver(r.cluster, rec, r.cfg.ObserveInterval)
	writer := workloads.NewWriter(workloads.Config{
		Rate: r.cfg.Rate, Concurrency: r.cfg.Concurrency, Keys: r.cfg.Keys,
		ReadShare: r.cfg.ReadShare, Timeout: r.cfg.OpTimeout, Seed: r.cfg.Seed,
		OwnData: r.manifest.OwnData,
	}, r.cluster, rec)
	fresh := max(4*r.cfg.ObserveInterval, recentAnswer)
	r.cluster.leader = func() string {
		n, _ := obs.Leader(fresh)
		return n
	}
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
	return &workload{start: start, rec: rec, obs: obs, writer: writer, nem: nem}
}

// guardWorkload starts the guard over the run's containers and tells it
// what breaks the run from within: a fault that could not be applied or
// healed, a schedule or a history that could not be written. What the
// nemesis does is written down as it does it, so that even a run killed
// half-way can be replayed. stop ends the guard's watch.
func (r *run) guardWorkload(ctx context.Context, w *workload) (stop func()) {
	g, stop := r.guard(ctx, w.start)
	w.guard = g
	w.nem.Failed = func(err error) { g.failed("%v", err) }
	schedule := filepath.Join(r.dir, results.ScheduleFile)
	taken := func(e nemesis.Explicit) {
		if err := results.WriteJSON(schedule, e); err != nil {
			g.fail("the schedule could not be written (%v)", err)
		}
	}
	taken(nemesis.Explicit{Faults: []nemesis.Timed{}})
	w.nem.Taken = taken
	go func() {
		select {
		case <-w.rec.Failed():
			g.fail("the history could not be written (%v)", w.rec.Err())
		case <-g.Broken():
		}
	}()
	return stop
}

// begin sets the observer, the writer and the nemesis going, with the
// live progress line and the sampling of the controller's footprint.
func (w *workload) begin(ctx context.Context, cfg Config) {
	w.workCtx, w.stopWork = context.WithCancel(ctx)
	nemCtx, stopNemesis := context.WithCancel(ctx)
	w.stopNemesis = stopNemesis
	for _, f := range []func(context.Context){w.obs.Run, w.writer.Run} {
		w.running.Go(func() { f(w.workCtx) })
	}
	w.nemDone = make(chan struct{})
	go func() { defer close(w.nemDone); w.nem.Run(nemCtx) }()
	w.progress = startProgress(cfg, w.start, w.writer, w.obs, w.nem)
	w.foot = startFootprint(w.start, footprintEvery, w.rec)
}

// awaitEnd waits for what ends the faults: the time limit, Ctrl-C, an
// environment that broke, or, when the run is to stop there, a violation.
func (r *run) awaitEnd(ctx context.Context, w *workload) {
	var violation <-chan results.StoppedEarly
	if r.cfg.StopOnViolation {
		violation = r.watch(w.workCtx, w.start)
	}
	select {
	case <-ctx.Done():
	case <-w.nem.Spent(): // --faults: every fault healed, the cluster steady after the last
	case <-time.After(r.cfg.limit(r.schedule)):
	case <-w.guard.Broken():
	case v := <-violation:
		// Ended as the time limit would end it: the fault in effect is
		// healed and the quiet period shows whether the cluster recovers,
		// so that the verdict is the one the whole run would reach.
		r.info.StoppedEarly = &v
		r.info.Notes = append(r.info.Notes, fmt.Sprintf("stopped early: %s found a violation %.1f s into the run, which ended there instead of at its time limit of %s; the verdict judges the whole history, healed and quiet",
			strings.Join(v.Checkers, ", "), v.At, r.cfg.TimeLimit))
	}
	r.faultsOver(w.guard, w.nem, time.Since(w.start))
}

// windDown heals every fault, lets the workload run on through the quiet
// period unless the environment broke, stops the workload and reads the
// target's own data back on every node.
func (r *run) windDown(ctx context.Context, w *workload) {
	w.stopNemesis()
	<-w.nemDone // every fault healed
	if w.guard.err() == nil {
		r.quiet(ctx, w)
	}
	w.stopWork()
	w.running.Wait()
	if w.guard.err() == nil && ctx.Err() == nil {
		w.writer.ReadBack()
	}
	w.progress.stop()
	r.info.Controller = w.foot.stop()
}

// noteWorkload notes what the workload did, and how fast, in the run's
// timings.
func (r *run) noteWorkload(w *workload) {
	elapsed := time.Since(w.start).Seconds()
	s := &w.writer.Stats
	t := &r.info.Timings
	t.Workload = elapsed
	t.RequestedRate = r.cfg.Rate
	t.AchievedRate = float64(s.Issued.Load()) / elapsed
	t.CompletedRate = float64(s.OK.Load()+s.Fail.Load()) / elapsed
	t.OpsOK, t.OpsFailed, t.OpsUnknown = s.OK.Load(), s.Fail.Load(), s.Info.Load()
	t.OpsNotIssued = s.Asked.Load() - s.Issued.Load()
	t.Events = w.rec.Count()
	t.ObservedLeader = w.obs.Answered()
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
	// Each engine's events, until ctx ends.
	var following sync.WaitGroup
	for name, d := range r.dockers() {
		msgs, errs := d.Events(ctx, r.info.ID)
		following.Go(func() { g.follow(ctx, name, msgs, errs) })
		if r.engines != nil {
			following.Go(func() { g.ping(ctx, name, d) })
		}
	}
	done := make(chan struct{})
	go func() { following.Wait(); close(done) }()
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
		id, d := r.cluster.ids[name], r.cluster.on(name)
		exited, code := d.Exited(ctx, id)
		if !exited {
			continue
		}
		note := fmt.Sprintf("%s was down when the run ended: it exited on its own, with code %d", r.cluster.kind(name), code)
		if logs, err := d.Logs(ctx, id); err == nil && len(logs) > 0 {
			note += "; its log ends: " + strings.Join(strings.Split(tail(logs, 3), "\n"), " | ")
		}
		r.info.Notes = append(r.info.Notes, note)
	}
}
