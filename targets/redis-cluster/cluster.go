// Package rediscluster is the belief of a Redis Cluster node and what its agent needs to form the cluster and to be its client: the hash slot of a key, CLUSTER NODES, ROLE and MOVED read, and the plan of slots, epochs and replicas.
package rediscluster

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/targets/sdk"
)

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// HashTag goes before every key the agent writes: Redis hashes only what
// is between the braces, so every key of the workload lands in one slot,
// the one the shard under test owns.
const HashTag = "{sb}"

// Slot is the hash slot of key as Redis Cluster computes it (the cluster
// specification, "Keys distribution model"): CRC16 of the key modulo
// 16384, or of its hash tag alone, the text between its first "{" and the
// next "}" when that is not empty.
func Slot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if n := strings.IndexByte(key[open+1:], '}'); n > 0 {
			key = key[open+1 : open+1+n]
		}
	}
	return int(crc16([]byte(key)) % Slots)
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0, no
// reflection), the CRC Redis Cluster hashes keys with.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// Range is the slots From to To, both included.
type Range struct{ From, To int }

// Has says whether slot is in r.
func (r Range) Has(slot int) bool { return r.From <= slot && slot <= r.To }

func (r Range) String() string {
	if r.From == r.To {
		return strconv.Itoa(r.From)
	}
	return fmt.Sprintf("%d-%d", r.From, r.To)
}

// Split cuts the slots into n ranges of sizes as even as can be, in
// order, as redis-cli --cluster create does (three primaries: 0-5460,
// 5461-10922, 10923-16383).
func Split(n int) []Range {
	edge := func(i int) int { return int(math.Round(float64(i) * Slots / float64(n))) }
	out := make([]Range, n)
	for i := range out {
		out[i] = Range{edge(i), edge(i+1) - 1}
	}
	return out
}

// Node is one line of CLUSTER NODES: a server as the answering server
// sees it.
type Node struct {
	ID string
	// Addr is ip:port, as the cluster knows the server.
	Addr string
	// Host is the host name it announces (cluster-announce-hostname),
	// "" until the answering server has learnt it.
	Host  string
	Flags []string
	// MasterID is a replica's primary, "" for a primary.
	MasterID string
	// Epoch is a primary's configuration epoch, the one its slots were
	// last claimed in; a replica's line shows its primary's.
	Epoch     uint64
	Connected bool
	Slots     []Range
}

// Is says whether the node has flag (myself, master, slave, fail?, fail).
func (n Node) Is(flag string) bool {
	for _, f := range n.Flags {
		if f == flag {
			return true
		}
	}
	return false
}

// Owns says whether slot is among the node's slots.
func (n Node) Owns(slot int) bool {
	for _, r := range n.Slots {
		if r.Has(slot) {
			return true
		}
	}
	return false
}

// Name is the node's host name if known, else its address.
func (n Node) Name() string {
	if n.Host != "" {
		return n.Host
	}
	return n.Addr
}

