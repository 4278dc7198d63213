package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/splitbrain/splitbrain/nemesis"
	"github.com/splitbrain/splitbrain/nemesis/netfilter"
)

// Impair replaces the packet fault in effect by how on the links of g,
// through the same sidecars and in the same rules as partitions.
func (c *cluster) Impair(ctx context.Context, g nemesis.Grudge, how nemesis.Impairment) error {
	c.mu.Lock()
	c.impaired, c.impairment = g, how
	c.mu.Unlock()
	return c.filter(ctx)
}

// impairOf is one node's part of impairment how on its links to names.
// Each direction of a link is impaired once. A share lost and a delay
// act where a packet arrives, as partitions drop it: a node impairs what
// every peer sends it, and what it sends a peer with no filter of its
// own (a service member, the resource); dropped where it is sent, a
// datagram's send would fail at once, which no lossy network does. A
// bandwidth bounds what a node sends (egress is where a queue can hold
// it): what a service or the resource sends is not slowed.
func (c *cluster) impairOf(names []string, how nemesis.Impairment, addrs func([]string) ([]netip.Addr, error)) (netfilter.Impairment, error) {
	if len(names) == 0 {
		return netfilter.Impairment{}, nil
	}
	m := netfilter.Impairment{LossPercent: how.LossPercent, Delay: how.Delay, Jitter: how.Jitter, Rate: how.Rate}
	var err error
	if how.Rate > 0 {
		m.To, err = addrs(names)
		return m, err
	}
	// A member beside a node is filtered by its host's sidecar, which
	// impairs what arrives there: impaired on this side's output too,
	// the link would be impaired twice.
	alone := c.unimpaired(names)
	if m.From, err = addrs(names); err == nil {
		m.To, err = addrs(alone)
	}
	return m, err
}

// packetFaults are the plan's faults that stand on a kernel mechanism
// of the packet filter's (loss, delay, bandwidth).
func (r *run) packetFaults() []nemesis.Fault {
	var out []nemesis.Fault
	for _, f := range r.faults {
		if f.Needs != "" {
			out = append(out, f)
		}
	}
	return out
}

// probePackets runs the packet filter's probe in a throwaway container of
// its own (no network, NET_ADMIN) before anything else starts, when the
// plan impairs packets: a mechanism the kernel lacks is bad input that
// names it and the fault; what the run uses is noted in run.json.
func (r *run) probePackets(ctx context.Context) error {
	faults := r.packetFaults()
	if len(faults) == 0 {
		return nil
	}
	code, out, err := r.docker.runToEnd(ctx, r.info.ID, "netfilter-probe",
		&container.Config{Image: netfilterImage, Cmd: []string{"-probe"}},
		&container.HostConfig{NetworkMode: "none", CapAdd: []string{"NET_ADMIN"}})
	if err != nil {
		// A sidecar of a tree that has no probe serves instead of
		// answering: an image another checkout built under the same tag.
		return fmt.Errorf("packet probe (%s -probe): %v", netfilterImage, err)
	}
	var p netfilter.Probed
	if code != 0 || json.Unmarshal(lastLine(out), &p) != nil {
		return fmt.Errorf("packet probe exited %d: %s", code, strings.TrimSpace(tail(out, 3)))
	}
	note, err := packetNote(p, faults)
	if err != nil {
		return err
	}
	r.info.Notes = append(r.info.Notes, note)
	return nil
}

// packetNote says, from what the probe found, which mechanism each packet
// fault uses and whether the kernel has netem, or refuses the first fault
// whose mechanism the kernel lacks: bad input naming both.
func packetNote(p netfilter.Probed, faults []nemesis.Fault) (string, error) {
	lacks := map[nemesis.Mechanism]string{nemesis.MechNumgen: p.Loss, nemesis.MechQueue: p.Delay, nemesis.MechShaper: p.Rate}
	var used []string
	for _, f := range faults {
		if why := lacks[f.Needs]; why != "" {
			return "", badInput("--nemesis %s: this kernel lacks %s: %s", f.Name, f.Needs, why)
		}
		used = append(used, f.Name+" by "+string(f.Needs))
	}
	slices.Sort(used)
	netem := "this kernel has no netem (sch_netem)"
	if p.Netem {
		netem = "this kernel has netem, which splitbrain leaves aside so that runs on every kernel impair packets alike"
	}
	return fmt.Sprintf("packet faults: %s; %s", netem, strings.Join(used, "; ")), nil
}

// lastLine is the last non-empty line of out.
func lastLine(out []byte) []byte {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return []byte(lines[len(lines)-1])
}
