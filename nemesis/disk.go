package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// Disk faults act on the data directories a target's manifest declares
// for its nodes or its services' members, through a filesystem layer
// between the programs and their files (nemesis/diskfs): a disk that
// stalls (every write and fsync waits until healed, as a leader's stuck
// in fdatasync does), a disk that fails (EIO, or ENOSPC when full), and a
// power cut, which kills containers and loses every write they had not
// synced.

// Disk states a node's disk can be put in.
type Disk struct {
	Stall bool
	Fail  string // "EIO" or "ENOSPC"; "" does not fail
}

// Errors a failing disk gives.
const (
	DiskIO   = "EIO"
	DiskFull = "ENOSPC"
)

// Disk says whether a fault of kind k needs the filesystem layer.
func (k Kind) Disk() bool { return k == DiskStall || k == DiskFail || k == LoseUnsynced }

// diskFault puts the disks of the nodes t aims at in state d, healthy
// again at heal.
func diskFault(kind Kind, t Target, d Disk, name string) Fault {
	aim, onServices, family := aimed(kind, t)
	if name == "" {
		name = aim
	}
	return Fault{Name: name, Kind: kind, OnServices: onServices, Family: family, inject: func(ctx context.Context, c Cluster, rng *rand.Rand) (Applied, error) {
		nodes := withDisks(c, t, rng)
		if len(nodes) == 0 {
			return Applied{}, fmt.Errorf("%s: no service member has data directories", name)
		}
		what := strings.Join(nodes, ", ")
		if l := c.Leader(); slices.Contains(nodes, l) {
			what += " (leader " + l + ")"
		}
		if d.Stall {
			what = "disk stalled on " + what
		} else {
			what = fmt.Sprintf("disk failing with %s on %s", d.Fail, what)
		}
		set := func(ctx context.Context, d Disk) error {
			return forEach(nodes, func(n string) error { return c.SetDisk(ctx, n, d) })
		}
		a := Applied{Nodes: nodes, What: what, Heal: func(ctx context.Context) error { return set(ctx, Disk{}) }}
		return a, set(ctx, d)
	}}
}

// powerCut kills the nodes t aims at and loses every write they had not
// synced, started again at heal.
func powerCut(t Target) Fault {
	return hostFault(LoseUnsynced, t, withDisks, "power cut to", Cluster.PowerCut, Cluster.Restart)
}

// withDisks are the containers t aims at among those the disk-fault
// layer reaches: any node, or the service members with data
// directories.
func withDisks(c Cluster, t Target, rng *rand.Rand) []string {
	share, ok := serviceTargets[t]
	if !ok {
		return choose(c, t, rng)
	}
	members := slices.DeleteFunc(slices.Clone(c.Services()), func(m string) bool { return len(c.Data(m)) == 0 })
	return pick(members, share, rng)
}