// ParseNodes reads a CLUSTER NODES reply, a line per server: id,
// ip:port@cport[,hostname], flags, master id or "-", ping sent, pong
// received, config epoch, link state, then its slots ("0-5460", "17"; a
// slot being migrated, "[17->-id]", is left out).
func ParseNodes(reply string) ([]Node, error) {
	var nodes []Node
	for _, line := range strings.Split(strings.TrimSpace(reply), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 8 {
			return nil, fmt.Errorf("CLUSTER NODES: a line of %d fields: %q", len(f), line)
		}
		n := Node{ID: f[0], Flags: strings.Split(f[2], ","), Connected: f[7] == "connected"}
		addr, _, _ := strings.Cut(f[1], ",")
		n.Addr, _, _ = strings.Cut(addr, "@")
		if _, host, ok := strings.Cut(f[1], ","); ok {
			n.Host = host
		}
		if f[3] != "-" {
			n.MasterID = f[3]
		}
		epoch, err := strconv.ParseUint(f[6], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("CLUSTER NODES: config epoch %q: %q", f[6], line)
		}
		n.Epoch = epoch
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				continue
			}
			r, err := parseRange(s)
			if err != nil {
				return nil, fmt.Errorf("CLUSTER NODES: %v: %q", err, line)
			}
			n.Slots = append(n.Slots, r)
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

func parseRange(s string) (Range, error) {
	from, to, isRange := strings.Cut(s, "-")
	if !isRange {
		to = from
	}
	a, err1 := strconv.Atoi(from)
	b, err2 := strconv.Atoi(to)
	if err1 != nil || err2 != nil || a < 0 || b < a || b >= Slots {
		return Range{}, fmt.Errorf("slots %q", s)
	}
	return Range{a, b}, nil
}

// Myself is the answering server's own line, if there is one.
func Myself(nodes []Node) (Node, bool) {
	for _, n := range nodes {
		if n.Is("myself") {
			return n, true
		}
	}
	return Node{}, false
}

// owner is the primary that holds slot in this view, if one does.
func owner(nodes []Node, slot int) (Node, bool) {
	for _, n := range nodes {
		if n.Is("master") && n.Owns(slot) {
			return n, true
		}
	}
	return Node{}, false
}

// Role is what a server's ROLE said.
type Role struct {
	Primary bool
	// Link is a replica's link to its primary: "connect", "connecting",
	// "sync" or "connected".
	Link string
}

// ParseRole reads a ROLE reply: ["master", offset, replicas] or
// ["slave", ip, port, link state, offset].
func ParseRole(reply []any) (Role, error) {
	if len(reply) == 0 {
		return Role{}, errors.New("ROLE: empty reply")
	}
	switch reply[0] {
	case "master":
		return Role{Primary: true}, nil
	case "slave":
		if len(reply) > 3 {
			if link, ok := reply[3].(string); ok {
				return Role{Link: link}, nil
			}
		}
		return Role{}, fmt.Errorf("ROLE: a replica without its link's state: %v", reply)
	default:
		return Role{}, fmt.Errorf("ROLE: role %v is neither master nor slave", reply[0])
	}
}

// Belief is what the node says on GET /leader, from its server's ROLE and
// CLUSTER NODES read together: it leads while its server is a primary that
// holds slot in its own view of the cluster, with the configuration epoch
// it claimed its slots in as its token. That epoch is the cluster's to
// give: a replica promoted by a vote of the primaries takes an epoch no
// server held before, and a primary that has lost its slots to one
// becomes its replica. An epoch of 0 is not one the cluster gave (the
// agent sets every server's before it forms the cluster): no token, no
// leading. A node that does not lead follows the primary that holds slot
// in its view, by host name.
func Belief(role Role, nodes []Node, slot int) contract.Leadership {
	lead, _ := owner(nodes, slot)
	me, ok := Myself(nodes)
	if ok && role.Primary && me.Is("master") && me.Owns(slot) && me.Epoch > 0 {
		return sdk.Belief(true, me.Host, me.Epoch)
	}
	return sdk.Belief(false, lead.Host, 0)
}

// Moved reads a MOVED redirection ("MOVED 4590 n2:6379"): the slot and the
// host:port of the server that holds it. A server that prefers host names
// but has not learnt the holder's names it "?": ok is false then, as for
// any other error.
func Moved(msg string) (slot int, addr string, ok bool) {
	f := strings.Fields(msg)
	if len(f) != 3 || f[0] != "MOVED" || strings.HasPrefix(f[2], "?") {
		return 0, "", false
	}
	slot, err := strconv.Atoi(f[1])
	if err != nil {
		return 0, "", false
	}
	return slot, f[2], true
}

// Refusal says whether an error Redis answered with means it did nothing
// because the slot's primary is not here, or not now: a redirection
// (MOVED, ASK), the cluster down (CLUSTERDOWN), a replica
// (READONLY, MASTERDOWN), a slot in the middle of a move (TRYAGAIN), a
// server loading its data (LOADING). These are the store refusing for
// want of a leader: the write was not made.
func Refusal(msg string) bool {
	code, _, _ := strings.Cut(msg, " ")
	switch code {
	case "MOVED", "ASK", "CLUSTERDOWN", "READONLY", "MASTERDOWN", "TRYAGAIN", "LOADING":
		return true
	}
	return false
}
