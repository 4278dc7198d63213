package harness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/harness/engines"
	"github.com/splitbrain/splitbrain/internal/parallel"
	"github.com/splitbrain/splitbrain/nemesis"
	"github.com/splitbrain/splitbrain/results"
	"github.com/splitbrain/splitbrain/targets"
)

// Ports inside the containers.
const resourcePort = 7000

// Run is one run of a target in three steps: Up starts its cluster, Drive
// breaks it under the workload into a history, Down tears it down. New
// checks and plans it first. Judging the history and keeping the run are
// the caller's (harness/record does both).
type Run struct{ r *run }

// New checks cfg and plans the run (its target, promise, faults, schedule
// and id) before anything starts: a mistake there is a BadInputError. It
// then connects to the Docker Engine, whose version Info notes. From here
// the caller must call Down once, whatever Up and Drive return.
func New(ctx context.Context, cfg Config) (*Run, error) {
	r, err := prepare(cfg)
	if err != nil {
		return nil, err
	}
	if r.docker, err = ConnectDocker(ctx); err != nil {
		return nil, err
	}
	if err := r.connectEngines(ctx); err != nil {
		r.docker.Close()
		return nil, err
	}
	r.docker.Progress = cfg.Progress
	r.info.Started = time.Now().UTC()
	r.info.Versions.Engine = r.docker.EngineVersion(ctx)
	return &Run{r: r}, nil
}

// Up builds the run's images and starts its cluster as the target's
// manifest describes it: a network of its own, the resource, the
// target's services and nodes, every node healthy. dir is the run's
// folder, which the caller made: the resource's decision log and the
// clock files go there, Drive's history and Down's logs too. When Up
// fails, what it started is still running until Down.
func (u *Run) Up(ctx context.Context, dir string) error {
	u.r.dir = dir
	if err := u.r.buildImages(ctx); err != nil {
		return err
	}
	if err := u.r.shipImages(ctx); err != nil {
		return err
	}
	if err := u.r.probePackets(ctx); err != nil {
		return err
	}
	return u.r.startCluster(ctx)
}

// Drive runs the workload, the observer and the nemesis on the cluster Up
// started for the time limit, writing the history as it happens, heals
// every fault and lets the workload run on for the quiet period. Ctrl-C
// ends it early, with ctx's error; the history so far is kept. An
// EnvironmentError says the environment broke under the run, whose
// history may still prove a violation.
func (u *Run) Drive(ctx context.Context) error { return u.r.drive(ctx) }

