package netfilter

import (
	"net/netip"
	"time"

	tc "github.com/florianl/go-tc"
	"golang.org/x/sys/unix"
)

// Probed is what this kernel can do of an impairment: for each mechanism,
// why it failed ("" when it works), and whether the kernel has netem,
// which splitbrain does not need.
type Probed struct {
	Loss  string `json:"loss,omitempty"`  // nftables numgen
	Delay string `json:"delay,omitempty"` // the xt NFQUEUE target, and a queue bound to it
	Rate  string `json:"rate,omitempty"`  // the htb qdisc
	Netem bool   `json:"netem"`
}

// probeAddr is never on any network (TEST-NET-1): the probe's rules match
// nothing.
var probeAddr = []netip.Addr{netip.MustParseAddr("192.0.2.1")}

// Probe tries each mechanism in this namespace, which must be a throwaway
// one with no interface but loopback (network none): it writes our table
// there and an htb qdisc on its loopback, then removes both.
func Probe() Probed {
	var p Probed
	try := func(m Impairment) string {
		err := Apply(Rules{Impair: m})
		if cerr := Clear(); err == nil {
			err = cerr
		}
		if err != nil {
			return err.Error()
		}
		return ""
	}
	p.Loss = try(Impairment{From: probeAddr, LossPercent: 1})
	p.Delay = try(Impairment{From: probeAddr, Delay: time.Millisecond})
	// The shaper skips loopback, which a network none namespace only has.
	if err := onLoopback(func(t *tc.Tc, lo uint32) error {
		if err := shapeOn(t, lo, MinRate); err != nil {
			return err
		}
		return unshapeOn(t, lo)
	}); err != nil {
		p.Rate = err.Error()
	}
	p.Netem = onLoopback(func(t *tc.Tc, lo uint32) error {
		netem := tc.Object{
			Msg:       tc.Msg{Family: unix.AF_UNSPEC, Ifindex: lo, Handle: shaperHandle, Parent: tc.HandleRoot},
			Attribute: tc.Attribute{Kind: "netem", Netem: &tc.Netem{Qopt: tc.NetemQopt{Limit: 1000}}},
		}
		if err := t.Qdisc().Add(&netem); err != nil {
			return err
		}
		return t.Qdisc().Delete(&netem)
	}) == nil
	return p
}

// onLoopback runs f on the loopback interface.
func onLoopback(f func(t *tc.Tc, lo uint32) error) error {
	t, err := tc.Open(&tc.Config{})
	if err != nil {
		return err
	}
	defer t.Close()
	return f(t, 1) // loopback is always interface 1 in a namespace
}
