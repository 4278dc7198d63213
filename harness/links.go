package harness

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"

	"github.com/splitbrain/splitbrain/internal/parallel"
	"github.com/splitbrain/splitbrain/nemesis"
	"github.com/splitbrain/splitbrain/nemesis/netfilter"
	"github.com/splitbrain/splitbrain/targets"
)

// Links between containers are cut by the packet filters of the nodes
// and, in a run that may draw a fault on a service's links
// (nemesis.Fault.FiltersServices), of the service members in containers
// of their own: each gets a sidecar as a node does. The resource never
// has one.

// filterRules turns g into the rules of each packet filter. filterOf
// names the container whose filter a container's traffic passes through
// (itself, or the node a member is beside), "" for one with none.
//
//   - All: the holder drops what the peer sends it, and, unless the peer
//     drops the holder's packets itself (it lists the holder too, and has
//     a filter), what it sends the peer: otherwise its requests on a
//     connection already open would still arrive.
//   - Initiated: the holder drops the peer's packets on connections the
//     peer opened.
//   - In: the holder drops what the peer sends it, one way; a holder
//     with no filter (the resource) has the peer drop it on its way out.
//   - New: the holder refuses the peer's new connections; that needs a
//     filter at the holder.
//
// A host is never cut from itself: an address equal to the holder's is
// left out (a node and the member beside it).
func filterRules(g nemesis.Grudge, ips map[string]netip.Addr, filterOf func(string) string) (map[string]netfilter.Rules, error) {
	rules := map[string]*netfilter.Rules{}
	at := func(filter string) *netfilter.Rules {
		if rules[filter] == nil {
			rules[filter] = &netfilter.Rules{}
		}
		return rules[filter]
	}
	var err error
	addr := func(name string) netip.Addr {
		ip, ok := ips[name]
		if !ok && err == nil {
			err = fmt.Errorf("no address for %s", name)
		}
		return ip
	}
	for _, holder := range slices.Sorted(maps.Keys(g)) {
		d, self, filter := g[holder], addr(holder), filterOf(holder)
		for _, peer := range d.All {
			if ip := addr(peer); filter != "" && ip != self {
				r := at(filter)
				r.Drop = append(r.Drop, ip)
				if filterOf(peer) == "" || !slices.Contains(g[peer].All, holder) {
					r.DropTo = append(r.DropTo, ip)
				}
			}
		}
		for _, peer := range d.Initiated {
			if ip := addr(peer); filter != "" && ip != self {
				at(filter).DropInitiated = append(at(filter).DropInitiated, ip)
			}
		}
		for _, peer := range d.In {
			ip := addr(peer)
			switch sender := filterOf(peer); {
			case ip == self:
			case filter != "":
				at(filter).Drop = append(at(filter).Drop, ip)
			case sender != "":
				at(sender).DropTo = append(at(sender).DropTo, self)
			default:
				return nil, fmt.Errorf("neither %s nor %s has a packet filter to drop what %s sends %s", holder, peer, peer, holder)
			}
		}
		for _, peer := range d.New {
			ip := addr(peer)
			switch {
			case ip == self:
			case filter == "":
				return nil, fmt.Errorf("%s has no packet filter to refuse the connections of %s", holder, peer)
			default:
				at(filter).DropNew = append(at(filter).DropNew, ip)
			}
		}
	}
	out := make(map[string]netfilter.Rules, len(rules))
	for f, r := range rules {
		out[f] = *r
	}
	return out, err
}

// filterOf is the container whose packet filter name's traffic passes
// through: name's own sidecar's, or the node's a member is beside; ""
// for a container with none.
func (c *cluster) filterOf(sidecars map[string]string) func(string) string {
	return func(name string) string {
		if host, ok := c.beside[name]; ok {
			name = host
		}
		if _, ok := sidecars[name]; ok {
			return name
		}
		return ""
	}
}

// ServiceClusters are the target's services as the run placed them.
func (c *cluster) ServiceClusters() []nemesis.ServiceCluster { return c.serviceClusters }

// Zones is the target's number of zones.
func (c *cluster) Zones() int { return c.zones }

// ServiceLeader runs the service's leader command (its manifest's
// leader) in every member at once and names the one where it exits 0:
// "" when the manifest gives none, or when no member, or more than one,
// says it leads (an election under way).
func (c *cluster) ServiceLeader(ctx context.Context, service string) string {
	cmd := c.leaderCommands[service]
	i := slices.IndexFunc(c.serviceClusters, func(s nemesis.ServiceCluster) bool { return s.Name == service })
	if len(cmd) == 0 || i < 0 {
		return ""
	}
	members := c.serviceClusters[i].Members
	leads := parallel.Do(members, func(m string) error {
		c.mu.RLock()
		id := c.ids[m]
		c.mu.RUnlock()
		code, _, err := c.on(m).Exec(ctx, id, cmd)
		if err == nil && code != 0 {
			err = fmt.Errorf("exit %d", code)
		}
		return err
	})
	leader := ""
	for j, err := range leads {
		if err == nil {
			if leader != "" {
				return ""
			}
			leader = members[j]
		}
	}
	return leader
}

// serviceClusters places the manifest's services for a run of nodes
// nodes, as the nemesis sees them.
func serviceClusters(m targets.Manifest, nodes int) []nemesis.ServiceCluster {
	var out []nemesis.ServiceCluster
	for _, s := range m.Services {
		sc := nemesis.ServiceCluster{Name: s.Name}
		for _, p := range s.Placed(nodes) {
			sc.Members = append(sc.Members, p.Name)
			sc.Hosts = append(sc.Hosts, p.Node)
		}
		out = append(out, sc)
	}
	return out
}

// filtersServices says whether the plan may draw a fault that cuts links
// at the service members' own containers, which then get packet filters.
func (r *run) filtersServices() bool {
	return slices.ContainsFunc(r.faults, func(f nemesis.Fault) bool { return f.FiltersServices })
}
