package nemesis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// Way is how a cut link fails: both ways, or one way at the packet or the
// connection level.
type Way string

// Ways of cutting a link.
const (
	// Both: every packet either way is dropped.
	Both Way = "both"
	// Packets: every packet From sends To is dropped on its way (one way,
	// at the packet level); To's packets still reach From, on connections
	// either side opened.
	Packets Way = "packets"
	// Connections: the new connections From opens to To are refused (one
	// way, at the connection level: conntrack's state new); connections
	// already open go on, and To still opens connections to From.
	Connections Way = "connections"
)

// Links are the links a fault acts on: every link between a container of
// From and one of To (nodes, a service's members, the resource), cut the
// Way it says. A container in both sets is never cut from itself.
type Links struct {
	From, To []string
	Way      Way
}

// Grudge is what each container drops to cut l: both ends drop each
// other's packets for Both, the receiver drops the sender's for a one-way
// cut. Every container of l is named, with empty Drops where it drops
// nothing, so that String sees both sides.
func (l Links) Grudge() Grudge {
	g := Grudge{}
	for _, n := range l.From {
		g[n] = g[n]
	}
	for _, n := range l.To {
		g[n] = g[n]
	}
	add := func(holder string, list func(*Drops) *[]string, peer string) {
		d := g[holder]
		*list(&d) = append(*list(&d), peer)
		g[holder] = d
	}
	all := func(d *Drops) *[]string { return &d.All }
	in := func(d *Drops) *[]string { return &d.In }
	fresh := func(d *Drops) *[]string { return &d.New }
	for _, a := range l.From {
		for _, b := range l.To {
			if a == b {
				continue
			}
			switch l.Way {
			case Both:
				add(a, all, b)
				add(b, all, a)
			case Packets:
				add(b, in, a)
			case Connections:
				add(b, fresh, a)
			}
		}
	}
	return g.Merge(nil)
}

// String says l in the words of the history: which way what is dropped.
func (l Links) String() string {
	from, to := strings.Join(l.From, ","), strings.Join(l.To, ",")
	switch l.Way {
	case Packets:
		return fmt.Sprintf("%s -/-> %s at the packet level: every packet from %s to %s is dropped; those from %s to %s arrive", from, to, from, to, to, from)
	case Connections:
		return fmt.Sprintf("%s -/-> %s at the connection level: new connections from %s to %s are refused (conntrack state new); connections already open, and new ones from %s to %s, go on", from, to, from, to, to, from)
	}
	return from + " | " + to
}

// ServiceCluster is one of the target's services as faults see it: its
// name and its members, in manifest order, with the node each member
// shares a host with ("" for a member in a container of its own).
type ServiceCluster struct {
	Name    string
	Members []string
	Hosts   []string
}

// Split cuts members into a minority and a majority: the leader alone when
// it is known (one of members), else a random minority of at least one.
func Split(members []string, leader string, rng *rand.Rand) (minority, majority []string) {
	if slices.Contains(members, leader) {
		return []string{leader}, slices.DeleteFunc(slices.Clone(members), func(m string) bool { return m == leader })
	}
	s := shuffledNodes(members, rng)
	k := max(1, (len(s)-1)/2)
	return s[:k], s[k:]
}

// Zones spreads nodes and the services' members over count zones, round
// robin: node i (from 0) to zone i mod count, and each service's member j
// to zone j mod count, so every zone holds a share of each. A member beside
// a node is in its node's zone: they share a host.
func Zones(nodes []string, services []ServiceCluster, count int) [][]string {
	zones := make([][]string, count)
	zoneOf := map[string]int{}
	for i, n := range nodes {
		zones[i%count] = append(zones[i%count], n)
		zoneOf[n] = i % count
	}
	for _, s := range services {
		for j, m := range s.Members {
			z := j % count
			if host := s.hostOf(j); host != "" {
				z = zoneOf[host]
			}
			zones[z] = append(zones[z], m)
		}
	}
	return zones
}

func (s ServiceCluster) hostOf(i int) string {
	if i < len(s.Hosts) {
		return s.Hosts[i]
	}
	return ""
}

// Apart reports whether every member of s is in a container of its own
// (none beside a node): only those can be cut from one another without
// cutting their hosts.
func (s ServiceCluster) Apart() bool {
	return !slices.ContainsFunc(s.Hosts, func(h string) bool { return h != "" })
}

// Rest is every name of zones that is not in zones[i].
func Rest(zones [][]string, i int) []string {
	var out []string
	for j, z := range zones {
		if j != i {
			out = append(out, z...)
		}
	}
	return out
}
