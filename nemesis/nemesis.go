// Package nemesis injects and heals faults on a schedule, aimed at the leader or at any node, and records each one.
package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/splitbrain/splitbrain/history"
)

// Cluster is what faults act on. The harness implements it over Docker.
type Cluster interface {
	Nodes() []string
	// Leader is the node currently believed to lead, "" if none is known.
	Leader() string
	Kill(ctx context.Context, node string) error
	Restart(ctx context.Context, node string) error
}

// Fault is one kind of fault. Inject does it and returns how to undo it.
type Fault interface {
	Name() string
	Inject(ctx context.Context, c Cluster, rng *rand.Rand) (Applied, error)
}

// Applied is a fault in effect.
type Applied struct {
	Nodes []string
	What  string                          // in words, for the history and the report
	Heal  func(ctx context.Context) error // undoes it
}

// catalogue holds every fault by the name --nemesis accepts.
var catalogue = map[string]Fault{
	"kill": kill{},
}

// Names lists the faults --nemesis accepts.
func Names() []string {
	var out []string
	for n := range catalogue {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Parse turns the --nemesis list into faults; "" and "none" mean no faults.
func Parse(list []string) ([]Fault, error) {
	var out []Fault
	for _, name := range list {
		name = strings.TrimSpace(name)
		if name == "" || name == "none" {
			continue
		}
		f, ok := catalogue[name]
		if !ok {
			return nil, fmt.Errorf("unknown nemesis %q (known: %s)", name, strings.Join(Names(), ", "))
		}
		out = append(out, f)
	}
	return out, nil
}

// Nemesis alternates between injecting a fault and healing it, one interval
// each, with faults drawn from a seeded generator.
type Nemesis struct {
	faults   []Fault
	interval time.Duration
	rng      *rand.Rand
	cluster  Cluster
	rec      *history.Recorder

	mu     sync.Mutex
	active []active
}

type active struct {
	fault   string
	applied Applied
}

// New returns a nemesis; with no faults it does nothing.
func New(faults []Fault, interval time.Duration, seed uint64, c Cluster, rec *history.Recorder) *Nemesis {
	return &Nemesis{faults: faults, interval: interval, rng: rand.New(rand.NewPCG(seed, 0x4e454d)), cluster: c, rec: rec}
}

// Run injects and heals until ctx ends, then heals whatever is still in
// effect. An error injecting one fault is recorded and the schedule goes on.
func (n *Nemesis) Run(ctx context.Context) {
	defer n.HealAll()
	if len(n.faults) == 0 {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(n.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n.healing() {
			n.heal(ctx)
			continue
		}
		f := n.faults[n.rng.IntN(len(n.faults))]
		n.inject(ctx, f)
	}
}

func (n *Nemesis) healing() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.active) > 0
}

func (n *Nemesis) inject(ctx context.Context, f Fault) {
	start := n.rec.Now()
	a, err := f.Inject(ctx, n.cluster, n.rng)
	e := history.Event{Type: history.Nemesis, F: f.Name(), Phase: history.Inject, Nodes: a.Nodes, Value: a.What, Sent: start}
	if err != nil {
		e.Error = err.Error()
		n.rec.Record(e)
		return
	}
	n.rec.Record(e)
	n.mu.Lock()
	n.active = append(n.active, active{fault: f.Name(), applied: a})
	n.mu.Unlock()
}

// heal undoes every fault in effect, newest first.
func (n *Nemesis) heal(ctx context.Context) {
	n.mu.Lock()
	todo := n.active
	n.active = nil
	n.mu.Unlock()
	for i := len(todo) - 1; i >= 0; i-- {
		a := todo[i]
		start := n.rec.Now()
		err := a.applied.Heal(ctx)
		e := history.Event{Type: history.Nemesis, F: a.fault, Phase: history.Heal, Nodes: a.applied.Nodes, Value: a.applied.What, Sent: start}
		if err != nil {
			e.Error = err.Error()
		}
		n.rec.Record(e)
	}
}

// HealAll undoes every fault in effect. It does not take the run's context:
// it must also work after Ctrl-C cancelled that.
func (n *Nemesis) HealAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n.heal(ctx)
}

// pick returns the leader if one is known, else a random node.
func pick(c Cluster, rng *rand.Rand) (string, error) {
	if l := c.Leader(); l != "" {
		return l, nil
	}
	nodes := c.Nodes()
	if len(nodes) == 0 {
		return "", errors.New("no nodes")
	}
	return nodes[rng.IntN(len(nodes))], nil
}
