package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/internal/parallel"
)

// Fault is one kind of fault, by the name --nemesis accepts, with what it
// does, to which containers, and its family. The catalogue sets these once
// where it declares the fault; whoever needs to tell faults apart (the
// pacer, the harness, the suite, the report) reads them, never the
// spelling of the name.
type Fault struct {
	Name string
	Kind Kind
	// OnServices: the fault acts on the target's service containers
	// (kills or freezes them, cuts the leader from them, skews one's
	// clock), which not every target has; otherwise on its nodes.
	OnServices bool
	// Family is the --nemesis family the fault belongs to, whether or not
	// that family's list draws it: kill-service-all is the service
	// family's, clock-service the clock family's.
	Family string
	// FiltersServices: the fault cuts links at service members' own
	// containers, so a run that may draw it gives each member of its own a
	// packet-filter sidecar, as every node has one (other runs pay
	// nothing).
	FiltersServices bool
	// Lasts: a fault that acts over time (a flap) is held at least this
	// long from its strike, whether or not the cluster reacted sooner.
	Lasts time.Duration
	// EachNode: the fault takes every node, or every member of a
	// service, in turn (a rolling restart), so it may take as long as a
	// restart of each.
	EachNode bool
	// Process: the command name of the one process a fault stops (a
	// JVM's), which the target's manifest must name.
	Process string
	// Rate: a clock fault that runs clocks at a rate rather than
	// stepping them, which only a target whose waits a rate stretches
	// faithfully may take.
	Rate bool
	// Needs: the kernel mechanism a packet fault stands on, which a run
	// checks before anything starts.
	Needs  Mechanism
	inject func(ctx context.Context, c Cluster, rng *rand.Rand) (Applied, error)
	// reaches says why the target's services give the fault nothing to
	// strike, before anything starts; nil when it can strike.
	reaches func([]ServiceCluster) error
}

// Kind is what a fault does.
type Kind string

// Kinds of faults.
const (
	Kill      Kind = "kill"      // SIGKILL containers, started again at heal
	Pause     Kind = "pause"     // freeze containers, thawed at heal
	Partition Kind = "partition" // drop packets between containers
	Clock     Kind = "clock"     // skew clocks
	Packet    Kind = "packet"    // lose, delay or slow packets on some links
	// PauseProcess stops one process of a container (SIGSTOP), the rest
	// running on, continued at heal.
	PauseProcess Kind = "pause-process"
	// Stop stops containers as a deploy does (their stop signal, then a
	// kill after a grace), started again at heal or in turn.
	Stop Kind = "stop"
	// DiskStall holds the writes and fsyncs of containers' data
	// directories, DiskFail fails them, until heal; LoseUnsynced kills
	// containers as a power cut does, losing what they had not synced,
	// and starts them again at heal.
	DiskStall    Kind = "disk-stall"
	DiskFail     Kind = "disk-fail"
	LoseUnsynced Kind = "disk-lose-unsynced"
)

// Restarts says whether a fault of kind k is healed by starting
// containers again, which takes as long as they take to start: a heal
// that is slow then is not late.
func (k Kind) Restarts() bool { return k == Kill || k == Stop || k == LoseUnsynced }

// Target says which containers a kill or pause hits: nodes, or one of the
// target's services.
type Target string

// Targets of kills and pauses.
const (
	Leader   Target = "leader"   // the current leader (a random node when none is known)
	One      Target = "one"      // one random node
	Minority Target = "minority" // a random minority, at least one node
	Majority Target = "majority" // a random majority
	All      Target = "all"      // every node
	// The same among the containers of the target's services (every
	// member of every service): one at random, a minority, a majority, all.
	Service         Target = "service"
	ServiceMinority Target = "service-minority"
	ServiceMajority Target = "service-majority"
	ServiceAll      Target = "service-all"
)

var targets = []Target{Leader, One, Minority, Majority, All, Service, ServiceMinority, ServiceMajority, ServiceAll}

// serviceTargets maps each target among service containers to the target
// among nodes whose share it takes.
var serviceTargets = map[Target]Target{Service: One, ServiceMinority: Minority, ServiceMajority: Majority, ServiceAll: All}

