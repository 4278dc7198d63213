package nemesis

import (
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
)

// GrudgeResource is the name a Grudge uses for the resource container, so a
// node can be cut from the resource alone.
const GrudgeResource = "resource"

// Drops is what one node's packet filter drops.
type Drops struct {
	// All lists the containers this node is cut from: it drops every
	// packet they send it, which also stops it opening connections to them.
	// A node on the other side drops its own half (the shapes below list
	// both); a service or the resource cannot, so for those the harness
	// drops this node's packets to them as well.
	All []string `json:"all,omitempty"`
	// Initiated lists nodes whose packets this node drops only on connections
	// they initiated (conntrack direction original): they cannot open
	// connections to this node, while this node can still reach them.
	Initiated []string `json:"initiated,omitempty"`
	// In lists containers whose packets this one drops on receipt, and
	// only those: a cut one way at the packet level (Links, Packets). What
	// this one sends them still arrives. When this container has no packet
	// filter (the resource), the harness drops them at the senders instead.
	In []string `json:"in,omitempty"`
	// New lists containers whose new connections to this one it refuses
	// (conntrack state new): a cut one way at the connection level (Links,
	// Connections). Connections already open go on, and this one still
	// opens connections to them.
	New []string `json:"new,omitempty"`
}

func (d Drops) empty() bool {
	return len(d.All) == 0 && len(d.Initiated) == 0 && len(d.In) == 0 && len(d.New) == 0
}

// Grudge maps a node name to what it drops. Nodes absent from the map drop
// nothing. The shapes below also list every node they were given, with empty
// Drops where it drops nothing, so that String can name the nodes that still
// see everyone (the bridge of Bridge, say); use Nodes for the ones with rules.
type Grudge map[string]Drops

