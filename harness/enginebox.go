package harness

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"time"

	"github.com/moby/moby/api/types/container"
	dnetwork "github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/splitbrain/splitbrain/harness/engines"
	"github.com/splitbrain/splitbrain/internal/parallel"
	"github.com/splitbrain/splitbrain/targets"
)

// Engines in containers: Debian's Docker Engine, each in a container of
// this one, are the several engines of `make swarm` and of the tests, on
// one machine (docs/engines.md). Each is reached without TLS on a bridge
// network of its own run, which only this machine sees.

// boxPort is where an engine in a container answers.
const boxPort = 2375

// boxEntry starts the inner engine. A container sees its cgroup v1
// hierarchies read-only, and the inner engine makes cgroups of its own
// in them: each is mounted again, read-write, in the container's own
// cgroup namespace. containerd is started here, not by dockerd: dockerd
// gives the containerd it starts itself 15 s to answer and then exits,
// which an engine starting at a load of 17 overran (a cold .ci/run),
// while one given a containerd that answers waits for it. vfs is the one
// storage driver that needs nothing of the filesystem beneath it; the MTU
// leaves room for the outer network's.
var boxEntry = fmt.Sprintf(`#!/bin/sh
set -e
for dir in /sys/fs/cgroup/*/; do
	h=$(basename "$dir")
	case "$h" in
	unified) continue ;;
	systemd) opts=none,name=systemd ;;
	*) opts=$h ;;
	esac
	umount "/sys/fs/cgroup/$h"
	mount -t cgroup -o "$opts" cgroup "/sys/fs/cgroup/$h"
done
rm -f /run/containerd/containerd.sock
containerd &
containerd=$!
waited=0
until [ -S /run/containerd/containerd.sock ]; do
	kill -0 "$containerd" 2>/dev/null || { echo "containerd exited before it made its socket" >&2; exit 1; }
	[ "$waited" -lt 1200 ] || { echo "containerd made no socket in 120 s" >&2; exit 1; }
	sleep 0.1
	waited=$((waited + 1))
done
exec dockerd --containerd=/run/containerd/containerd.sock --storage-driver=vfs --mtu 1350 -H unix:///var/run/docker.sock -H tcp://0.0.0.0:%d
`, boxPort)

// boxImages are the engine's image and the images it stands on.
func boxImages() []heavyImage {
	images := debianImages(targets.DefaultDebianRelease, []string{"docker.io"})
	from := top(images).tag
	dockerfile := fmt.Sprintf("FROM %s\nCOPY entry.sh /usr/local/bin/engine-entry\nENTRYPOINT [\"/usr/local/bin/engine-entry\"]\n", from)
	hash := recipeHash(dockerfile, boxEntry)
	tag := "splitbrain/engine:" + hash
	return append(images, heavyImage{
		tag:    tag,
		making: "making the image of an engine in a container",
		make: func(ctx context.Context, d *Docker) error {
			return d.buildContext(ctx, tag, map[string]string{LabelRecipe: hash}, "Dockerfile",
				map[string][]byte{"Dockerfile": []byte(dockerfile), "entry.sh": []byte(boxEntry)})
		},
	})
}

// boxCaps are what an inner engine needs of the kernel: mounts (its
// cgroups, its containers' filesystems) and its own network rules, and
// what it grants the containers of a run in turn: a capability outside
// its own bounding set it cannot give (a clock sidecar's ptrace, a
// packet filter's network rules, the disk layer's mount). Never
// --privileged.
var boxCaps = []string{"SYS_ADMIN", "NET_ADMIN", "SYS_PTRACE"}

// StartEngines starts n engines in containers of run runID on a network
// of their own, waits until each answers, and returns them as an engines
// file, named e1 to en. Remove(runID's label) removes them.
func (d *Docker) StartEngines(ctx context.Context, runID string, n int) (engines.File, error) {
	images := boxImages()
	if err := d.cached(ctx, images...); err != nil {
		return engines.File{}, err
	}
	netName, _, err := d.newNetwork(ctx, runID, func(ipam *dnetwork.IPAM) (string, string, error) {
		name := "splitbrain-" + runID + "-engines"
		if ipam == nil {
			name += "-probe"
		}
		res, err := d.cli.NetworkCreate(ctx, name, client.NetworkCreateOptions{Driver: "bridge", Labels: runLabels(runID, ""), IPAM: ipam})
		return res.ID, name, err
	})
	if err != nil {
		return engines.File{}, err
	}
	f := engines.File{MTU: engines.DefaultMTU, Engines: make([]engines.Engine, n)}
	for i := range f.Engines {
		f.Engines[i].Name = "e" + strconv.Itoa(i+1)
	}
	each := make([]int, n)
	for i := range each {
		each[i] = i
	}
	err = parallel.First(each, func(i int) error {
		e := &f.Engines[i] // each call fills its own engine's host
		ip, err := d.startBox(ctx, runID, e.Name, top(images).tag, netName)
		if err != nil {
			return fmt.Errorf("engine %s: %v", e.Name, err)
		}
		e.Host = "tcp://" + netip.AddrPortFrom(ip, boxPort).String()
		return nil
	})
	if err != nil {
		return engines.File{}, err
	}
	return f, f.Validate()
}

// startBox starts the engine name and waits until it answers; it
// returns its address.
func (d *Docker) startBox(ctx context.Context, runID, name, image, netName string) (netip.Addr, error) {
	res, err := d.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name:   "splitbrain-" + runID + "-" + name,
		Config: &container.Config{Image: image, Hostname: name, Labels: runLabels(runID, name)},
		HostConfig: &container.HostConfig{
			CapAdd:       boxCaps,
			SecurityOpt:  []string{"seccomp=unconfined", "apparmor=unconfined"},
			CgroupnsMode: container.CgroupnsModePrivate,
			NetworkMode:  container.NetworkMode(netName),
			// The disk-fault layer's FUSE, for its containers.
			Resources: container.Resources{Devices: []container.DeviceMapping{{PathOnHost: fuseDevice, PathInContainer: fuseDevice, CgroupPermissions: "rwm"}}},
		},
	})
	if err != nil {
		return netip.Addr{}, err
	}
	if _, err := d.cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		return netip.Addr{}, err
	}
	ipStr, err := d.IP(ctx, res.ID, netName)
	if err != nil {
		return netip.Addr{}, err
	}
	ip, err := netip.ParseAddr(ipStr)
	if err != nil {
		return netip.Addr{}, err
	}
	inner, err := client.New(client.WithHost("tcp://" + netip.AddrPortFrom(ip, boxPort).String()))
	if err != nil {
		return netip.Addr{}, err
	}
	defer inner.Close()
	deadline := time.Now().Add(time.Minute)
	for {
		_, perr := inner.Ping(ctx, client.PingOptions{})
		if perr == nil {
			return ip, nil
		}
		if exited, code := d.Exited(ctx, res.ID); exited {
			logs, _ := d.Logs(ctx, res.ID)
			return netip.Addr{}, fmt.Errorf("exited with %d: %s", code, tail(logs, 5))
		}
		if time.Now().After(deadline) {
			return netip.Addr{}, fmt.Errorf("does not answer after a minute: %v", perr)
		}
		select {
		case <-ctx.Done():
			return netip.Addr{}, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
