package harness

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/splitbrain/splitbrain/harness/engines"
	"github.com/splitbrain/splitbrain/internal/parallel"
)

// A run spread over several Docker Engines (--engines, docs/engines.md)
// differs from one on this machine's engine in what is here: its
// containers go where the engines file places them, on an overlay
// network across the engines, reached through a gateway on the first;
// its images are shipped to the engines that start them; and what a run
// on one engine shares with its containers through this machine's
// folders (the clock files, the resource's decision log) goes through
// the engines' API instead.

// loadEngines reads the run's engines file and places its containers,
// before anything starts: a file that does not say where each goes is
// bad input.
func (r *run) loadEngines() error {
	if r.cfg.Engines == "" {
		return nil
	}
	f, err := engines.Load(r.cfg.Engines)
	if err != nil {
		return badInput("--engines: %v", err)
	}
	nodes := make([]string, r.cfg.Nodes)
	for i := range nodes {
		nodes[i] = nodeName(i)
	}
	groups := [][]string{nodes}
	for _, s := range r.manifest.Services {
		var apart []string
		for _, m := range s.Placed(r.cfg.Nodes) {
			if m.Node == "" {
				apart = append(apart, m.Name)
			}
		}
		groups = append(groups, apart)
	}
	if r.cfg.Engine != "" {
		if _, ok := f.Engine(r.cfg.Engine); !ok {
			return badInput("--engine: %s names no engine %q", r.cfg.Engines, r.cfg.Engine)
		}
		f.Placement = map[string]string{engines.Resource: r.cfg.Engine}
		for _, c := range slices.Concat(groups...) {
			f.Placement[c] = r.cfg.Engine
		}
	}
	placement, err := f.Assign(groups...)
	if err != nil {
		return badInput("--engines: %v", err)
	}
	r.engineFile, r.info.Placement = &f, placement
	return nil
}

// connectEngines reaches the run's engines and joins them in a swarm.
func (r *run) connectEngines(ctx context.Context) error {
	if r.engineFile == nil {
		return nil
	}
	e, err := ConnectEngines(ctx, *r.engineFile)
	if err != nil {
		return badInput("--engines: %v", err)
	}
	if err := e.Join(ctx); err != nil {
		e.Close()
		return badInput("--engines: %v", err)
	}
	r.engines = e
	return nil
}

// dockers are the engines that hold the run's containers, by name: this
// machine's alone ("") for a run that does not spread.
func (r *run) dockers() map[string]*Docker {
	if r.engines == nil {
		return map[string]*Docker{"": r.docker}
	}
	return maps.Clone(r.engines.docker)
}

// shipImages puts the images this machine made for the run on the
// engines that start containers of them: each container's own, the
// harness's sidecars on every engine that holds one, the gateway on the
// first.
func (r *run) shipImages(ctx context.Context) error {
	if r.engines == nil {
		return nil
	}
	if err := r.readCompanions(); err != nil {
		return err
	}
	need := map[string][]string{r.gatewayEngine(): {gatewayImage}}
	add := func(container, image string) {
		engine := r.info.Placement[container]
		if !slices.Contains(need[engine], image) {
			need[engine] = append(need[engine], image)
		}
	}
	add(engines.Resource, resourceImage)
	for i := range r.cfg.Nodes {
		add(nodeName(i), NodeImage(r.manifest))
	}
	for _, s := range r.manifest.Services {
		for _, m := range s.Placed(r.cfg.Nodes) {
			add(cmp.Or(m.Node, m.Name), ServiceImage(r.manifest, s)) // beside a node: on its engine
		}
	}
	for container := range r.info.Placement {
		for _, h := range harnessImages {
			if h.tag != resourceImage && h.tag != gatewayImage && h.startedBy(r) {
				add(container, h.tag)
			}
		}
	}
	return r.engines.Ship(ctx, r.docker, need)
}

// newNetwork makes the run's network: a bridge on this machine's engine,
// or an overlay across the run's engines with the gateway the
// controller reaches it through, by the transport it returns.
func (r *run) newNetwork(ctx context.Context) (string, netip.Prefix, *http.Transport, error) {
	if r.engines == nil {
		network, subnet, err := r.docker.NewNetwork(ctx, r.info.ID)
		return network, subnet, nil, err
	}
	network, subnet, err := r.engines.NewOverlay(ctx, r.info.ID)
	if err != nil {
		return "", netip.Prefix{}, nil, err
	}
	dialer, err := r.engines.StartGateway(ctx, r.gatewayEngine(), r.info.ID, network, subnet)
	if err != nil {
		return "", netip.Prefix{}, nil, err
	}
	return network, subnet, &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: max(2, r.cfg.Concurrency)}, nil
}

// gatewayEngine is the engine that holds the run's gateway: the one
// that holds the whole run, or the first.
func (r *run) gatewayEngine() string {
	return cmp.Or(r.cfg.Engine, r.engineFile.Engines[0].Name)
}

// engineGrace is how long teardown waits for an engine of several that
// does not answer before it cleans the others.
const engineGrace = 15 * time.Second