// families are the short names --nemesis accepts, each standing for the
// faults a user most likely means by it. A member listed n times has weight
// n: Plan tries every distinct member once before any repeats, then draws
// the extra copies, so a round of a family is as long as its list.
//
// Kill and pause reach every node target, from the leader to all of them,
// but weigh the ones that leave a quorum standing (leader, one, minority:
// 6 of 8) above those that take it away (majority, all: 2 of 8), so the
// cluster can mostly still elect while a fault is in effect and what the
// run measures is a failover, not an outage. The leader counts three times:
// losing it is what forces an election, and a paused leader waking up
// still believing it leads is the classic split brain. A minority counts
// twice: several nodes down at once, with the quorum the survivors must
// still find. One node (most often a follower) counts once, and so do a
// majority and all: they find what only the loss of a quorum shows (a vote
// not kept on disk, a whole cluster thawing at once) but leave nothing to
// elect until they heal.
//
// Partition weighs twice the shapes where two nodes may both believe they
// lead: the leader cut off, random halves, the majorities ring and the
// bridge. One node, one-way and the resource cut count once, and so does
// partition-all, every node alone, which leaves no side a quorum (1 of 12;
// random halves of an even number of nodes do too).
var families = map[string][]string{
	"kill": {
		"kill-leader", "kill-leader", "kill-leader",
		"kill-one",
		"kill-minority", "kill-minority",
		"kill-majority",
		"kill-all",
	},
	"pause": {
		"pause-leader", "pause-leader", "pause-leader",
		"pause-one",
		"pause-minority", "pause-minority",
		"pause-majority",
		"pause-all",
	},
	"partition": {
		"partition-leader", "partition-leader",
		"partition-one",
		"partition-halves", "partition-halves",
		"partition-ring", "partition-ring",
		"partition-bridge", "partition-bridge",
		"partition-oneway",
		"partition-resource",
		"partition-all",
	},
	"clock":  {"clock-bump", "clock-strobe", "clock-rate"},
	"packet": {"packet-loss", "packet-delay", "packet-slow"},
	"flap":   {"flap"},
	// A process stopped weighs as a container frozen: the leader's
	// thrice, a minority's twice.
	"pause-process": {
		"pause-process-leader", "pause-process-leader", "pause-process-leader",
		"pause-process-one",
		"pause-process-minority", "pause-process-minority",
	},
	"deploy": {"stop-leader", "restart-rolling"},
	// A disk stalled or failing on the leader weighs thrice, on one node
	// (most often a follower) once; a full disk, the leader's, once. A
	// power cut weighs as a kill: it is one, and the writes it loses
	// matter most where a quorum's are lost at once.
	"disk-stall": {"disk-stall-leader", "disk-stall-leader", "disk-stall-leader", "disk-stall-one"},
	"disk-fail":  {"disk-fail-leader", "disk-fail-leader", "disk-fail-leader", "disk-fail-one", "disk-full-leader"},
	"disk-lose-unsynced": {
		"disk-lose-unsynced-leader", "disk-lose-unsynced-leader", "disk-lose-unsynced-leader",
		"disk-lose-unsynced-one",
		"disk-lose-unsynced-minority", "disk-lose-unsynced-minority",
		"disk-lose-unsynced-majority",
		"disk-lose-unsynced-all",
	},
	"service": {"kill-service", "pause-service", "partition-service"},
}

// serviceLinks are the faults on a service's links. The service family
// draws partitionServiceMembers for a target it can strike (Shape): a
// target with no service of two members or more of their own draws the
// family as before. The zone cuts and partitionServiceOneway are had by
// name: drawn by a family, they would change that family's draws for
// every target with a service of its own, each of whose rows must then
// be checked again on five seeds.
var serviceLinks = []Fault{partitionServiceMembers, partitionZones, partitionLeaderZone, partitionServiceOneway}

