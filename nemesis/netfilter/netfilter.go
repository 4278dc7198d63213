// Package netfilter applies a node's partition rules in its own network namespace, in a table of splitbrain's own.
//
// It runs inside the namespace it filters: in practice in a sidecar container
// started with --network container:<node> and --cap-add NET_ADMIN, so target
// images need no tools of ours and nothing on the host is ever changed.
//
// Everything lives in one table, inet "splitbrain". Docker keeps NAT rules for
// its embedded DNS server (127.0.0.11) in every container's namespace, so this
// package never flushes the ruleset and never touches any other table.
//
// Only IPv4 is supported: splitbrain's networks are IPv4 bridges. IPv6
// addresses are rejected rather than silently ignored, and the rules match
// IPv4 packets only, so IPv6 traffic is never dropped.
package netfilter

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
)

// Table is the name of splitbrain's nftables table (family inet).
const Table = "splitbrain"

// Port is the TCP port the sidecar serves Handler on, inside the node's
// network namespace.
const Port = 7979

// The base chains in Table: what a node receives is filtered on input, what
// it sends on output.
const (
	inputChain  = "input"
	outputChain = "output"
)

// Rules is what one node drops.
type Rules struct {
	// Drop: every packet from these sources (input hook). On its own this
	// cuts TCP both ways (the SYN-ACK from a peer is dropped too), but a
	// datagram this node sends still arrives, and so does what it sends on a
	// connection already open: apply Drop on both sides for a symmetric
	// partition, or add DropTo where the other side cannot filter.
	Drop []netip.Addr `json:"drop,omitempty"`
	// DropInitiated: packets from these sources on connections THEY
	// initiated (ct direction original): they cannot open connections to
	// us, we can still reach them. Connections they had already opened stall
	// too, as their packets are in the original direction.
	DropInitiated []netip.Addr `json:"drop_initiated,omitempty"`
	// DropTo: every packet this node sends to these destinations (output
	// hook), so that an open connection stalls in both directions when the
	// peer has no packet filter of its own. TCP retransmits as it would into
	// a lost network; a datagram's send fails at once (EPERM), as it never
	// would on a real network, which is why partitions between nodes use
	// Drop on both sides instead.
	DropTo []netip.Addr `json:"drop_to,omitempty"`
	// Impair: packets lost, delayed or slowed on some links, after the
	// drops (a packet dropped is never impaired).
	Impair Impairment `json:"impair,omitzero"`
}

// Empty reports whether r drops nothing.
func (r Rules) Empty() bool {
	return len(r.Drop) == 0 && len(r.DropInitiated) == 0 && len(r.DropTo) == 0 && r.Impair.empty()
}

// String renders r on one line, for logs.
func (r Rules) String() string {
	s := "drop=" + addrList(r.Drop) + " drop_initiated=" + addrList(r.DropInitiated) + " drop_to=" + addrList(r.DropTo)
	if !r.Impair.empty() {
		s += " impair: " + r.Impair.String()
	}
	return s
}

// normalize checks every address and returns r with IPv4-mapped IPv6
// addresses unmapped, each list sorted and deduplicated, so that Current
// reads back exactly what Apply was given after normalizing.
func (r Rules) normalize() (Rules, error) {
	var errs []error
	clean := func(field string, as []netip.Addr) []netip.Addr {
		out := make([]netip.Addr, 0, len(as))
		for _, a := range as {
			a = a.Unmap()
			switch {
			case !a.IsValid():
				errs = append(errs, fmt.Errorf("%s: invalid (zero) address", field))
			case !a.Is4():
				errs = append(errs, fmt.Errorf("%s: %s is not an IPv4 address (only IPv4 is supported)", field, a))
			default:
				out = append(out, a)
			}
		}
		slices.SortFunc(out, netip.Addr.Compare)
		out = slices.Compact(out)
		if len(out) == 0 {
			return nil
		}
		return out
	}
	n := Rules{Drop: clean("drop", r.Drop), DropInitiated: clean("drop_initiated", r.DropInitiated), DropTo: clean("drop_to", r.DropTo), Impair: r.Impair}
	n.Impair.To, n.Impair.From = clean("impair.to", r.Impair.To), clean("impair.from", r.Impair.From)
	return n, errors.Join(append(errs, n.Impair.validate())...)
}

