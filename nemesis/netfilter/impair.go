package netfilter

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
	"golang.org/x/sys/unix"
)

// Impairment is what a packet fault does to this node's packets on some
// links, with no netem: a share lost (nftables' numgen), a delay with
// jitter (the xt NFQUEUE target, the packets held by this process: see
// holder), a bandwidth (an htb class on the node's interfaces: see
// shaper). Each direction of a link is impaired once: a node impairs
// what it sends (To), and what a peer with no packet filter of its own (a
// service, the resource) sends it (From).
type Impairment struct {
	// To: the packets this node sends these addresses (output hook,
	// and the interfaces' egress for Rate).
	To []netip.Addr `json:"to,omitempty"`
	// From: the packets these addresses send this node (input hook):
	// lost or delayed, but not slowed, which would take an IFB device.
	From []netip.Addr `json:"from,omitempty"`
	// LossPercent of the packets is dropped, each independently.
	LossPercent int `json:"loss_percent,omitempty"`
	// Delay holds each packet this long, give or take Jitter (uniform),
	// so packets may be reordered, as netem's jitter reorders them.
	Delay  time.Duration `json:"delay_ns,omitempty"`
	Jitter time.Duration `json:"jitter_ns,omitempty"`
	// Rate bounds what this node sends To, in bytes per second.
	Rate uint64 `json:"rate_bytes_per_s,omitempty"`
}

// Bounds of an Impairment: what the mechanisms do faithfully. A queue
// holds a delayed packet in the kernel, so a delay is bounded by how
// many a link carries meanwhile (queueLen); a rate under MinRate leaves
// less than a packet a second, and TCP gives up before it.
const (
	MaxDelay = 10 * time.Second
	MinRate  = 100
)

func (m Impairment) empty() bool {
	return len(m.To) == 0 && len(m.From) == 0 && m.LossPercent == 0 && m.Delay == 0 && m.Jitter == 0 && m.Rate == 0
}

// String renders m on one line, for logs.
func (m Impairment) String() string {
	if m.empty() {
		return "none"
	}
	var how []string
	if m.LossPercent > 0 {
		how = append(how, fmt.Sprintf("loss %d%%", m.LossPercent))
	}
	if m.Delay > 0 {
		how = append(how, fmt.Sprintf("delay %s±%s", m.Delay, m.Jitter))
	}
	if m.Rate > 0 {
		how = append(how, fmt.Sprintf("rate %d B/s", m.Rate))
	}
	return strings.Join(how, " ") + " to=" + addrList(m.To) + " from=" + addrList(m.From)
}

// validate checks what the addresses do not: the effect's bounds, and
// that an effect has links and links an effect.
func (m Impairment) validate() error {
	links := len(m.To)+len(m.From) > 0
	effect := m.LossPercent > 0 || m.Delay > 0 || m.Rate > 0
	switch {
	case m.empty():
		return nil
	case m.LossPercent < 0 || m.LossPercent > 100:
		return fmt.Errorf("impair: loss_percent %d is not within 0-100", m.LossPercent)
	case m.Delay < 0 || m.Delay > MaxDelay:
		return fmt.Errorf("impair: delay %s is not within 0-%s", m.Delay, MaxDelay)
	case m.Jitter < 0 || m.Jitter > m.Delay:
		return fmt.Errorf("impair: jitter %s is not within 0 and the delay (%s)", m.Jitter, m.Delay)
	case m.Rate > 0 && m.Rate < MinRate:
		return fmt.Errorf("impair: rate %d B/s is under %d", m.Rate, MinRate)
	case !links:
		return errors.New("impair: an effect with no address to impair")
	case !effect:
		return errors.New("impair: addresses with no effect (loss, delay or rate)")
	}
	return nil
}