// catalogue holds every fault by name.
var catalogue = func() map[string]Fault {
	m := map[string]Fault{}
	add := func(f Fault) { m[f.Name] = f }
	for _, t := range targets {
		add(nodeFault(Kill, t, "killed", Cluster.Kill, Cluster.Restart))
		add(nodeFault(Pause, t, "froze", Cluster.Pause, Cluster.Resume))
	}
	for _, t := range []Target{Leader, One, Minority, Service} {
		add(pauseProcess(t))
	}
	add(pauseProcessGC)
	for _, t := range []Target{Leader, One, Service} {
		add(diskFault(DiskStall, t, Disk{Stall: true}, ""))
		add(diskFault(DiskFail, t, Disk{Fail: DiskIO}, ""))
	}
	add(diskFault(DiskFail, Leader, Disk{Fail: DiskFull}, "disk-full-leader"))
	for _, t := range []Target{Leader, One, Minority, Majority, All, Service, ServiceAll} {
		add(powerCut(t))
	}
	add(stopLeader)
	add(restartRolling)
	add(stopService)
	add(restartRollingService)
	add(partition("partition-leader", func(c Cluster, rng *rand.Rand) Grudge {
		return IsolateNode(c.Nodes(), leaderOr(c, rng))
	}))
	add(partition("partition-one", func(c Cluster, rng *rand.Rand) Grudge {
		return IsolateNode(c.Nodes(), randomNode(c, rng))
	}))
	add(partition("partition-halves", func(c Cluster, rng *rand.Rand) Grudge { return RandomHalves(c.Nodes(), rng) }))
	add(partition("partition-ring", func(c Cluster, rng *rand.Rand) Grudge { return MajoritiesRing(c.Nodes(), rng) }))
	add(partition("partition-bridge", func(c Cluster, rng *rand.Rand) Grudge { return Bridge(c.Nodes(), rng) }))
	add(partition("partition-oneway", func(c Cluster, rng *rand.Rand) Grudge {
		return OneWay(c.Nodes(), leaderOr(c, rng))
	}))
	add(partition("partition-resource", func(c Cluster, rng *rand.Rand) Grudge {
		return CutFromResource(leaderOr(c, rng))
	}))
	add(partition("partition-all", func(c Cluster, rng *rand.Rand) Grudge { return Isolated(c.Nodes()) }))
	add(partitionService)
	add(partitionServiceFollowers)
	for _, f := range serviceLinks {
		add(f)
	}
	add(clockBump)
	add(clockService)
	add(clockStrobe)
	add(clockRate)
	add(clockSlowLeader)
	add(clockDriftLeader)
	add(clockFastService)
	add(packetLoss)
	add(packetDelay)
	add(packetSlow)
	add(flap)
	return m
}()

// Lookup finds a fault by its exact name, for readers that have only the
// name (a history's events, a run.json): false for any other string.
func Lookup(name string) (Fault, bool) {
	f, ok := catalogue[name]
	return f, ok
}

// Expand turns the --nemesis list (families, fault names, "none") into
// groups of faults, one per item, for Plan to draw from: a family is a
// group of its members, each as many times as its weight (so a group may
// hold a fault more than once), a single fault a group of one. It knows no
// target: the faults a target adds to a family, and whether it can take
// each, are ExpandFor's.
func Expand(list []string) ([][]Fault, error) { return ExpandFor(list, nil) }

// Shape is what a target offers its faults, known before anything starts.
type Shape struct {
	// SkewableServices: some service container's clock can be skewed, so
	// the clock family skews it too, since a server's clock (a Redis
	// expiring keys by it) is as much the system's as the nodes' are.
	SkewableServices bool
	// Services are its services, their members placed.
	Services []ServiceCluster
}

// ExpandFor is Expand for a target of shape: its families hold the faults
// it adds (clock-service, partition-service-members), and a fault named
// that cannot strike it is refused.
func ExpandFor(list []string, shape *Shape) ([][]Fault, error) {
	var groups [][]Fault
	for _, item := range list {
		item = strings.TrimSpace(item)
		names := families[item]
		if shape != nil {
			names = slices.Clone(names)
			if item == "clock" && shape.SkewableServices {
				names = append(names, clockService.Name)
			}
			if item == "service" && partitionServiceMembers.reaches(shape.Services) == nil {
				names = append(names, partitionServiceMembers.Name)
			}
		}
		switch {
		case item == "" || item == "none":
			continue
		case names == nil:
			names = []string{item}
		}
		var group []Fault
		for _, name := range names {
			f, ok := catalogue[name]
			if !ok {
				return nil, fmt.Errorf("unknown nemesis %q (families: %s; faults: %s)", name, strings.Join(sortedKeys(families), ", "), strings.Join(Names(), ", "))
			}
			if shape != nil && f.reaches != nil && len(shape.Services) > 0 {
				if err := f.reaches(shape.Services); err != nil {
					return nil, fmt.Errorf("--nemesis %s: %v", name, err)
				}
			}
			group = append(group, f)
		}
		groups = append(groups, group)
	}
	return groups, nil
}