// Nodes returns the sorted names of the nodes that drop anything.
func (g Grudge) Nodes() []string {
	var out []string
	for n, d := range g {
		if !d.empty() {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// Merge returns the union of g and o, each list deduplicated and sorted, for
// faults that are in effect together.
func (g Grudge) Merge(o Grudge) Grudge {
	out := Grudge{}
	for _, src := range []Grudge{g, o} {
		for n, d := range src {
			cur := out[n]
			cur.All = append(cur.All, d.All...)
			cur.Initiated = append(cur.Initiated, d.Initiated...)
			cur.In = append(cur.In, d.In...)
			cur.New = append(cur.New, d.New...)
			out[n] = cur
		}
	}
	for n, d := range out {
		out[n] = Drops{All: sortedSet(d.All), Initiated: sortedSet(d.Initiated), In: sortedSet(d.In), New: sortedSet(d.New)}
	}
	return out
}

// sortedSet returns the distinct names in s, sorted, nil when there are none
// (so that equal grudges compare equal).
func sortedSet(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// Components cuts the nodes into components: every node drops all nodes
// outside its component. Parts are normally disjoint; a node listed in several
// parts sees all of them, which is how Bridge keeps its bridge node.
func Components(parts ...[]string) Grudge {
	sees := map[string]map[string]bool{}
	for _, p := range parts {
		for _, a := range p {
			if sees[a] == nil {
				sees[a] = map[string]bool{}
			}
			for _, b := range p {
				sees[a][b] = true
			}
		}
	}
	all := slices.Sorted(maps.Keys(sees))
	g := Grudge{}
	for _, a := range all {
		var d Drops
		for _, b := range all {
			if !sees[a][b] {
				d.All = append(d.All, b)
			}
		}
		g[a] = d
	}
	return g
}

// IsolateNode cuts victim off from every other node, both ways.
func IsolateNode(nodes []string, victim string) Grudge {
	rest := slices.DeleteFunc(slices.Clone(nodes), func(n string) bool { return n == victim })
	return Components([]string{victim}, rest)
}

// Isolated cuts every node off from every other node, both ways: each is a
// component of one, so no side holds a quorum and nobody can be elected
// until it heals. Nodes can still reach the resource.
func Isolated(nodes []string) Grudge {
	parts := make([][]string, len(nodes))
	for i, n := range nodes {
		parts[i] = []string{n}
	}
	return Components(parts...)
}

// shuffledNodes returns the nodes sorted and then shuffled by rng, so the
// result depends only on the set of nodes and the generator's state.
func shuffledNodes(nodes []string, rng *rand.Rand) []string {
	s := slices.Clone(nodes)
	slices.Sort(s)
	rng.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	return s
}

// RandomHalves cuts the nodes into two random halves of floor(n/2) and the
// rest, so that for odd n one side keeps a majority.
func RandomHalves(nodes []string, rng *rand.Rand) Grudge {
	s := shuffledNodes(nodes, rng)
	return Components(s[:len(s)/2], s[len(s)/2:])
}

// Bridge cuts the nodes into two halves that cannot see each other, joined by
// one random bridge node that sees both (Jepsen's bridge). The halves get
// floor((n-1)/2) nodes and the rest; with 5 nodes each half plus the bridge is
// a bare majority, which is what makes two leaders tempting. Fewer than 3
// nodes cannot form a bridge, and give an empty grudge.
func Bridge(nodes []string, rng *rand.Rand) Grudge {
	if len(nodes) < 3 {
		return Grudge{}
	}
	s := shuffledNodes(nodes, rng)
	bridge, rest := s[0], s[1:]
	half := len(rest) / 2
	return Components(
		append([]string{bridge}, rest[:half]...),
		append([]string{bridge}, rest[half:]...),
	)
}

// MajoritiesRing is Jepsen's majorities ring: every node sees a bare majority
// (n/2+1 nodes, itself included) and for n >= 5 no two nodes see the same one,
// so many nodes may each believe they are in the majority.
//
// Unlike Jepsen's, seeing is symmetric by construction (a sees b iff b sees
// a), so the grudge says what the network really does: a node dropping all of
// a peer's packets breaks the link both ways anyway. The nodes are shuffled
// onto a ring and with k = n/2 others to see:
//   - k even: each node sees the k/2 nearest nodes on each side;
//   - k odd, n even: the (k-1)/2 nearest on each side and the node opposite;
//   - k odd, n odd (n = 3, 7, 11, ...): the (k-1)/2 nearest on each side, plus
//     a partner along the chords of length k, which form one cycle through
//     all nodes; its nodes are paired in order and, n being odd, the last one
//     is paired with the first, which sees n/2+2 nodes. Every node seeing
//     exactly n/2 others would take n*(n/2) endpoints, an odd number, which no
//     symmetric relation has. For n = 3 this is a line a-b-c: b sees both.
//
// For n = 4 every node drops just the node opposite; n <= 2 drops nothing.
func MajoritiesRing(nodes []string, rng *rand.Rand) Grudge {
	ring := shuffledNodes(nodes, rng)
	n, k := len(ring), len(ring)/2
	sees := make([][]bool, n)
	for i := range sees {
		sees[i] = make([]bool, n)
		sees[i][i] = true
	}
	link := func(i, j int) { sees[i][j], sees[j][i] = true, true }
	for i := range n {
		for d := 1; d <= k/2; d++ {
			link(i, (i+d)%n)
		}
	}
	switch {
	case k%2 == 0:
	case n%2 == 0:
		for i := range n / 2 {
			link(i, i+n/2)
		}
	default:
		// k = (n-1)/2 is coprime with n, so stepping by k visits every node.
		order := make([]int, n)
		for i := 1; i < n; i++ {
			order[i] = (order[i-1] + k) % n
		}
		for i := 0; i+1 < n; i += 2 {
			link(order[i], order[i+1])
		}
		link(order[n-1], order[0])
	}
	g := Grudge{}
	for i, a := range ring {
		var d Drops
		for j, b := range ring {
			if !sees[i][j] {
				d.All = append(d.All, b)
			}
		}
		d.All = sortedSet(d.All)
		g[a] = d
	}
	return g
}

// OneWay stops from opening connections to any other node, while they can
// still reach it: every other node drops from's packets on connections from
// initiated.
func OneWay(nodes []string, from string) Grudge {
	g := Grudge{from: {}}
	for _, n := range nodes {
		if n != from {
			g[n] = Drops{Initiated: []string{from}}
		}
	}
	return g
}

// CutFromResource cuts node from the resource, and nothing else: it still
// talks to its peers but cannot use (or renew its hold on) the resource.
func CutFromResource(node string) Grudge { return CutFrom(node, GrudgeResource) }

// CutFrom cuts node from the containers named, both ways, and nothing
// else. String names only a cut from the resource as such; a
// fault that cuts a node from other containers describes that itself.
func CutFrom(node string, containers ...string) Grudge {
	return Grudge{node: {All: containers}}
}

// String describes g in a few words for the history: components as
// "n1 | n2 n3", a bridge as "n1 n2 | n4 n5 (bridged by n3)", anything else
// between nodes as what each node can still talk to, then resource cuts and
// one-way cuts, joined by "; ".
func (g Grudge) String() string {
	var parts []string
	if s := g.linksString(); s != "" {
		parts = append(parts, s)
	}
	var cut []string
	blocked := map[string][]string{} // node -> nodes refusing its connections
	lost := map[string][]string{}    // container -> those dropping its packets, one way
	refused := map[string][]string{} // container -> those refusing its new connections
	for n, d := range g {
		if slices.Contains(d.All, GrudgeResource) {
			cut = append(cut, n)
		}
		for _, f := range d.Initiated {
			blocked[f] = append(blocked[f], n)
		}
		for _, f := range d.In {
			lost[f] = append(lost[f], n)
		}
		for _, f := range d.New {
			refused[f] = append(refused[f], n)
		}
	}
	if len(cut) > 0 {
		parts = append(parts, strings.Join(sortedSet(cut), ",")+" cut from the resource")
	}
	for _, f := range slices.Sorted(maps.Keys(blocked)) {
		to := strings.Join(sortedSet(blocked[f]), ",")
		parts = append(parts, f+" -/-> "+to+" ("+to+" -> "+f+" still works)")
	}
	for _, way := range []struct {
		cut map[string][]string
		way Way
	}{{lost, Packets}, {refused, Connections}} {
		for _, f := range slices.Sorted(maps.Keys(way.cut)) {
			parts = append(parts, Links{From: []string{f}, To: sortedSet(way.cut[f]), Way: way.way}.String())
		}
	}
	if len(parts) == 0 {
		return "no partition"
	}
	return strings.Join(parts, "; ")
}

// linksString describes the drops between nodes (not the resource, not
// one-way), or returns "" if there are none. It goes by who can still talk
// to whom: since All drops every packet, a drop either way cuts the link.
func (g Grudge) linksString() string {
	drops := map[string]map[string]bool{}
	set := map[string]bool{}
	found := false
	for a, d := range g {
		if a == GrudgeResource {
			continue
		}
		set[a] = true
		for _, b := range d.All {
			if b == GrudgeResource {
				continue
			}
			set[b] = true
			if drops[a] == nil {
				drops[a] = map[string]bool{}
			}
			drops[a][b], found = true, true
		}
	}
	if !found {
		return ""
	}
	nodes := slices.Sorted(maps.Keys(set))
	talk := func(a, b string) bool { return !drops[a][b] && !drops[b][a] }

	if comps, ok := components(nodes, talk); ok {
		return joinComponents(comps)
	}
	// A bridge: nodes that talk to everyone, joining components.
	var bridges, rest []string
	for _, a := range nodes {
		if len(drops[a]) == 0 && !slices.ContainsFunc(nodes, func(b string) bool { return drops[b][a] }) {
			bridges = append(bridges, a)
		} else {
			rest = append(rest, a)
		}
	}
	if comps, ok := components(rest, talk); ok && len(bridges) > 0 {
		return joinComponents(comps) + " (bridged by " + strings.Join(bridges, ",") + ")"
	}
	var each []string
	for _, a := range nodes {
		var peers []string
		for _, b := range nodes {
			if a != b && talk(a, b) {
				peers = append(peers, b)
			}
		}
		if len(peers) == 0 {
			each = append(each, a+" sees nobody")
		} else {
			each = append(each, a+" sees "+strings.Join(peers, ","))
		}
	}
	return strings.Join(each, "; ")
}

// components groups the sorted nodes by talk and reports whether talk is a
// complete partition (every node talks to exactly its own group).
func components(nodes []string, talk func(a, b string) bool) ([][]string, bool) {
	group := map[string]int{}
	var comps [][]string
	for _, a := range nodes {
		if _, done := group[a]; done {
			continue
		}
		c := []string{a}
		group[a] = len(comps)
		for _, b := range nodes {
			if _, done := group[b]; !done && talk(a, b) {
				c = append(c, b)
				group[b] = len(comps)
			}
		}
		comps = append(comps, c)
	}
	for _, a := range nodes {
		for _, b := range nodes {
			if a != b && talk(a, b) != (group[a] == group[b]) {
				return nil, false
			}
		}
	}
	return comps, true
}

func joinComponents(comps [][]string) string {
	s := make([]string, len(comps))
	for i, c := range comps {
		s[i] = strings.Join(c, " ")
	}
	return strings.Join(s, " | ")
}