// Constants of the packet plumbing in this namespace: the NFQUEUE queue
// delayed packets go to, and the htb qdisc and class slowed packets are
// steered into by their skb priority (set by a rule: no tc filter).
const (
	queueNum     = 7979
	shaperHandle = 0x1 << 16      // 1:
	shaperClass  = 0x1<<16 | 0x10 // 1:10
)

// impairExprs are the rules that impair the packets to or from one
// address (offset 16: destination, output; 12: source, input), in the
// order they must run: loss drops first, the class is set, and the
// queue's verdict comes last (it ends the rule).
func impairExprs(a netip.Addr, offset uint32, m Impairment) [][]expr.Any {
	match := addrMatch(a, offset)
	var rules [][]expr.Any
	if m.LossPercent > 0 {
		// numgen writes a number in host order, which cmp compares as
		// bytes: hton first, as nft itself does for "numgen ... < N".
		rules = append(rules, append(slices.Clone(match),
			&expr.Numgen{Register: 1, Modulus: 100, Type: unix.NFT_NG_RANDOM},
			&expr.Byteorder{SourceRegister: 1, DestRegister: 1, Op: expr.ByteorderHton, Len: 4, Size: 4},
			&expr.Cmp{Op: expr.CmpOpLt, Register: 1, Data: binary.BigEndian.AppendUint32(nil, uint32(m.LossPercent))},
			&expr.Verdict{Kind: expr.VerdictDrop},
		))
	}
	if m.Rate > 0 && offset == 16 {
		rules = append(rules, append(slices.Clone(match),
			&expr.Immediate{Register: 1, Data: binary.NativeEndian.AppendUint32(nil, shaperClass)},
			&expr.Meta{Key: expr.MetaKeyPRIORITY, SourceRegister: true, Register: 1},
		))
	}
	if m.Delay > 0 {
		rules = append(rules, append(slices.Clone(match), queueTarget()))
	}
	return rules
}

// queueTarget is iptables' "-j NFQUEUE --queue-num queueNum
// --queue-bypass" through nft_compat: this kernel has no nft queue
// expression. Bypass accepts packets while no program listens on the
// queue (before the holder binds it, after it is gone), so a holder that
// died never blackholes a link.
func queueTarget() *expr.Target {
	// struct xt_NFQ_info_v3 { __u16 queuenum, queues_total, flags; },
	// padded to XT_ALIGN (8 bytes).
	info := make([]byte, 8)
	binary.NativeEndian.PutUint16(info[0:], queueNum)
	binary.NativeEndian.PutUint16(info[2:], 1)
	binary.NativeEndian.PutUint16(info[4:], nfqFlagBypass)
	u := xt.Unknown(info)
	return &expr.Target{Name: "NFQUEUE", Rev: 3, Info: &u}
}

const nfqFlagBypass = 0x1 // NFQ_FLAG_BYPASS

// addrMatch is "meta nfproto ipv4 ip saddr|daddr a". The nfproto check
// matters in an inet table: without it, bytes 12..19 of an IPv6 header
// (inside its source address) would be compared too.
func addrMatch(a netip.Addr, offset uint32) []expr.Any {
	ip := a.As4()
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.NFPROTO_IPV4}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 4},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ip[:]},
	}
}

// parseAddrMatch reads the address addrMatch wrote at the head of es, and
// its offset; false when es does not begin so.
func parseAddrMatch(es []expr.Any) (netip.Addr, uint32, bool) {
	if len(es) < 4 {
		return netip.Addr{}, 0, false
	}
	if m, ok := es[0].(*expr.Meta); !ok || m.Key != expr.MetaKeyNFPROTO || m.SourceRegister {
		return netip.Addr{}, 0, false
	}
	if c, ok := es[1].(*expr.Cmp); !ok || c.Op != expr.CmpOpEq || !slices.Equal(c.Data, []byte{unix.NFPROTO_IPV4}) {
		return netip.Addr{}, 0, false
	}
	p, ok := es[2].(*expr.Payload)
	if !ok || p.Base != expr.PayloadBaseNetworkHeader || p.Len != 4 || (p.Offset != 12 && p.Offset != 16) {
		return netip.Addr{}, 0, false
	}
	c, ok := es[3].(*expr.Cmp)
	if !ok || c.Op != expr.CmpOpEq || len(c.Data) != 4 {
		return netip.Addr{}, 0, false
	}
	return netip.AddrFrom4([4]byte(c.Data)), p.Offset, true
}