// Names lists every fault name, sorted.
func Names() []string { return sortedKeys(catalogue) }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// choose resolves a target to nodes, or to service containers: none when
// the target has no services.
func choose(c Cluster, t Target, rng *rand.Rand) []string {
	if t == Leader {
		return []string{leaderOr(c, rng)}
	}
	pool := c.Nodes()
	if share, ok := serviceTargets[t]; ok {
		pool, t = c.Services(), share
	}
	return pick(pool, t, rng)
}

// pick draws t's share of pool (one, a minority, a majority, all).
func pick(pool []string, t Target, rng *rand.Rand) []string {
	if len(pool) == 0 {
		return nil
	}
	pool = slices.Clone(pool)
	rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	switch t {
	case One:
		return pool[:1]
	case Minority:
		return pool[:max(1, (len(pool)-1)/2)]
	case Majority:
		return pool[:len(pool)/2+1]
	}
	return pool
}

func randomNode(c Cluster, rng *rand.Rand) string {
	nodes := c.Nodes()
	return nodes[rng.IntN(len(nodes))]
}

// leaderOr is the current leader, or a random node when none is known.
func leaderOr(c Cluster, rng *rand.Rand) string {
	if l := c.Leader(); l != "" {
		return l
	}
	return randomNode(c, rng)
}

// aimed names a fault of kind aimed at t ("kill-leader") and says its
// reach and family: on service containers the service family, else its
// kind's.
func aimed(kind Kind, t Target) (name string, onServices bool, family string) {
	_, onServices = serviceTargets[t]
	family = string(kind)
	if onServices {
		family = "service"
	}
	return string(kind) + "-" + string(t), onServices, family
}

// nodeFault does act to the targeted nodes at once, and undo to heal.
func nodeFault(kind Kind, t Target, done string, act, undo func(Cluster, context.Context, string) error) Fault {
	return hostFault(kind, t, choose, done, act, undo)
}

// hostFault does act at once to the containers among draws for t, and
// undo to heal.
func hostFault(kind Kind, t Target, among func(Cluster, Target, *rand.Rand) []string, done string, act, undo func(Cluster, context.Context, string) error) Fault {
	name, onServices, family := aimed(kind, t)
	return Fault{Name: name, Kind: kind, OnServices: onServices, Family: family, inject: func(ctx context.Context, c Cluster, rng *rand.Rand) (Applied, error) {
		leader := c.Leader()
		nodes := among(c, t, rng)
		if len(nodes) == 0 {
			return Applied{}, fmt.Errorf("%s: the target has no service containers it can strike", name)
		}
		what := done + " " + strings.Join(nodes, ", ")
		if slices.Contains(nodes, leader) {
			what += " (leader " + leader + ")"
		}
		each := func(ctx context.Context, f func(Cluster, context.Context, string) error) error {
			return forEach(nodes, func(n string) error { return f(c, ctx, n) })
		}
		a := Applied{Nodes: nodes, What: what, Heal: func(ctx context.Context) error { return each(ctx, undo) }}
		return a, each(ctx, act)
	}}
}

// forEach runs f on every node in parallel, so a fault hits all its nodes
// at about the same moment.
func forEach(nodes []string, f func(string) error) error {
	return parallel.Each(nodes, func(n string) error {
		if err := f(n); err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
		return nil
	})
}

// partition applies the grudge shape makes, and heals by clearing it.
func partition(name string, shape func(Cluster, *rand.Rand) Grudge) Fault {
	return Fault{Name: name, Kind: Partition, Family: "partition", inject: func(ctx context.Context, c Cluster, rng *rand.Rand) (Applied, error) {
		g := shape(c, rng)
		return applyGrudge(ctx, c, g, g.Nodes(), g.String())
	}}
}

// applyGrudge puts g in effect, the fault having hit nodes, said as what,
// and heals by clearing it.
func applyGrudge(ctx context.Context, c Cluster, g Grudge, nodes []string, what string) (Applied, error) {
	a := Applied{Nodes: nodes, What: what, Heal: func(ctx context.Context) error { return c.Partition(ctx, nil) }}
	return a, c.Partition(ctx, g)
}

// partitionService cuts the leader from every service container of the
// target (its lock server, its etcd): it still talks to its peers and to
// the resource, but cannot renew whatever it holds there.
var partitionService = serviceCut("partition-service", func(c Cluster, rng *rand.Rand) []string {
	return []string{leaderOr(c, rng)}
})

