package rediscluster

import (
	"fmt"
	"slices"
	"strings"
)

// Shard is a primary and its replicas, servers by host name.
type Shard struct {
	Primary  string
	Replicas []string
}

// ParseShards reads the other shards as the manifest names them: each a
// primary and its replicas joined by "+", the shards by ","
// ("shard2+shard1,shard4+shard3"). No server may be named twice.
func ParseShards(spec string) ([]Shard, error) {
	var shards []Shard
	seen := map[string]bool{}
	for _, s := range strings.Split(spec, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		names := strings.Split(s, "+")
		for _, n := range names {
			if n == "" || seen[n] {
				return nil, fmt.Errorf("shards %q: %q is empty or named twice", spec, n)
			}
			seen[n] = true
		}
		shards = append(shards, Shard{Primary: names[0], Replicas: names[1:]})
	}
	return shards, nil
}

// Plan is the cluster one agent forms: the shard under test, whose
// primary holds the slot of the workload's keys, and the other shards.
type Plan struct {
	// Shards are the shard under test first, then the others.
	Shards []Shard
	// Ranges are each shard's slots, in the order of Shards.
	Ranges []Range
}

// NewPlan splits the slots evenly among the shards (Split) and gives the
// shard under test the range that holds slot, the others the rest in
// their order.
func NewPlan(under Shard, others []Shard, slot int) Plan {
	ranges := Split(len(others) + 1)
	i := slices.IndexFunc(ranges, func(r Range) bool { return r.Has(slot) })
	mine := ranges[i]
	return Plan{
		Shards: append([]Shard{under}, others...),
		Ranges: append([]Range{mine}, slices.Delete(ranges, i, i+1)...),
	}
}

// Servers are every server of the plan, each shard's primary then its
// replicas, the shard under test first.
func (p Plan) Servers() []string {
	var out []string
	for _, s := range p.Shards {
		out = append(out, s.Primary)
		out = append(out, s.Replicas...)
	}
	return out
}

// Epoch is the configuration epoch server starts with: its place in
// Servers, from 1, so that no two servers share one (Redis would bump one
// of two primaries that do, without a vote) and the shard under test's
// primary starts with 1. The first failover's epoch is one above them all.
func (p Plan) Epoch(server string) uint64 {
	return uint64(slices.Index(p.Servers(), server) + 1)
}

// PrimaryOf is the primary a replica of the plan replicates, "" for a
// primary or a server the plan does not name.
func (p Plan) PrimaryOf(server string) string {
	for _, s := range p.Shards {
		if slices.Contains(s.Replicas, server) {
			return s.Primary
		}
	}
	return ""
}
