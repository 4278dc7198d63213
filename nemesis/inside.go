package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Faults inside a host: one process of a container stopped while the
// rest of it runs on (a daemon hung beside the database it manages, a JVM
// in a long collection), and nodes stopped as a deploy stops them, one or
// every one in turn.

// pauseProcess stops, in each container t aims at, one of the processes
// the manifest names there (drawn per container) with SIGSTOP, and
// continues it at heal. The kernel still accepts connections to the
// stopped process and queues what is sent to it, as for a frozen
// container; the other processes of the container answer as before.
func pauseProcess(t Target) Fault {
	name, onServices, family := aimed(PauseProcess, t)
	return Fault{Name: name, Kind: PauseProcess, OnServices: onServices, Family: family, inject: func(ctx context.Context, c Cluster, rng *rand.Rand) (Applied, error) {
		leader := c.Leader()
		var hosts []string
		if onServices {
			// One member among those whose manifest names a process.
			named := slices.DeleteFunc(slices.Clone(c.Services()), func(m string) bool { return len(c.Processes(m)) == 0 })
			if len(named) > 0 {
				hosts = []string{named[rng.IntN(len(named))]}
			}
		} else {
			hosts = choose(c, t, rng)
		}
		if len(hosts) == 0 {
			return Applied{}, fmt.Errorf("%s: the manifest names no process of a service to stop", name)
		}
		comms := map[string]string{}
		var words []string
		for _, h := range hosts {
			names := c.Processes(h)
			if len(names) == 0 {
				return Applied{}, fmt.Errorf("%s: the manifest names no process of %s to stop", name, h)
			}
			comms[h] = names[rng.IntN(len(names))]
			w := comms[h] + " in " + h
			if h == leader {
				w += " (leader)"
			}
			words = append(words, w)
		}
		each := func(ctx context.Context, f func(Cluster, context.Context, string, string) error) error {
			return forEach(hosts, func(h string) error { return f(c, ctx, h, comms[h]) })
		}
		a := Applied{Nodes: hosts, What: "stopped " + strings.Join(words, ", "), Heal: func(ctx context.Context) error {
			return each(ctx, Cluster.ContinueProcess)
		}}
		return a, each(ctx, Cluster.StopProcess)
	}}
}

// A JVM in trouble collects for seconds, runs a moment, and collects
// again, as a heap near its limit does (a full-collection thrash): its
// threads stopped, its sockets open, the kernel still taking what peers
// send it. pause-process-gc does that to the leader's JVM, by SIGSTOP
// and SIGCONT, each collection 1-8 s and each run between two 0.1-1 s
// (log-uniform, from the fault's aim), held at least gcLasts.
const (
	minCollection, maxCollection = time.Second, 8 * time.Second
	minMutator, maxMutator       = 100 * time.Millisecond, time.Second
	gcLasts                      = 15 * time.Second
)

// JVM is the command name of a Java virtual machine's process.
const JVM = "java"

// gcPeriod draws a collection's length (stopped) or a run's.
func gcPeriod(rng *rand.Rand, stopped bool) time.Duration {
	lo, hi := minMutator, maxMutator
	if stopped {
		lo, hi = minCollection, maxCollection
	}
	return time.Duration(logUniform(rng, float64(lo), float64(hi))).Round(time.Millisecond)
}

var pauseProcessGC = Fault{Name: "pause-process-gc", Kind: PauseProcess, Family: string(PauseProcess), Process: JVM, Lasts: gcLasts,
	inject: func(ctx context.Context, c Cluster, rng *rand.Rand) (Applied, error) {
		node := leaderOr(c, rng)
		if !slices.Contains(c.Processes(node), JVM) {
			return Applied{}, fmt.Errorf("pause-process-gc: the manifest names no %s process of %s", JVM, node)
		}
		var periods []time.Duration
		var words []string
		for sum, stopped := time.Duration(0), true; sum < gcLasts; stopped = !stopped {
			d := gcPeriod(rng, stopped)
			periods, sum = append(periods, d), sum+d
			words = append(words, map[bool]string{true: "collecting ", false: "running "}[stopped]+d.String())
		}
		toggles, stop := toggling(ctx, periods, func(stopped bool) time.Duration { return gcPeriod(rng, stopped) }, func(ctx context.Context, stopped bool) (string, error) {
			if stopped {
				return node + "'s JVM stopped, a collection", c.StopProcess(ctx, node, JVM)
			}
			return node + "'s JVM running between collections", c.ContinueProcess(ctx, node, JVM)
		})
		a := Applied{
			Nodes:   []string{node},
			What:    fmt.Sprintf("%s's JVM in long collections, over and over: %s...", node, strings.Join(words, ", ")),
			Toggles: toggles,
			Heal: func(ctx context.Context) error {
				err := stop()
				if cerr := c.ContinueProcess(ctx, node, JVM); cerr != nil {
					return cerr
				}
				if err != nil {
					return fmt.Errorf("a collection could not begin or end: %w", err)
				}
				return nil
			},
		}
		return a, c.StopProcess(ctx, node, JVM)
	},
}

