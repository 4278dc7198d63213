package netfilter

import (
	"errors"
	"fmt"
	"net"
	"time"

	tc "github.com/florianl/go-tc"
	"golang.org/x/sys/unix"
)

// plumbing is what an impairment needs besides rules, in this process and
// this namespace: the queue holder of a delay and the shaper of a rate.
// Apply and Clear keep it in step with the rules, under mu.
var plumbing pipes

type pipes struct {
	holder *holder
}

// prepare puts in place what m's rules will send packets to: the holder
// of its delay (a new one if the delay changed), the shaper of its rate.
func (p *pipes) prepare(m Impairment) error {
	if m.Delay > 0 && (p.holder == nil || p.holder.delay != m.Delay || p.holder.jitter != m.Jitter) {
		if err := p.stopHolder(); err != nil {
			return err
		}
		h, err := startHolder(m.Delay, m.Jitter)
		if err != nil {
			return err
		}
		p.holder = h
	}
	if m.Rate > 0 {
		return shape(m.Rate)
	}
	return nil
}

// settle removes what m's rules (now in force) no longer send packets
// to. With no rate it removes our qdisc whether or not this process set
// it: one a SIGKILLed sidecar left goes at the next start's Clear.
func (p *pipes) settle(m Impairment) error {
	var errs []error
	if m.Delay == 0 {
		errs = append(errs, p.stopHolder())
	}
	if m.Rate == 0 {
		errs = append(errs, unshape())
	}
	return errors.Join(errs...)
}

func (p *pipes) stopHolder() error {
	if p.holder == nil {
		return nil
	}
	err := p.holder.stop()
	p.holder = nil
	return err
}

// delay is the delay and jitter the holder applies, zero without one.
func (p *pipes) delay() (delay, jitter time.Duration) {
	if p.holder == nil {
		return 0, 0
	}
	return p.holder.delay, p.holder.jitter
}

// rate reads our shaper's rate back from the kernel, 0 when there is none.
func (p *pipes) rate() (uint64, error) {
	var rate uint64
	err := eachShaped(func(t *tc.Tc, ifindex uint32) error {
		classes, err := t.Class().Get(&tc.Msg{Family: unix.AF_UNSPEC, Ifindex: ifindex})
		if err != nil {
			return err
		}
		for _, c := range classes {
			if c.Handle == shaperClass && c.Htb != nil {
				switch {
				case c.Htb.Rate64 != nil:
					rate = *c.Htb.Rate64
				case c.Htb.Parms != nil:
					rate = uint64(c.Htb.Parms.Rate.Rate)
				}
			}
		}
		return nil
	})
	return rate, err
}

// The shaper: on every interface but loopback, an htb qdisc (1:) whose
// unclassified packets go straight out (no default class), and one class
// (1:10) at the rate, which the rules steer the impaired packets into by
// their skb priority. htb rather than a bare tbf at the root: a root tbf
// would slow everything the node sends, the controller's answers too,
// and tbf drops a packet larger than its bucket (a TCP segment of 64 KB
// on a veth) where htb lets its tokens go negative.

// shaperBurst is the class's bucket: a full-size frame, so that a rate of
// a few kB/s still sends one at a time.
const shaperBurst = 1600

// shape sets our qdisc and class on every interface, replacing them.
func shape(rate uint64) error {
	return eachInterface(func(t *tc.Tc, ifindex uint32) error { return shapeOn(t, ifindex, rate) })
}

// shapeOn sets our qdisc and class on interface ifindex.
func shapeOn(t *tc.Tc, ifindex uint32, rate uint64) error {
	directQlen := uint32(1000)
	qdisc := tc.Object{
		Msg: tc.Msg{Family: unix.AF_UNSPEC, Ifindex: ifindex, Handle: shaperHandle, Parent: tc.HandleRoot},
		Attribute: tc.Attribute{Kind: "htb", Htb: &tc.Htb{
			Init:       &tc.HtbGlob{Version: 3, Rate2Quantum: 10},
			DirectQlen: &directQlen,
		}},
	}
	if !shaped(t, ifindex) {
		if err := t.Qdisc().Replace(&qdisc); err != nil {
			return fmt.Errorf("htb qdisc: %w", err)
		}
	}
	// buffer is in the scheduler's ticks of 64 ns (PSCHED_SHIFT).
	buffer := uint32(uint64(shaperBurst) * 1e9 / rate / 64)
	spec := tc.RateSpec{Rate: uint32(min(rate, 1<<32-1))}
	class := tc.Object{
		Msg: tc.Msg{Family: unix.AF_UNSPEC, Ifindex: ifindex, Handle: shaperClass, Parent: shaperHandle},
		Attribute: tc.Attribute{Kind: "htb", Htb: &tc.Htb{Parms: &tc.HtbOpt{
			Rate: spec, Ceil: spec, Buffer: buffer, Cbuffer: buffer, Quantum: shaperBurst,
		}}},
	}
	if err := t.Class().Replace(&class); err != nil {
		return fmt.Errorf("htb class at %d B/s: %w", rate, err)
	}
	return nil
}

// unshape removes our qdisc wherever it is, which leaves the interface
// its default.
func unshape() error { return eachShaped(unshapeOn) }

// unshapeOn removes our qdisc from interface ifindex.
func unshapeOn(t *tc.Tc, ifindex uint32) error {
	err := t.Qdisc().Delete(&tc.Object{
		Msg:       tc.Msg{Family: unix.AF_UNSPEC, Ifindex: ifindex, Handle: shaperHandle, Parent: tc.HandleRoot},
		Attribute: tc.Attribute{Kind: "htb", Htb: &tc.Htb{}},
	})
	if err != nil {
		return fmt.Errorf("remove htb qdisc: %w", err)
	}
	return nil
}

// shaped says whether our qdisc is the root of interface ifindex.
func shaped(t *tc.Tc, ifindex uint32) bool {
	qs, err := t.Qdisc().Get()
	if err != nil {
		return false
	}
	for _, q := range qs {
		if q.Ifindex == ifindex && q.Handle == shaperHandle && q.Parent == tc.HandleRoot && q.Kind == "htb" {
			return true
		}
	}
	return false
}

// eachShaped runs f on every interface our qdisc is on.
func eachShaped(f func(t *tc.Tc, ifindex uint32) error) error {
	return eachInterface(func(t *tc.Tc, ifindex uint32) error {
		if !shaped(t, ifindex) {
			return nil
		}
		return f(t, ifindex)
	})
}

// eachInterface runs f on every interface of the namespace but loopback.
func eachInterface(f func(t *tc.Tc, ifindex uint32) error) error {
	ifs, err := net.Interfaces()
	if err != nil {
		return fmt.Errorf("shaper: %w", err)
	}
	t, err := tc.Open(&tc.Config{})
	if err != nil {
		return fmt.Errorf("shaper: %w", err)
	}
	defer t.Close()
	var errs []error
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback == 0 {
			if err := f(t, uint32(i.Index)); err != nil {
				errs = append(errs, fmt.Errorf("shaper on %s: %w", i.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}