// Validate reports whether Apply would accept r (IPv4 addresses only).
func (r Rules) Validate() error {
	_, err := r.normalize()
	return err
}

// mu serializes this process's changes and reads, so that Current never
// reads a table halfway between the list and the dump of a concurrent Apply.
var mu sync.Mutex

var table = &nftables.Table{Name: Table, Family: nftables.TableFamilyINet}

// Apply replaces the table's content with r, atomically: one netlink batch
// that removes our table if present and recreates it with two chains, 'input'
// and 'output' (type filter, priority filter, policy accept), and the rules.
// The kernel commits a batch as one transaction, so there is never a moment
// with the old rules gone and the new ones not yet in place. Empty rules
// remove the table. An impairment's queue holder and shaper are in place
// before the rules send packets their way, and go once no rule does.
func Apply(r Rules) error {
	n, err := r.normalize()
	if err != nil {
		return err
	}
	if n.Empty() {
		return Clear()
	}
	mu.Lock()
	defer mu.Unlock()

	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("netfilter: %w", err)
	}
	if err := plumbing.prepare(n.Impair); err != nil {
		return fmt.Errorf("netfilter: impair %s: %w", n.Impair, err)
	}
	resetTable(c)
	c.AddTable(table)
	chains := map[string]*nftables.Chain{}
	for name, hook := range map[string]*nftables.ChainHook{inputChain: nftables.ChainHookInput, outputChain: nftables.ChainHookOutput} {
		chains[name] = c.AddChain(&nftables.Chain{
			Name:     name,
			Table:    table,
			Type:     nftables.ChainTypeFilter,
			Hooknum:  hook,
			Priority: nftables.ChainPriorityFilter,
			Policy:   ref(nftables.ChainPolicyAccept),
		})
	}
	for _, k := range kinds {
		for _, a := range *k.list(&n) {
			c.AddRule(&nftables.Rule{Table: table, Chain: chains[k.chain], Exprs: dropExprs(a, k)})
		}
	}
	addImpairRules(c, chains, n.Impair)
	if err := c.Flush(); err != nil {
		return fmt.Errorf("netfilter: apply %s: %w", n, err)
	}
	return plumbing.settle(n.Impair)
}

// Clear removes the table if present, and then an impairment's queue
// holder and shaper. Clearing an absent table is not an error.
func Clear() error {
	mu.Lock()
	defer mu.Unlock()
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("netfilter: %w", err)
	}
	resetTable(c)
	if err := c.Flush(); err != nil {
		return fmt.Errorf("netfilter: clear: %w", err)
	}
	return plumbing.settle(Impairment{})
}

// resetTable queues the removal of our table whether or not it exists: "add"
// (without NLM_F_EXCL) is a no-op on an existing table and creates an empty
// one otherwise, so the "delete" that follows always has a table to delete.
// This is the idiom `nft -f` files use ("table x; delete table x"). Unlike
// listing the tables first, it needs no extra round trip and cannot race with
// the table appearing or vanishing in between: the batch is one transaction.
func resetTable(c *nftables.Conn) {
	c.AddTable(table)
	c.DelTable(table)
}

// kind is one of the three kinds of rule Apply writes: which chain it sits
// in, which address of the packet it matches, and whether only packets in a
// connection's original direction.
type kind struct {
	chain     string
	offset    uint32 // of the matched address in the IPv4 header: 12 source, 16 destination
	initiated bool
	list      func(*Rules) *[]netip.Addr // the field of Rules it is written from
}

var kinds = []kind{
	{inputChain, 12, false, func(r *Rules) *[]netip.Addr { return &r.Drop }},
	{inputChain, 12, true, func(r *Rules) *[]netip.Addr { return &r.DropInitiated }},
	{outputChain, 16, false, func(r *Rules) *[]netip.Addr { return &r.DropTo }},
}