// stopLeader stops the leader as a deploy does, with the manifest's stop
// signal, and waits until it is gone; it is started again at heal. Where
// a kill tests what a node promised before it died, a graceful stop tests
// its handover: whether it gives up leading before it stops answering,
// and how long the others take to elect.
var stopLeader = func() Fault {
	f := nodeFault(Stop, Leader, "stopped", Cluster.Stop, Cluster.Restart)
	f.Family = "deploy"
	return f
}()

// Orders of a rolling restart: the leader first (a deploy that does not
// look), last (one that does, as operators restart the leader last to
// hand over once), or at random.
const (
	leaderFirst = "the leader first"
	leaderLast  = "the leader last"
	atRandom    = "in a random order"
)

// rollOrder puts nodes in the order of a rolling restart drawn by rng.
func rollOrder(nodes []string, leader string, rng *rand.Rand) ([]string, string) {
	order := shuffledNodes(nodes, rng)
	how := []string{leaderFirst, leaderLast, atRandom}[rng.IntN(3)]
	if i := slices.Index(order, leader); i >= 0 && how != atRandom {
		order = slices.Delete(order, i, i+1)
		if how == leaderFirst {
			order = slices.Insert(order, 0, leader)
		} else {
			order = append(order, leader)
		}
	}
	return order, how
}

// rollStepTimeout bounds one node's turn in a rolling restart: its stop
// (the grace a stop gives, then a kill), its start, and its health.
const rollStepTimeout = time.Minute

// restartRolling stops every node in turn and starts it again, waiting
// for each to answer healthy before the next, as a deploy or a rolling
// upgrade does. The first stop is the fault's strike; each later stop and
// every start are its toggles, so the history holds every node's turn. Its
// heal waits for the last node's turn: a roll begun is finished.
var restartRolling = Fault{Name: "restart-rolling", Kind: Stop, Family: "deploy", EachNode: true, inject: func(ctx context.Context, c Cluster, rng *rand.Rand) (Applied, error) {
	order, how := rollOrder(c.Nodes(), c.Leader(), rng)
	return rolling(ctx, c, order, fmt.Sprintf("every node stopped and started again in turn, %s: %s", how, strings.Join(order, ", ")))
}}

// stopService stops one service member as a deploy does (SIGTERM, then
// a kill after the grace) and starts it again at heal.
var stopService = nodeFault(Stop, Service, "stopped", Cluster.Stop, Cluster.Restart)

// restartRollingService is restartRolling over the members of one
// service, drawn: a ZooKeeper ensemble or an etcd cluster upgraded
// member by member (ZOOKEEPER-4541's trigger), each ready again before
// the next, the service's leader first, last or where it falls.
var restartRollingService = Fault{Name: "restart-rolling-service", Kind: Stop, OnServices: true, Family: "service", EachNode: true, inject: func(ctx context.Context, c Cluster, rng *rand.Rand) (Applied, error) {
	services := c.ServiceClusters()
	if len(services) == 0 {
		return Applied{}, fmt.Errorf("restart-rolling-service: the target has no service containers")
	}
	s := services[rng.IntN(len(services))]
	order, how := rollOrder(s.Members, c.ServiceLeader(ctx, s.Name), rng)
	return rolling(ctx, c, order, fmt.Sprintf("every member of %s stopped and started again in turn, %s: %s", s.Name, how, strings.Join(order, ", ")))
}}

// rolling stops the containers of order in turn and starts each again,
// each healthy before the next is stopped; what says so.
func rolling(ctx context.Context, c Cluster, order []string, what string) (Applied, error) {
	toggles := make(chan Toggle, 2*len(order))
	done := make(chan error, 1)
	a := Applied{
		Nodes:   order,
		What:    what,
		Toggles: toggles,
		Heal: func(context.Context) error {
			if err := <-done; err != nil {
				return fmt.Errorf("the rolling restart: %w", err)
			}
			return nil
		},
	}
	turn := func(node string) (time.Time, error) {
		step, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollStepTimeout)
		defer cancel()
		return time.Now(), c.Stop(step, node)
	}
	began, err := turn(order[0])
	if err != nil {
		close(toggles)
		done <- err
		return a, err
	}
	go func() {
		defer close(toggles)
		done <- roll(ctx, c, order, began, toggles)
	}()
	return a, nil
}

// roll goes on with a rolling restart whose first node was stopped at
// began: it starts each stopped node, waits for its health, and stops the
// next, telling toggles of each step.
func roll(ctx context.Context, c Cluster, order []string, began time.Time, toggles chan<- Toggle) error {
	for i, node := range order {
		step, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollStepTimeout)
		start := Toggle{What: node + " started again, in a rolling restart", Sent: time.Now()}
		start.Err = c.Restart(step, node)
		if start.Err == nil {
			start.Err = c.WaitHealthy(step, node)
			start.What += fmt.Sprintf(", healthy %.1f s after its stop began", time.Since(began).Seconds())
		}
		toggles <- start
		if start.Err != nil || i == len(order)-1 {
			cancel()
			return start.Err
		}
		stop := Toggle{Cut: true, What: order[i+1] + " stopped, in a rolling restart", Sent: time.Now()}
		began = stop.Sent
		stop.Err = c.Stop(step, order[i+1])
		cancel()
		toggles <- stop
		if stop.Err != nil {
			return stop.Err
		}
	}
	return nil
}