// parseImpairRule reads one rule impairExprs wrote into m: its address
// into To or From, and its loss share. Delay and rate live in this
// process and in the qdisc, which Current reads.
func parseImpairRule(chain string, es []expr.Any, m *Impairment) error {
	a, offset, ok := parseAddrMatch(es)
	want := map[string]uint32{inputChain: 12, outputChain: 16}[chain]
	if !ok || offset != want {
		return fmt.Errorf("not a splitbrain rule: %d expressions", len(es))
	}
	rest := es[4:]
	switch {
	case len(rest) >= 3:
		// numgen, cmp, drop: the byteorder between is written but not
		// read back (google/nftables does not parse it).
		c, ok := rest[len(rest)-2].(*expr.Cmp)
		if _, isNumgen := rest[0].(*expr.Numgen); !isNumgen || !ok || c.Op != expr.CmpOpLt || len(c.Data) != 4 {
			return errors.New("not a splitbrain loss rule")
		}
		m.LossPercent = int(binary.BigEndian.Uint32(c.Data))
	case len(rest) == 2:
		if meta, ok := rest[1].(*expr.Meta); !ok || meta.Key != expr.MetaKeyPRIORITY || !meta.SourceRegister {
			return errors.New("not a splitbrain rate rule")
		}
	case len(rest) == 1:
		if t, ok := rest[0].(*expr.Target); !ok || t.Name != "NFQUEUE" {
			return errors.New("not a splitbrain queue rule")
		}
	default:
		return fmt.Errorf("not a splitbrain rule: %d expressions", len(es))
	}
	list := &m.To
	if chain == inputChain {
		list = &m.From
	}
	if !slices.Contains(*list, a) {
		*list = append(*list, a)
	}
	return nil
}

// An impairRule is one rule of an impairment and the chain it goes in.
type impairRule struct {
	chain string
	exprs []expr.Any
}

// impairRules are m's rules: on output those of what the node sends to
// m.To (matched by destination, offset 16), on input those of what it
// receives from m.From (by source, offset 12).
func impairRules(m Impairment) []impairRule {
	var out []impairRule
	for _, side := range []struct {
		chain  string
		offset uint32
		addrs  []netip.Addr
	}{{outputChain, 16, m.To}, {inputChain, 12, m.From}} {
		for _, a := range side.addrs {
			for _, es := range impairExprs(a, side.offset, m) {
				out = append(out, impairRule{side.chain, es})
			}
		}
	}
	return out
}

// addImpairRules queues the rules of m (normalized) in chains, after the
// drops already there: a packet a partition drops is never queued.
func addImpairRules(c *nftables.Conn, chains map[string]*nftables.Chain, m Impairment) {
	for _, r := range impairRules(m) {
		c.AddRule(&nftables.Rule{Table: table, Chain: chains[r.chain], Exprs: r.exprs})
	}
}

// isDropRule says whether es ends in a drop right after its address
// match (with or without the conntrack direction), as dropExprs writes
// it: the rules that are not are an impairment's.
func isDropRule(es []expr.Any) bool {
	if len(es) != 5 && len(es) != 7 && (len(es) != 8 || !isOpening(es[4:7])) {
		return false
	}
	_, isNumgen := es[4].(*expr.Numgen)
	v, ok := es[len(es)-1].(*expr.Verdict)
	return ok && v.Kind == expr.VerdictDrop && !isNumgen
}

func addrList(as []netip.Addr) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return "[" + strings.Join(s, " ") + "]"
}
