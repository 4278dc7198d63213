// Package redissentinel is the belief of a Redis server that Sentinels fail over: it leads while its ROLE is master, with the Sentinel configuration epoch that promoted it as its token.
package redissentinel

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/targets/sdk"
)

// Addr is a Redis server as the Sentinels name it: with announce-hostnames,
// its host name (the node's name) and port.
type Addr struct {
	Host string
	Port int
}

// Role is what a server's ROLE said.
type Role struct {
	// Known is false when the server gave no answer: nothing is learnt.
	Known bool
	// Primary: ROLE said "master", the server takes writes.
	Primary bool
	// Master is a replica's master host, as the Sentinels' REPLICAOF named it.
	Master string
}

// Answer is one Sentinel's SENTINEL MASTER: the configuration it holds,
// a primary and the epoch of the failover that made it one.
type Answer struct {
	Primary Addr
	Epoch   uint64
	// Failover: the Sentinel leads a failover of this primary. It raises
	// Epoch to the failover's as soon as the replica it chose reports
	// itself a master, but moves Primary there only when the failover
	// ends, a second or more later: until then the pair is not one
	// configuration.
	Failover bool
}

// State is what a node keeps in /data: the epoch of its latest
// mastership, so that a restarted node leads with the token it had.
type State struct {
	// Epoch is the configuration epoch a Sentinel named this node primary
	// in, 0 before it has been; only ever raised.
	Epoch uint64 `json:"epoch"`
	// Past: the server has been a replica since it held Epoch, so Epoch
	// belongs to a mastership that ended.
	Past bool `json:"past"`
}

// Initial is a node's state on its first start: the initial primary holds
// epoch 1, which the Sentinels' configuration gives it (config-epoch 1 and
// current-epoch 1, so that the first failover's epoch is 2).
func Initial(self, primary string) State {
	if self == primary {
		return State{Epoch: 1}
	}
	return State{}
}

// Learn is the state after an observation: the server's role and the
// Sentinels' latest answers. The rule, which keeps every token one that
// the Sentinels gave this node and no other, and a node's tokens from ever
// going down:
//
//   - A replica's mastership is over: its Epoch becomes Past.
//   - A primary that holds an epoch keeps it, whatever the Sentinels say:
//     a failover promotes a replica, never the primary, so a newer epoch
//     naming this primary can only be a Sentinel's mistake (one that
//     learnt a newer epoch but could not resolve the new primary's name
//     keeps the old primary with the new epoch).
//   - A primary without one (just promoted, or the epoch it knows is
//     Past) learns the epoch of the newest configuration among the
//     Sentinels' answers, if that names it primary, no other answer pairs
//     that epoch with another primary, and it is above the epoch it knows.
//     Answers with a failover in progress do not count.
//
// Until then the node is a primary that does not lead (Belief), though
// Redis takes writes there: it has no token of its own to write with. That
// hides the second or two between a promotion and the Sentinels' switch
// to the promoted node, never an old primary, which keeps its epoch.
func Learn(st State, self Addr, role Role, answers []Answer) State {
	switch {
	case !role.Known:
		return st
	case !role.Primary:
		if st.Epoch > 0 {
			st.Past = true
		}
		return st
	case st.Epoch > 0 && !st.Past:
		return st
	}
	if e := named(self, answers); e > st.Epoch {
		return State{Epoch: e}
	}
	return st
}

// named is the epoch of the newest configuration among answers if it
// names self primary and no answer disputes it; 0 otherwise.
func named(self Addr, answers []Answer) uint64 {
	var (
		epoch  uint64
		newest Addr
		agreed bool
	)
	for _, a := range answers {
		switch {
		case a.Failover:
		case a.Epoch > epoch:
			epoch, newest, agreed = a.Epoch, a.Primary, true
		case a.Epoch == epoch && a.Primary != newest:
			agreed = false
		}
	}
	if agreed && newest == self {
		return epoch
	}
	return 0
}

// Belief is what the node says on GET /leader: it leads while its server
// is the primary and its mastership's epoch is known, with that epoch as
// its token. A replica follows the master its ROLE names.
func Belief(st State, self Addr, role Role) contract.Leadership {
	switch {
	case !role.Known:
		return sdk.Belief(false, "", 0)
	case !role.Primary:
		return sdk.Belief(false, role.Master, 0)
	case st.Epoch > 0 && !st.Past:
		return sdk.Belief(true, self.Host, st.Epoch)
	default:
		return sdk.Belief(false, "", 0)
	}
}

// ParseRole reads a ROLE reply: ["master", offset, replicas] or
// ["slave", host, port, state, offset].
func ParseRole(reply []any) (Role, error) {
	if len(reply) == 0 {
		return Role{}, errors.New("ROLE: empty reply")
	}
	switch reply[0] {
	case "master":
		return Role{Known: true, Primary: true}, nil
	case "slave":
		if len(reply) > 1 {
			if host, ok := reply[1].(string); ok {
				return Role{Known: true, Master: host}, nil
			}
		}
		return Role{}, fmt.Errorf("ROLE: a replica without its master's host: %v", reply)
	default:
		return Role{}, fmt.Errorf("ROLE: role %v is neither master nor slave", reply[0])
	}
}

// ParseMaster reads a SENTINEL MASTER reply, field by field.
func ParseMaster(fields map[string]string) (Answer, error) {
	port, err := strconv.Atoi(fields["port"])
	if err != nil {
		return Answer{}, fmt.Errorf("SENTINEL MASTER: port %q", fields["port"])
	}
	epoch, err := strconv.ParseUint(fields["config-epoch"], 10, 64)
	if err != nil {
		return Answer{}, fmt.Errorf("SENTINEL MASTER: config-epoch %q", fields["config-epoch"])
	}
	if fields["ip"] == "" {
		return Answer{}, errors.New("SENTINEL MASTER: no ip")
	}
	return Answer{
		Primary:  Addr{Host: fields["ip"], Port: port},
		Epoch:    epoch,
		Failover: strings.Contains(","+fields["flags"]+",", ",failover_in_progress,"),
	}, nil
}