// partitionServiceFollowers cuts every node but the leader (all but one
// at random when no leader is known) from every service container:
// candidates whose sessions run out while they wait, the first step of
// etcd#19597. Had by name: drawn by the service family, it would change
// that family's draws.
var partitionServiceFollowers = serviceCut("partition-service-followers", func(c Cluster, rng *rand.Rand) []string {
	spared := leaderOr(c, rng)
	return slices.DeleteFunc(slices.Clone(c.Nodes()), func(n string) bool { return n == spared })
})

// serviceCut cuts the nodes aim draws from every service container.
func serviceCut(name string, aim func(Cluster, *rand.Rand) []string) Fault {
	return Fault{Name: name, Kind: Partition, OnServices: true, Family: "service", inject: func(ctx context.Context, c Cluster, rng *rand.Rand) (Applied, error) {
		services := c.Services()
		if len(services) == 0 {
			return Applied{}, errors.New(name + ": the target has no service containers")
		}
		nodes := aim(c, rng)
		g := Grudge{}
		for _, n := range nodes {
			g = g.Merge(CutFrom(n, services...))
		}
		return applyGrudge(ctx, c, g, nodes, strings.Join(nodes, ",")+" cut from "+strings.Join(services, ", "))
	}}
}

// partitionServiceMembers splits the members of one of the target's
// services into a minority and a majority: the member leading the service
// alone where the manifest says how to find it, else a random minority.
// The nodes keep every link they had (CURATOR-444's ZooKeeper servers cut
// from one another while their clients reach each side).
var partitionServiceMembers = Fault{
	Name: "partition-service-members", Kind: Partition, OnServices: true, FiltersServices: true, Family: "service",
	reaches: splittable,
	inject: func(ctx context.Context, c Cluster, rng *rand.Rand) (Applied, error) {
		s, err := pickService(c, rng, splittable)
		if err != nil {
			return Applied{}, fmt.Errorf("partition-service-members: %w", err)
		}
		leader := c.ServiceLeader(ctx, s.Name)
		minority, majority := Split(s.Members, leader, rng)
		l := Links{From: minority, To: majority, Way: Both}
		what := l.String()
		if leader != "" {
			what += " (" + leader + " led " + s.Name + ")"
		}
		return cut(ctx, c, what, l)
	},
}

// zoneCut spreads the nodes and the services' members over the target's
// zones (round robin; a member beside a node in its node's zone) and
// cuts the zone pick chooses from the rest, as when a data centre goes
// dark. The resource is in no zone: every zone still reaches it. Members
// beside the nodes are cut with their hosts (Sentinels with their Redis
// servers), as a zone's machines are.
func zoneCut(name string, pick func(c Cluster, zones [][]string, rng *rand.Rand) (zone int, why string)) Fault {
	return Fault{
		Name: name, Kind: Partition, OnServices: true, FiltersServices: true, Family: "service",
		inject: func(ctx context.Context, c Cluster, rng *rand.Rand) (Applied, error) {
			zones := Zones(c.Nodes(), c.ServiceClusters(), c.Zones())
			i, why := pick(c, zones, rng)
			l := Links{From: zones[i], To: Rest(zones, i), Way: Both}
			return cut(ctx, c, fmt.Sprintf("zone %d of %d cut off%s: %s", i+1, len(zones), why, l), l)
		},
	}
}

// partitionZones cuts a zone drawn at random.
var partitionZones = zoneCut("partition-zones", func(_ Cluster, zones [][]string, rng *rand.Rand) (int, string) {
	return rng.IntN(len(zones)), ""
})

// partitionLeaderZone cuts the leader's zone (a random node's when none
// is known): the leader in a minority with what its zone holds, as
// Redis Cluster's write-safety trigger wants (a primary cut from the
// majority of the primaries).
var partitionLeaderZone = zoneCut("partition-leader-zone", func(c Cluster, zones [][]string, rng *rand.Rand) (int, string) {
	leader := leaderOr(c, rng)
	for i, z := range zones {
		if slices.Contains(z, leader) {
			return i, " (" + leader + "'s)"
		}
	}
	return rng.IntN(len(zones)), ""
})

