// Package sdk gives a Go target the node API server, the resource client, the skewable clock and a driver for its state machine or for its own elector (an agent beside a real server), so the target holds only its algorithm.
package sdk

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/splitbrain/splitbrain/contract"
)

// Env is what the harness hands every node container.
type Env struct {
	Node        string   // SPLITBRAIN_NODE: this node's name, n1..nN
	Peers       []string // SPLITBRAIN_PEERS: host:port of the other nodes
	ResourceURL string   // SPLITBRAIN_RESOURCE: base URL of the resource
	ClockFile   string   // SPLITBRAIN_CLOCK_FILE: skew for Clock, may be empty
	Addr        string   // SPLITBRAIN_ADDR: where to serve the node API, default :7070
	// Services holds the target's service containers by name, each as
	// host:port (SPLITBRAIN_SERVICES: "store:2379,cache:6379").
	Services map[string]string
}

// EnvFromOS reads the environment the harness sets.
func EnvFromOS() (Env, error) {
	e := Env{
		Node:        os.Getenv(contract.EnvNode),
		ResourceURL: os.Getenv(contract.EnvResource),
		ClockFile:   os.Getenv(contract.EnvClockFile),
		Addr:        os.Getenv(contract.EnvAddr),
	}
	if p := os.Getenv(contract.EnvPeers); p != "" {
		e.Peers = strings.Split(p, ",")
	}
	if s := os.Getenv(contract.EnvServices); s != "" {
		e.Services = map[string]string{}
		for _, addr := range strings.Split(s, ",") {
			e.Services[PeerHost(addr)] = addr
		}
	}
	if e.Addr == "" {
		e.Addr = fmt.Sprintf(":%d", contract.DefaultPort)
	}
	if e.Node == "" {
		return e, errors.New("SPLITBRAIN_NODE is not set")
	}
	if e.ResourceURL == "" {
		return e, errors.New("SPLITBRAIN_RESOURCE is not set")
	}
	return e, nil
}

// PeerIDs are the other nodes' names, in SPLITBRAIN_PEERS order.
func (e Env) PeerIDs() []string {
	ids := make([]string, len(e.Peers))
	for i, p := range e.Peers {
		ids[i] = PeerHost(p)
	}
	return ids
}

// PeerHost is the host part of a peer address: the peer's node name, since
// the harness names each container's network alias after its node.
func PeerHost(addr string) string {
	if i := strings.LastIndexByte(addr, ':'); i >= 0 {
		return addr[:i]
	}
	return addr
}