// dropExprs builds "meta nfproto ipv4 ip saddr|daddr <a> [ct direction
// original] drop".
func dropExprs(a netip.Addr, k kind) []expr.Any {
	e := addrMatch(a, k.offset)
	if k.initiated {
		// IP_CT_DIR_ORIGINAL is 0: the packet travels in the direction of
		// the connection's first packet, so the peer opened it. Replies to
		// connections we opened are IP_CT_DIR_REPLY and pass.
		e = append(e,
			&expr.Ct{Key: expr.CtKeyDIRECTION, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{0}},
		)
	}
	return append(e, &expr.Verdict{Kind: expr.VerdictDrop})
}

// Current reads back our table's rules as Rules, or empty Rules when the
// table is absent. A rule in our table that Apply could not have written is
// an error rather than being skipped, so a test never passes on a misread.
func Current() (Rules, error) {
	mu.Lock()
	defer mu.Unlock()
	c, err := nftables.New()
	if err != nil {
		return Rules{}, fmt.Errorf("netfilter: %w", err)
	}
	present, err := tablePresent(c)
	if err != nil || !present {
		return Rules{}, err
	}
	var out Rules
	for _, chain := range []string{inputChain, outputChain} {
		rs, err := c.GetRules(table, &nftables.Chain{Name: chain, Table: table})
		if err != nil {
			return Rules{}, fmt.Errorf("netfilter: list rules of %s: %w", chain, err)
		}
		for _, r := range rs {
			if !isDropRule(r.Exprs) {
				err = parseImpairRule(chain, r.Exprs, &out.Impair)
			} else if a, k, perr := parseRule(chain, r.Exprs); perr == nil {
				l := k.list(&out)
				*l = append(*l, a)
			} else {
				err = perr
			}
			if err != nil {
				return Rules{}, fmt.Errorf("netfilter: %s rule handle %d: %w", chain, r.Handle, err)
			}
		}
	}
	out.Impair.Delay, out.Impair.Jitter = plumbing.delay()
	if out.Impair.Rate, err = plumbing.rate(); err != nil {
		return Rules{}, err
	}
	return out, nil
}

// Tables lists every table in the namespace as "family name", ours and
// everybody else's (Docker's among them), for checking that only ours changes.
func Tables() ([]string, error) {
	c, err := nftables.New()
	if err != nil {
		return nil, fmt.Errorf("netfilter: %w", err)
	}
	ts, err := c.ListTables()
	if err != nil {
		return nil, fmt.Errorf("netfilter: list tables: %w", err)
	}
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, familyName(t.Family)+" "+t.Name)
	}
	slices.Sort(out)
	return out, nil
}

func tablePresent(c *nftables.Conn) (bool, error) {
	ts, err := c.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		return false, fmt.Errorf("netfilter: list tables: %w", err)
	}
	return slices.ContainsFunc(ts, func(t *nftables.Table) bool { return t.Name == Table }), nil
}

// parseRule recognizes exactly the expressions dropExprs writes in chain.
func parseRule(chain string, es []expr.Any) (addr netip.Addr, k kind, err error) {
	bad := fmt.Errorf("not a splitbrain rule: %d expressions", len(es))
	addr, offset, ok := parseAddrMatch(es)
	if !ok || (len(es) != 5 && len(es) != 7) {
		return addr, k, bad
	}
	initiated := len(es) == 7
	if initiated {
		if ct, ok := es[4].(*expr.Ct); !ok || ct.Key != expr.CtKeyDIRECTION {
			return addr, k, bad
		}
		if d, ok := es[5].(*expr.Cmp); !ok || d.Op != expr.CmpOpEq || !slices.Equal(d.Data, []byte{0}) {
			return addr, k, bad
		}
	}
	i := slices.IndexFunc(kinds, func(k kind) bool {
		return k.chain == chain && k.offset == offset && k.initiated == initiated
	})
	if i < 0 {
		return addr, k, bad
	}
	return addr, kinds[i], nil
}

func familyName(f nftables.TableFamily) string {
	switch f {
	case nftables.TableFamilyINet:
		return "inet"
	case nftables.TableFamilyIPv4:
		return "ip"
	case nftables.TableFamilyIPv6:
		return "ip6"
	case nftables.TableFamilyARP:
		return "arp"
	case nftables.TableFamilyNetdev:
		return "netdev"
	case nftables.TableFamilyBridge:
		return "bridge"
	}
	return fmt.Sprintf("family(%d)", f)
}

func ref[T any](v T) *T { return &v }