// partitionServiceOneway cuts the links between the leader (a random node
// when none is known) and one service's members one way: the node's
// packets to them, or theirs to it, at the packet level (every packet
// that way dropped) or the connection level (the new connections opened
// that way refused), each drawn at random and said in the history.
var partitionServiceOneway = Fault{
	Name: "partition-service-oneway", Kind: Partition, OnServices: true, FiltersServices: true, Family: "service",
	reaches: apart,
	inject: func(ctx context.Context, c Cluster, rng *rand.Rand) (Applied, error) {
		s, err := pickService(c, rng, apart)
		if err != nil {
			return Applied{}, fmt.Errorf("partition-service-oneway: %w", err)
		}
		l := Links{From: []string{leaderOr(c, rng)}, To: s.Members, Way: Packets}
		if rng.IntN(2) == 0 {
			l.Way = Connections
		}
		if rng.IntN(2) == 0 {
			l.From, l.To = l.To, l.From
		}
		return cut(ctx, c, l.String(), l)
	},
}

// What the faults on a service's links need of it: members of their own,
// two or more of them to split.
var (
	apart      = someService("in containers of its own", ServiceCluster.Apart)
	splittable = someService("of two members or more in containers of their own", func(s ServiceCluster) bool { return len(s.Members) > 1 && s.Apart() })
)

// someService is a reaches that wants a service that ok holds for, which
// it names in its refusal.
func someService(what string, ok func(ServiceCluster) bool) func([]ServiceCluster) error {
	return func(services []ServiceCluster) error {
		if slices.ContainsFunc(services, ok) {
			return nil
		}
		return fmt.Errorf("the target has no service %s (a member beside a node shares its address, and is cut with its host)", what)
	}
}

// pickService draws one of the target's services that reaches accepts.
func pickService(c Cluster, rng *rand.Rand, reaches func([]ServiceCluster) error) (ServiceCluster, error) {
	var fit []ServiceCluster
	for _, s := range c.ServiceClusters() {
		if reaches([]ServiceCluster{s}) == nil {
			fit = append(fit, s)
		}
	}
	if len(fit) == 0 {
		return ServiceCluster{}, reaches(nil)
	}
	return fit[rng.IntN(len(fit))], nil
}

// cut cuts links, every container they name among the fault's nodes.
func cut(ctx context.Context, c Cluster, what string, l Links) (Applied, error) {
	return applyGrudge(ctx, c, l.Grudge(), sortedSet(append(slices.Clone(l.From), l.To...)), what)
}

// Clock faults hit a random minority of nodes, each with a skew of its own.
// Go targets read wall time through the SDK's clock, which follows the file
// the harness rewrites; nothing on the host changes.

// maxBump is the largest clock jump: past a lease's length, small enough
// that a node's logs stay readable.
const maxBump = 30 * time.Second

var clockBump = Fault{Name: "clock-bump", Kind: Clock, Family: "clock", inject: func(ctx context.Context, c Cluster, rng *rand.Rand) (Applied, error) {
	return bump(ctx, c, choose(c, Minority, rng), rng)
}}

// clockService bumps the clock of one service container whose clock can
// be skewed: a Redis whose keys expire by its wall clock, say.
var clockService = Fault{Name: "clock-service", Kind: Clock, OnServices: true, Family: "clock", inject: func(ctx context.Context, c Cluster, rng *rand.Rand) (Applied, error) {
	services, err := skewableServices(c, rng)
	if err != nil {
		return Applied{}, fmt.Errorf("clock-service: %w", err)
	}
	return bump(ctx, c, []string{services[rng.IntN(len(services))]}, rng)
}}

// skewableServices are the service containers whose clocks can be skewed,
// an error when there are none.
func skewableServices(c Cluster, _ *rand.Rand) ([]string, error) {
	services := c.SkewableServices()
	if len(services) == 0 {
		return nil, errors.New("no service container's clock can be skewed")
	}
	return services, nil
}

// bump jumps each clock of nodes by its own random skew.
func bump(ctx context.Context, c Cluster, nodes []string, rng *rand.Rand) (Applied, error) {
	skews := make(map[string]contract.Skew, len(nodes))
	var what []string
	for _, n := range nodes {
		d := time.Duration(rng.Int64N(int64(maxBump))) + 100*time.Millisecond
		if rng.IntN(2) == 0 {
			d = -d
		}
		skews[n] = contract.Skew{Offset: d}
		what = append(what, fmt.Sprintf("%s %+.3fs", n, d.Seconds()))
	}
	return setClocks(ctx, c, nodes, skews, "clock bumped: "+strings.Join(what, ", "))
}

