package harness

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/moby/moby/client"

	"github.com/splitbrain/splitbrain/nemesis"
	"github.com/splitbrain/splitbrain/nemesis/diskfs"
)

// Disk faults reach a node's or a service member's data directories
// (data: in its manifest) through the disk-fault layer (nemesis/diskfs),
// which a run that may fault their disks makes the entry point of every
// node's container, or every member's of a service with data: it mounts
// itself over the directories, runs the container's own entry point
// under them, and takes its faults over HTTP on diskfs.Port. Other runs
// start them as they always did, and pay nothing.

// faultsDisks says whether the plan faults disks anywhere.
func (r *run) faultsDisks() bool {
	return slices.ContainsFunc(r.faults, func(f nemesis.Fault) bool { return f.Kind.Disk() })
}

// faultsDisksOf says whether the plan faults the nodes' disks (services
// false), and so puts the layer under every node, or the service
// members' (true), and so under every member with data directories.
func (r *run) faultsDisksOf(services bool) bool {
	return slices.ContainsFunc(r.faults, func(f nemesis.Fault) bool { return f.Kind.Disk() && f.OnServices == services })
}

// cutsPower says whether the plan cuts power: then the layer records
// every unsynced write, to undo it.
func (r *run) cutsPower() bool {
	return slices.ContainsFunc(r.faults, func(f nemesis.Fault) bool { return f.Kind == nemesis.LoseUnsynced })
}

// underDisk is spec with the disk-fault layer as its entry point over
// the data directories dirs, running the image's own as its child, as
// the image's user; prog is the layer's program.
func (r *run) underDisk(ctx context.Context, spec ContainerSpec, dirs []string, prog []byte) (ContainerSpec, error) {
	img, err := r.docker.cli.ImageInspect(ctx, spec.Image)
	if err != nil {
		return spec, err
	}
	cfg := img.Config
	if cfg == nil || len(cfg.Entrypoint)+len(cfg.Cmd) == 0 {
		return spec, fmt.Errorf("image %s has no entry point for the disk-fault layer to run", spec.Image)
	}
	entry := []string{diskfs.Program}
	if r.cutsPower() {
		entry = append(entry, "-lose-unsynced")
	}
	if cfg.User != "" {
		entry = append(entry, "-user", cfg.User)
	}
	for _, d := range dirs {
		entry = append(entry, "-data", d)
	}
	entry = append(append(append(entry, "--"), cfg.Entrypoint...), cfg.Cmd...)
	spec.Entrypoint, spec.User = entry, "0" // it mounts, then runs the program as the image's user
	spec.CapAdd, spec.Devices = []string{"SYS_ADMIN"}, []string{fuseDevice}
	spec.Files = maps.Clone(spec.Files)
	if spec.Files == nil {
		spec.Files = map[string][]byte{}
	}
	spec.Files[diskfs.Program] = prog
	return spec, nil
}

// underDiskIf is spec under the disk-fault layer over dirs when the
// plan faults such disks (faultsDisksOf(services)) and dirs are given,
// else spec.
func (r *run) underDiskIf(ctx context.Context, spec ContainerSpec, dirs []string, services bool) (ContainerSpec, error) {
	if len(dirs) == 0 || !r.faultsDisksOf(services) {
		return spec, nil
	}
	prog, err := r.diskProgram(ctx)
	if err != nil {
		return spec, err
	}
	return r.underDisk(ctx, spec, dirs, prog)
}

// diskProgram is the layer's program, copied out of its image once a
// run.
func (r *run) diskProgram(ctx context.Context) ([]byte, error) {
	r.diskOnce.Do(func() { r.diskProg, r.diskErr = r.copyDiskProgram(ctx) })
	return r.diskProg, r.diskErr
}

func (r *run) copyDiskProgram(ctx context.Context) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "splitbrain-diskfs-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := r.docker.copyOut(ctx, diskfsImage, "/app", tmp); err != nil {
		return nil, fmt.Errorf("the disk-fault layer's program: %v", err)
	}
	return os.ReadFile(filepath.Join(tmp, "app"))
}

// fuseDevice is the device the disk-fault layer mounts its file system by.
const fuseDevice = "/dev/fuse"

// diskRefused is the bad input a node's or member's layer exited with,
// when it could not start the container (a data directory the image
// lacks, FUSE refused), or nil.
func (r *run) diskRefused(ctx context.Context, id, name string) error {
	d := r.cluster.on(name)
	if exited, code := d.Exited(ctx, id); !exited || code != diskfs.ExitRefused || !r.faultsDisks() {
		return nil
	}
	logs, _ := d.Logs(ctx, id)
	who := "node " + name
	if _, member := r.cluster.serviceOf[name]; member {
		who = "service " + name
	}
	return badInput("%s, under the disk-fault layer: %s", who, strings.TrimSpace(string(lastLine(logs))))
}

// Data are the data directories of container name that disk faults
// reach.
func (c *cluster) Data(name string) []string { return c.data[name] }

// diskTimeout bounds one call to a node's layer, which answers at once.
const diskTimeout = 5 * time.Second

// SetDisk puts the data directories of node (or service member) in
// state d through its layer.
func (c *cluster) SetDisk(ctx context.Context, node string, d nemesis.Disk) error {
	ctx, cancel := context.WithTimeout(ctx, diskTimeout)
	defer cancel()
	c.mu.RLock()
	url := "http://" + netip.AddrPortFrom(c.ips[node], diskfs.Port).String() + "/fault"
	c.mu.RUnlock()
	return putJSON(ctx, c.client(0), url, "the disk-fault layer of "+node, diskfs.Fault{Stall: d.Stall, Fail: d.Fail})
}

// PowerCut kills node (or a service member), and the members beside it,
// and marks its container so that its layer, when it starts again,
// undoes every write it had not synced. The mark is written once the
// container is dead, through the Engine, which needs nothing running in
// it.
func (c *cluster) PowerCut(ctx context.Context, node string) error {
	c.mu.RLock()
	nodeID := c.ids[node]
	c.mu.RUnlock()
	return c.halt(node, func(d *Docker, id string) error {
		if err := d.Kill(ctx, id); err != nil || id != nodeID {
			return err
		}
		return d.copyIn(ctx, id, diskfs.Dir, map[string][]byte{diskfs.PowerCut: nil}, 0o644)
	})
}

// copyIn copies files (a path under dir to its content) into container
// id's folder dir, each with mode.
func (d *Docker) copyIn(ctx context.Context, id, dir string, files map[string][]byte, mode int64) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		b := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(name, "/"), Mode: mode, Size: int64(len(b))}); err != nil {
			return err
		}
		if _, err := tw.Write(b); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	_, err := d.cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: dir, Content: &buf})
	return err
}
