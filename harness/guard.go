package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"
)

// EnvironmentError says that the run's environment broke under it: a
// container of the run that died or disappeared without a fault of ours,
// a fault that could not be applied or healed, a Docker Engine that
// stopped answering, a history that could not be written. The faults the
// run claims did not happen as planned, so a valid verdict would not mean
// what it says: the run is a harness failure, unless its history already
// proves it invalid.
type EnvironmentError struct{ Reason string }

func (e *EnvironmentError) Error() string { return "harness failure: " + e.Reason }

// IsEnvironment says whether err is an *EnvironmentError.
func IsEnvironment(err error) bool {
	var e *EnvironmentError
	return errors.As(err, &e)
}

// guard watches a run's environment while the workload runs and remembers
// the first thing that broke it. The nemesis tells it which containers it
// stops itself; the Engine's event stream tells it about every other.
type guard struct {
	start time.Time // the workload's, for "12.3 s into the run"
	broke chan struct{}

	mu       sync.Mutex
	reason   string
	rank     rank
	names    map[string]string // container id -> what it is, in words
	owned    map[string]bool   // ids of ours: the resource and the sidecars
	stopping map[string]bool   // ids we are stopping ourselves, until they start again
	signaled map[string]string // ids sent a signal by someone else, and which
	oom      map[string]bool   // ids the kernel's out-of-memory killer hit
}

// grace is how long a death is held before it is judged, and a symptom
// before the watch ends: a container removed by force dies first, and its
// removal, which says more, follows within milliseconds on an idle
// machine, and took more than a second at a load of 9 (five clusters'
// tests at once on two cores); a fault that failed on a container
// someone removed fails before the Engine tells of the removal.
const grace = 3 * time.Second

func newGuard(start time.Time) *guard {
	return &guard{
		start: start, broke: make(chan struct{}),
		names: map[string]string{}, owned: map[string]bool{}, stopping: map[string]bool{},
		signaled: map[string]string{}, oom: map[string]bool{},
	}
}

// watch names a container of the run. owned says it is one of the
// harness's own (the resource, a sidecar), whose exit is never the
// target's doing.
func (g *guard) watch(id, name string, owned bool) {
	if g == nil || id == "" {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.names[id], g.owned[id] = name, owned
}

// expectStop says that we are about to stop container id (a kill, a
// sidecar's restart): its death is ours until it starts again.
func (g *guard) expectStop(id string) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopping[id] = true
}

// rank orders the reasons a run broke: what the Engine says happened to a
// container explains a fault that failed on it, which is only a symptom.
type rank int8

const (
	symptom rank = iota + 1 // a fault that could not be applied or healed
	cause                   // what the Engine, or the disk, says happened
)

// fail records why the environment broke: the first cause wins.
func (g *guard) fail(format string, args ...any) {
	if g == nil {
		return
	}
	g.failWith(cause, g.stamp(format, args...))
}

// failed records a symptom: a cause seen later, while the guard still
// watches, replaces it as the reason.
func (g *guard) failed(format string, args ...any) {
	g.failWith(symptom, g.stamp(format, args...))
}

// stamp says a reason and when it happened.
func (g *guard) stamp(format string, args ...any) string {
	return fmt.Sprintf(format, args...) + fmt.Sprintf(", %.1f s into the run", time.Since(g.start).Seconds())
}

func (g *guard) failWith(r rank, reason string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if r <= g.rank {
		return
	}
	if g.rank == 0 {
		close(g.broke)
	}
	g.reason, g.rank = reason, r
}

// onlySymptom says whether the run broke for a reason whose cause may be
// on its way from the Engine.
func (g *guard) onlySymptom() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.rank == symptom
}

// Broken is closed once the environment broke.
func (g *guard) Broken() <-chan struct{} { return g.broke }

// err is the first breakage as an *EnvironmentError, nil if none.
func (g *guard) err() error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.reason == "" {
		return nil
	}
	return &EnvironmentError{Reason: g.reason}
}

// follow reads the Engine's events about the run's containers until ctx
// ends. A stream that ends before then is an Engine gone or restarting.
func (g *guard) follow(ctx context.Context, engine string, msgs <-chan events.Message, errs <-chan error) {
	for {
		select {
		case m := <-msgs:
			g.see(m)
		case err := <-errs:
			if ctx.Err() == nil {
				g.engineGone(engine, err)
			}
			return
		}
	}
}

// engineGone fails the run as engine's (this machine's when "") that no
// longer answers.
func (g *guard) engineGone(engine string, err error) {
	g.fail("%s stopped answering (%v)", strings.TrimSpace("the Docker Engine "+engine), err)
}

// Over several engines, one whose host went down or whose network was
// cut may never end its event stream: the guard asks it every engineBeat
// whether it answers, and gives it engineWait to.
const (
	engineBeat = 2 * time.Second
	engineWait = 5 * time.Second
)

// ping fails the run once engine d does not answer, or ctx ends.
func (g *guard) ping(ctx context.Context, engine string, d *Docker) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(engineBeat):
		}
		asked, cancel := context.WithTimeout(ctx, engineWait)
		_, err := d.cli.Ping(asked, client.PingOptions{})
		cancel()
		if err != nil && ctx.Err() == nil {
			g.engineGone(engine, err)
			return
		}
	}
}

// see takes one event about a container of the run.
func (g *guard) see(m events.Message) {
	id := m.Actor.ID
	var removed string
	defer func() {
		if removed != "" {
			g.fail("%s was removed from outside splitbrain", removed)
		}
	}()
	g.mu.Lock()
	defer g.mu.Unlock()
	name, known := g.names[id]
	if !known {
		return
	}
	switch m.Action {
	case events.ActionStart:
		delete(g.stopping, id)
		delete(g.signaled, id)
		delete(g.oom, id)
	case events.ActionKill:
		if !g.stopping[id] && !slices.Contains(notKilling, m.Actor.Attributes["signal"]) {
			g.signaled[id] = m.Actor.Attributes["signal"]
		}
	case events.ActionOOM:
		g.oom[id] = true
	case events.ActionDestroy:
		// Nothing of ours removes a container before teardown, which
		// comes after the guard stopped watching.
		removed = name
	case events.ActionDie:
		if g.stopping[id] {
			return
		}
		code := m.Actor.Attributes["exitCode"]
		time.AfterFunc(grace, func() { g.died(id, name, code) })
	}
}

// died judges a death that was not ours, once a removal would have been
// seen: the harness's own containers and the kernel's or another
// program's kills break the environment; a node or service process that
// exited on its own is the target's doing, judged by the checkers and
// noted at the end of the run.
func (g *guard) died(id, name, code string) {
	g.mu.Lock()
	owned, oom, signal, ours := g.owned[id], g.oom[id], g.signaled[id], g.stopping[id]
	g.mu.Unlock()
	if ours {
		return // a kill of ours began meanwhile
	}
	switch {
	case oom:
		g.fail("%s was killed by the kernel's out-of-memory killer", name)
	case signal != "":
		g.fail("%s was killed from outside splitbrain (signal %s)", name, signal)
	case owned:
		g.fail("%s exited on its own, with code %s", name, code)
	}
}