var clockRate = Fault{Name: "clock-rate", Kind: Clock, Family: "clock", Rate: true, inject: func(ctx context.Context, c Cluster, rng *rand.Rand) (Applied, error) {
	nodes := choose(c, Minority, rng)
	skews := make(map[string]contract.Skew, len(nodes))
	var what []string
	now := time.Now().UnixNano()
	for _, n := range nodes {
		// Between a quarter and four times real speed, as often slow as fast.
		rate := 1 + rng.Float64()*3
		if rng.IntN(2) == 0 {
			rate = 1 / rate
		}
		skews[n] = contract.Skew{Rate: rate, Since: now}
		what = append(what, fmt.Sprintf("%s at %.2fx", n, rate))
	}
	return setClocks(ctx, c, nodes, skews, "clock rate: "+strings.Join(what, ", "))
}}

// clockSlowLeader runs the leader's clocks 4 to 8 times slower than true
// time until healed: its timers, and what it renews by them, stretch (its
// monotonic clock too with clock: process), while the servers and the
// other nodes keep true time. clockDriftLeader slows them by 5-20% only:
// between the two lies the ratio a lease tolerates (its length over the
// time its holder allows itself to renew), so a row can show an overlap
// past it and none below it. clockFastService runs every service
// container whose clock can be skewed 4 to 8 times fast: a store that
// expires leases by its own clock (etcd) ends them before their holders'
// keep-alives, sent at a fraction of the lease, reach it. Named, not
// drawn by the clock family, whose rates go both ways over every node.
var (
	clockSlowLeader  = rateFault("clock-slow-leader", false, theLeader, 1.0/8, 1.0/4)
	clockDriftLeader = rateFault("clock-drift-leader", false, theLeader, 0.8, 0.95)
	clockFastService = rateFault("clock-fast-service", true, skewableServices, 4, 8)
)

// rateFault runs the clocks of the containers who picks at one rate drawn
// between lo and hi.
func rateFault(name string, onServices bool, who func(Cluster, *rand.Rand) ([]string, error), lo, hi float64) Fault {
	return Fault{Name: name, Kind: Clock, OnServices: onServices, Family: "clock", Rate: true, inject: func(ctx context.Context, c Cluster, rng *rand.Rand) (Applied, error) {
		nodes, err := who(c, rng)
		if err != nil {
			return Applied{}, fmt.Errorf("%s: %w", name, err)
		}
		rate := lo + rng.Float64()*(hi-lo)
		skew := contract.Skew{Rate: rate, Since: time.Now().UnixNano()}
		skews := make(map[string]contract.Skew, len(nodes))
		for _, n := range nodes {
			skews[n] = skew
		}
		return setClocks(ctx, c, nodes, skews, fmt.Sprintf("clock rate: %s at %.2fx", strings.Join(nodes, ", "), rate))
	}}
}

// theLeader is the current leader alone, or a random node when none is
// known.
func theLeader(c Cluster, rng *rand.Rand) ([]string, error) {
	return []string{leaderOr(c, rng)}, nil
}

// clockStrobe flips the clocks between a jump and true time every period
// until healed: time that goes back and forth many times a second.
var clockStrobe = Fault{Name: "clock-strobe", Kind: Clock, Family: "clock", inject: func(ctx context.Context, c Cluster, rng *rand.Rand) (Applied, error) {
	nodes := choose(c, Minority, rng)
	delta := time.Duration(rng.Int64N(int64(maxBump))) + 100*time.Millisecond
	period := time.Duration(10+rng.IntN(190)) * time.Millisecond
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(period)
		defer t.Stop()
		for on := true; ; on = !on {
			s := contract.Skew{}
			if on {
				s.Offset = delta
			}
			forEach(nodes, func(n string) error { return c.SetClock(ctx, n, s) })
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return Applied{
		Nodes: nodes,
		What:  fmt.Sprintf("clock strobe on %s: %+.3fs every %s", strings.Join(nodes, ", "), delta.Seconds(), period),
		Heal: func(ctx context.Context) error {
			close(stop)
			<-stopped
			return forEach(nodes, func(n string) error { return c.SetClock(ctx, n, contract.Skew{}) })
		},
	}, nil
}}

func setClocks(ctx context.Context, c Cluster, nodes []string, skews map[string]contract.Skew, what string) (Applied, error) {
	a := Applied{Nodes: nodes, What: what, Heal: func(ctx context.Context) error {
		return forEach(nodes, func(n string) error { return c.SetClock(ctx, n, contract.Skew{}) })
	}}
	return a, forEach(nodes, func(n string) error { return c.SetClock(ctx, n, skews[n]) })
}