// Down saves every container's log into the run's folder, then removes
// every container and network of the run and closes the connection to
// the Engine, even when ctx was cancelled (by the Ctrl-C that may have
// brought the caller here).
func (u *Run) Down(ctx context.Context) error {
	defer u.r.docker.Close()
	if u.r.engines != nil {
		defer u.r.engines.Close()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
	defer cancel()
	return u.r.teardown(ctx)
}

// ID names the run: its containers carry it in their LabelRun label.
func (u *Run) ID() string { return u.r.info.ID }

// Config is the run's, as New checked and completed it: the target's
// name, absolute paths, an explicit schedule's faults.
func (u *Run) Config() Config { return u.r.cfg }

// Promise is what the run is judged by: --promise, or the target's own.
func (u *Run) Promise() contract.Promise { return u.r.promise }

// Manifest is the target's, as read and checked.
func (u *Run) Manifest() targets.Manifest { return u.r.manifest }

// Info is run.json as far as the steps taken so far know it.
func (u *Run) Info() results.Info {
	info := u.r.info
	info.Notes = slices.Clone(info.Notes)
	return info
}

// Starts times the containers' starts, each from the history's start
// (they come before it: negative), or from now for a run that never
// began its workload.
func (u *Run) Starts() checkers.Timing {
	if u.r.cluster == nil {
		return checkers.Timing{}
	}
	return u.r.cluster.startTiming(cmp.Or(u.r.origin, time.Now()))
}

// Nodes, NodeURL and ResourceURL reach the cluster Up started, on the
// run's network, for a caller that questions the nodes itself.
func (u *Run) Nodes() []string { return u.r.cluster.Nodes() }

func (u *Run) NodeURL(node string) string { return u.r.cluster.NodeURL(node) }

func (u *Run) ResourceURL() string { return u.r.cluster.ResourceURL() }

// run carries one run's state from step to step.
type run struct {
	cfg      Config
	manifest targets.Manifest
	promise  contract.Promise
	faults   []nemesis.Fault
	schedule nemesis.Schedule
	docker   *Docker // this machine's engine: the images are made here
	// engineFile and engines are the engines the run spreads over
	// (spread.go); nil for a run on docker alone.
	engineFile *engines.File
	engines    *Engines
	dir        string
	info       results.Info
	cluster    *cluster
	origin     time.Time // the history's start: run time 0
	// secret is the run's SPLITBRAIN_SECRET, for its nodes and members.
	secret string
	// faketime is the host folder of libfaketime's companions, which
	// containers whose clocks it skews mount; "" for a target with none.
	faketime string
	// companions are those files by their path in a container, read once
	// for a run over several engines, which copies them in (clockFiles).
	companions map[string][]byte
	// The disk-fault layer's program, copied out of its image once for
	// every container that runs under it (diskProgram).
	diskOnce sync.Once
	diskProg []byte
	diskErr  error
}

// partitions says whether the plan needs packet-filter sidecars: to
// partition, or to impair packets.
func (r *run) partitions() bool {
	return slices.ContainsFunc(r.faults, func(f nemesis.Fault) bool { return f.Kind == nemesis.Partition || f.Kind == nemesis.Packet })
}

func (r *run) buildImages(ctx context.Context) error {
	start := time.Now()
	d := r.docker
	ours := func(tag, pkg string) func() error {
		return func() error { return d.buildImageOnce(ctx, tag, r.cfg.RepoRoot, targets.Build{Go: pkg}) }
	}
	builds := []func() error{
		func() (err error) { r.faketime, err = d.TargetImages(ctx, r.manifest); return err },
	}
	for _, h := range harnessImages {
		if h.startedBy(r) {
			builds = append(builds, ours(h.tag, h.main))
		}
	}
	err := parallel.Each(builds, func(build func() error) error { return build() })
	r.info.Timings.ImageBuild = time.Since(start).Seconds()
	return err
}

// systemVersions notes the Debian packages the nodes and services run
// from, read from one container of each image, for run.json and the
// report: a real system's version is part of what a run tested.
func (r *run) systemVersions(ctx context.Context) error {
	images := []imageVersions{{whose: "nodes", container: r.cluster.nodes[0]}}
	for _, s := range r.manifest.Services {
		images = append(images, imageVersions{whose: s.Name, container: s.MemberNames(r.cfg.Nodes)[0]})
	}
	for i, im := range images {
		v, err := r.cluster.on(im.container).SystemVersions(ctx, r.cluster.ids[im.container])
		if err != nil {
			return fmt.Errorf("reading the package versions of %s: %v", im.container, err)
		}
		images[i].versions = v
	}
	r.info.Versions.System = mergeVersions(images)
	return nil
}

// imageVersions are the versions one image of a run reports, and whose
// image it is: the nodes', or a service's.
type imageVersions struct {
	whose, container string
	versions         map[string]string
}

// mergeVersions is every package of images with its version, nil if none
// has one. A package at two versions in one run (a trixie node beside
// bookworm servers: their JREs) keeps both, each with whose it is, in the
// order of images: "2:1.21-76 (nodes); 2:1.17-74 (zk)".
func mergeVersions(images []imageVersions) map[string]string {
	type seen struct {
		version string
		whose   []string
	}
	byPackage := map[string][]seen{}
	for _, im := range images {
		for pkg, v := range im.versions {
			i := slices.IndexFunc(byPackage[pkg], func(s seen) bool { return s.version == v })
			if i < 0 {
				i = len(byPackage[pkg])
				byPackage[pkg] = append(byPackage[pkg], seen{version: v})
			}
			byPackage[pkg][i].whose = append(byPackage[pkg][i].whose, im.whose)
		}
	}
	if len(byPackage) == 0 {
		return nil
	}
	merged := make(map[string]string, len(byPackage))
	for pkg, versions := range byPackage {
		if len(versions) == 1 {
			merged[pkg] = versions[0].version
			continue
		}
		each := make([]string, len(versions))
		for i, s := range versions {
			each[i] = fmt.Sprintf("%s (%s)", s.version, strings.Join(s.whose, ", "))
		}
		merged[pkg] = strings.Join(each, "; ")
	}
	return merged
}

// addressPlan gives every container of a run a fixed address in subnet:
// the resource .2, node ni .10+i, the service members of their own from
// .120 (at most 120, below dynamicRange); a member beside a node has the
// node's. Each container also lists
// them all in its /etc/hosts: on an internal network Docker's DNS takes
// 20 s to give up on the name of a container that is down (killed by a
// fault), and a real server that resolves names in its event loop (a
// Sentinel, a Redis replica) stalls that long. A deployed system's names
// outlive its hosts' crashes; here they do too.
func addressPlan(subnet netip.Prefix, nodes []string, members []targets.Member) (map[string]netip.Addr, error) {
	base := subnet.Masked().Addr().As4()
	if subnet.Bits() > 24 || len(nodes) > targets.MaxNodes || len(members) > 120 {
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

// dynamicRange is where the engines give addresses of their own choosing
// on a run's overlay (the gateway, each engine's load balancer), which
// would otherwise take one addressPlan gives: the last 16 of the /24.
func dynamicRange(subnet netip.Prefix) netip.Prefix {
	a := subnet.Masked().Addr().As4()
	a[3] = 240
	return netip.PrefixFrom(netip.AddrFrom4(a), 28)
}

// withLog explains a node that did not start: the bad input its disk
// layer refused, or its exit code if its process ended (that is the
// cause, whatever err says), and the tail of its log.
func (r *run) withLog(ctx context.Context, node string, err error) error {
	ctx = context.WithoutCancel(ctx)
	r.cluster.mu.RLock()
	id := r.cluster.ids[node]
	r.cluster.mu.RUnlock()
	if id == "" {
		return err
	}
	if bad := r.diskRefused(ctx, id, node); bad != nil {
		return bad
	}
	d := r.cluster.on(node)
	if exited, code := d.Exited(ctx, id); exited {
		err = fmt.Errorf("%s never became healthy: its process exited with code %d", r.cluster.kind(node), code)
	}
	logs, lerr := d.Logs(ctx, id)
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

// teardown saves every container's log, then removes everything labelled
// with the run's id, whether or not this process still knows about it.
func (r *run) teardown(ctx context.Context) error {
	start := time.Now()
	if r.cluster != nil && r.cluster.faketime != nil {
		r.cluster.faketime.close()
	}
	// An Engine that broke the run (restarting) may be back in seconds.
	lost, why, err := r.waitEngines(ctx)
	if err != nil {
		return fmt.Errorf("teardown: %v (run `splitbrain clean%s` once it does)", err, r.cleanFlags())
	}
	errs := []error{why}
	if r.cluster != nil && !lost[r.cluster.on(engines.Resource)] {
		errs = append(errs, r.fetchResourceLog(ctx, results.ResourceFile))
	}
	if c := r.cluster; c != nil {
		// A log file by container, each container's owner's engine.
		type logged struct{ file, owner, id string }
		var all []logged
		for name, id := range c.ids {
			all = append(all, logged{name, name, id})
		}
		for name, id := range c.sidecars {
			all = append(all, logged{name + "-netfilter", name, id})
		}
		for name, id := range c.clockSidecars {
			all = append(all, logged{name + "-clock", name, id})
		}
		for _, l := range all {
			if lost[c.on(l.owner)] {
				continue
			}
			if logs, err := c.on(l.owner).Logs(ctx, l.id); err == nil {
				errs = append(errs, os.WriteFile(filepath.Join(r.dir, results.LogsDir, l.file+".log"), logs, 0o644))
			}
		}
	}
	label := LabelRun + "=" + r.info.ID
	removed, err := r.docker.Remove(ctx, label) // and a run's probes on this machine
	if r.engines != nil {
		spread, serr := r.removeSpread(ctx, label, lost)
		removed.Stuck, err = append(removed.Stuck, spread.Stuck...), errors.Join(err, serr)
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("teardown: %v (run `splitbrain clean%s`)", err, r.cleanFlags()))
	}
	switch {
	case why != nil:
		r.info.Notes = append(r.info.Notes, fmt.Sprintf("teardown: %v: the run's containers there, and its overlay, stay until it answers again (`splitbrain clean%s` then removes them)", why, r.cleanFlags()))
	case len(removed.Stuck) > 0:
		// Every container is gone and the history whole: the verdict
		// stands, and the note says what stays.
		r.info.Notes = append(r.info.Notes, fmt.Sprintf("teardown: the Docker Engine kept an endpoint of a removed container, so it would not remove the run's network %s: nothing runs in it, and it stays until the Engine restarts", strings.Join(removed.Stuck, ", ")))
	}
	r.info.Timings.Teardown = time.Since(start).Seconds()
	return errors.Join(errs...)
}
