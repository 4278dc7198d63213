package netfilter

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// The nfnetlink_queue protocol (include/uapi/linux/netfilter/nfnetlink_queue.h),
// of which the holder speaks the little it needs.
const (
	nfqnlMsgPacket       = 0 // kernel -> us: a packet was queued
	nfqnlMsgVerdict      = 1 // us -> kernel: one packet's fate
	nfqnlMsgConfig       = 2
	nfqnlMsgVerdictBatch = 3 // every packet up to an id

	nfqaPacketHdr   = 1
	nfqaVerdictHdr  = 2
	nfqaCfgCmd      = 1
	nfqaCfgParams   = 2
	nfqaCfgMaxlen   = 3
	nfqnlCfgBind    = 1
	nfqnlCopyMeta   = 1 // the packet's id and headers, not its payload
	nfAccept        = 1
	queueLen        = 16384 // packets held at once; more are dropped, as a router's full buffer drops them
	queueReadBuffer = 16 << 20
)

// holder is the program at the other end of the NFQUEUE rules: it holds
// every packet queued for Delay, give or take Jitter, and then accepts it.
// The kernel keeps the packets; the holder only tells it when.
type holder struct {
	delay, jitter time.Duration
	conn          *netlink.Conn
	done          chan struct{} // closed when the receive loop ends

	mu      sync.Mutex
	rng     *rand.Rand
	timers  map[uint32]*time.Timer
	maxID   uint32
	stopped bool
}

// startHolder binds the queue and starts holding its packets.
func startHolder(delay, jitter time.Duration) (*holder, error) {
	conn, err := netlink.Dial(unix.NETLINK_NETFILTER, nil)
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	// A burst of queued packets must not overflow the socket: a
	// notification lost is a packet held until the queue is unbound.
	_ = conn.SetReadBuffer(queueReadBuffer)
	h := &holder{delay: delay, jitter: jitter, conn: conn, done: make(chan struct{}),
		rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0)), timers: map[uint32]*time.Timer{}}
	cmd := []byte{nfqnlCfgBind, 0, 0, 0} // struct nfqnl_msg_config_cmd, pf AF_UNSPEC
	params := binary.BigEndian.AppendUint32(nil, 0xffff)
	params = append(params, nfqnlCopyMeta) // struct nfqnl_msg_config_params, packed
	if err := h.config(netlink.Attribute{Type: nfqaCfgCmd, Data: cmd}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("queue %d: bind: %w", queueNum, err)
	}
	if err := h.config(
		netlink.Attribute{Type: nfqaCfgParams, Data: params},
		netlink.Attribute{Type: nfqaCfgMaxlen, Data: binary.BigEndian.AppendUint32(nil, queueLen)},
	); err != nil {
		conn.Close()
		return nil, fmt.Errorf("queue %d: configure: %w", queueNum, err)
	}
	go h.receive()
	return h, nil
}

// message builds an nfnetlink message to the queue: the nfgenmsg header
// (family, version, the queue number big-endian) and the attributes.
func message(kind uint16, flags netlink.HeaderFlags, attrs ...netlink.Attribute) (netlink.Message, error) {
	b, err := netlink.MarshalAttributes(attrs)
	if err != nil {
		return netlink.Message{}, err
	}
	head := []byte{unix.AF_UNSPEC, unix.NFNETLINK_V0, 0, 0}
	binary.BigEndian.PutUint16(head[2:], queueNum)
	return netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(unix.NFNL_SUBSYS_QUEUE<<8 | kind), Flags: netlink.Request | flags},
		Data:   append(head, b...),
	}, nil
}

// config sends a configuration message and waits for its acknowledgement,
// before the receive loop starts (Execute and Receive would contend).
func (h *holder) config(attrs ...netlink.Attribute) error {
	m, err := message(nfqnlMsgConfig, netlink.Acknowledge, attrs...)
	if err != nil {
		return err
	}
	_, err = h.conn.Execute(m)
	return err
}

// receive takes every queued packet and sets a timer to accept it.
func (h *holder) receive() {
	defer close(h.done)
	for {
		msgs, err := h.conn.Receive()
		if err != nil {
			var op *netlink.OpError
			if errors.As(err, &op) && errors.Is(op.Err, unix.ENOBUFS) {
				continue // notifications lost: those packets wait for the unbind
			}
			return // closed by stop
		}
		for _, m := range msgs {
			if m.Header.Type&0xff != nfqnlMsgPacket || len(m.Data) < 4 {
				continue
			}
			if id, ok := packetID(m.Data[4:]); ok {
				h.hold(id)
			}
		}
	}
}

// packetID reads the id from a queued packet's attributes.
func packetID(b []byte) (uint32, bool) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return 0, false
	}
	for ad.Next() {
		if ad.Type() == nfqaPacketHdr && len(ad.Bytes()) >= 4 {
			return binary.BigEndian.Uint32(ad.Bytes()), true
		}
	}
	return 0, false
}

// hold accepts packet id once its delay is over.
func (h *holder) hold(id uint32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return
	}
	d := h.delay
	if h.jitter > 0 {
		d += time.Duration(h.rng.Int64N(int64(2*h.jitter)+1)) - h.jitter
	}
	h.maxID = max(h.maxID, id)
	h.timers[id] = time.AfterFunc(d, func() {
		h.mu.Lock()
		_, held := h.timers[id]
		delete(h.timers, id)
		h.mu.Unlock()
		if held {
			_ = h.verdict(nfqnlMsgVerdict, id)
		}
	})
}

// verdict accepts packet id, or with nfqnlMsgVerdictBatch every packet
// up to it.
func (h *holder) verdict(kind uint16, id uint32) error {
	hdr := binary.BigEndian.AppendUint32(nil, nfAccept)
	hdr = binary.BigEndian.AppendUint32(hdr, id)
	m, err := message(kind, 0, netlink.Attribute{Type: nfqaVerdictHdr, Data: hdr})
	if err != nil {
		return err
	}
	_, err = h.conn.Send(m)
	return err
}

// stop lets every packet still held go at once (the rules that queued
// them are gone by now: the delay is over) and closes the socket, which
// unbinds the queue (a configuration message would wait on the receive
// loop's lock). A packet queued meanwhile finds no listener and is
// bypassed.
func (h *holder) stop() error {
	h.mu.Lock()
	h.stopped = true
	for _, t := range h.timers {
		t.Stop()
	}
	held := len(h.timers)
	clear(h.timers)
	maxID := h.maxID
	h.mu.Unlock()
	var errs []error
	if held > 0 {
		errs = append(errs, h.verdict(nfqnlMsgVerdictBatch, maxID))
	}
	errs = append(errs, h.conn.Close())
	<-h.done
	return errors.Join(errs...)
}