// waitEngines waits until the engines of the run answer. On one engine
// alone its error is that the engine never did, within ctx. Over
// several, lost are the engines that did not within engineGrace, which
// teardown then asks nothing, and why names them; err is that none did.
func (r *run) waitEngines(ctx context.Context) (lost map[*Docker]bool, why, err error) {
	if r.engines == nil {
		return nil, nil, r.docker.WaitEngine(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, engineGrace)
	defer cancel()
	dockers := r.dockers()
	names := slices.Sorted(maps.Keys(dockers))
	lost = map[*Docker]bool{}
	var gone []error
	for i, err := range parallel.Do(names, func(name string) error { return dockers[name].WaitEngine(ctx) }) {
		if err != nil {
			lost[dockers[names[i]]] = true
			gone = append(gone, fmt.Errorf("engine %s: %v", names[i], err))
		}
	}
	if len(gone) == len(names) {
		return nil, nil, errors.Join(gone...)
	}
	return lost, errors.Join(gone...), nil
}

// removeSpread removes what carries label from the run's engines but the
// lost ones.
func (r *run) removeSpread(ctx context.Context, label string, lost map[*Docker]bool) (Removed, error) {
	var answering []engines.Engine
	for _, en := range r.engineFile.Engines {
		if !lost[r.engines.docker[en.Name]] {
			answering = append(answering, en)
		}
	}
	return r.engines.removeFrom(ctx, label, answering)
}

// cleanFlags are the flags of the `splitbrain clean` that removes what a
// teardown could not.
func (r *run) cleanFlags() string {
	if r.cfg.Engines == "" {
		return ""
	}
	return " --engines " + r.cfg.Engines
}

// placed is the cluster's map of engines by container.
func (r *run) placed() map[string]*Docker {
	if r.engines == nil {
		return nil
	}
	out := map[string]*Docker{}
	for name, engine := range r.info.Placement {
		out[name] = r.engines.docker[engine]
	}
	return out
}

// remote says whether container name runs on an engine that does not
// see this machine's folders: any engine of a run that spreads.
func (c *cluster) remote() bool { return c.placed != nil }

// copyClock puts a clock file (a name in the clock folder, and its
// content) into container name, and into its clock sidecar if it has
// one, through the Engine: a new file, then a hard link over the old
// one. A reader sees the old content, the new, or for a moment no file,
// which the SDK's clock takes as no change (docs/contract.md, Clock
// files); never half of one.
func (c *cluster) copyClock(ctx context.Context, name, file string, content []byte) error {
	c.mu.RLock()
	ids := []string{c.ids[name]}
	if sc := c.clockSidecars[name]; sc != "" {
		ids = append(ids, sc)
	}
	c.mu.RUnlock()
	dir := strings.TrimPrefix(clockMount, "/")
	fresh := path.Join(dir, "."+file+"."+c.runID)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755},
		{Typeflag: tar.TypeReg, Name: fresh, Mode: 0o644, Size: int64(len(content))},
		{Typeflag: tar.TypeLink, Name: path.Join(dir, file), Linkname: fresh},
	} {
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(content); err != nil {
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	d := c.on(name)
	return parallel.Each(ids, func(id string) error {
		_, err := d.cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: "/", Content: bytes.NewReader(buf.Bytes())})
		return err
	})
}

// clockCopyTimeout bounds a copy of a clock file into a container on
// another engine.
const clockCopyTimeout = 10 * time.Second

// startFaketime writes the timestamp files libfaketime reads into the
// clock folder, and on engines that do not see it, copies each into its
// container too (copyClock): a clock at another rate is rewritten every
// faketimeStep, a copy through the engine's API each time.
func (r *run) startFaketime() *faketimeClocks {
	here := faketimeWriter(r.cluster.clockDir)
	if r.engines == nil {
		return startFaketimeBy(here)
	}
	return startFaketimeBy(func(node string, b []byte) error {
		if err := here(node, b); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), clockCopyTimeout)
		defer cancel()
		return r.cluster.copyClock(ctx, node, faketimeFile, b)
	})
}

// readCompanions reads libfaketime's companions, which containers on
// engines that do not see this machine's folders get copied in.
func (r *run) readCompanions() error {
	if r.faketime == "" {
		return nil
	}
	entries, err := os.ReadDir(r.faketime)
	if err != nil {
		return err
	}
	r.companions = map[string][]byte{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(r.faketime, e.Name()))
		if err != nil {
			return err
		}
		r.companions[path.Join(faketimeMount, e.Name())] = b
	}
	return nil
}

// clockFiles are the files a node or service member whose clock
// libfaketime skews needs copied in before it starts: its companions,
// on an engine that does not see this machine's folders (clockBinds
// mounts them otherwise); none on one engine.
func (r *run) clockFiles(faketime bool) map[string][]byte {
	if !faketime {
		return nil
	}
	return r.companions
}

// resourceLogIn is where the resource writes its decision log in its
// container: the run's folder when the container is on this machine's
// engine, its own file system otherwise, from where Down copies it.
func (r *run) resourceLogIn() string {
	if r.engines != nil {
		return "/"
	}
	return "/out/"
}

// resourceBinds mounts the run's folder into the resource's container,
// on this machine's engine.
func (r *run) resourceBinds() []string {
	if r.engines != nil {
		return nil
	}
	return []string{r.dir + ":/out"}
}

// fetchResourceLog copies the resource's decision log out of its
// container into the run's folder, for a run whose resource is on an
// engine that does not see it: a controller that dies before Down loses
// it (docs/engines.md).
func (r *run) fetchResourceLog(ctx context.Context, file string) error {
	if r.engines == nil || r.cluster == nil || r.cluster.ids[engines.Resource] == "" {
		return nil
	}
	d := r.cluster.on(engines.Resource)
	cp, err := d.cli.CopyFromContainer(ctx, r.cluster.ids[engines.Resource], client.CopyFromContainerOptions{SourcePath: r.resourceLogIn() + file})
	if err != nil {
		return fmt.Errorf("copying the resource's decision log: %v", err)
	}
	defer cp.Content.Close()
	tr := tar.NewReader(cp.Content)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("copying the resource's decision log: no %s in its container", file)
		}
		if err != nil {
			return fmt.Errorf("copying the resource's decision log: %v", err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(r.dir, file), b, 0o644)
	}
}
