package harness

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/splitbrain/splitbrain/nemesis"
	"github.com/splitbrain/splitbrain/nemesis/netfilter"
)

// filterRules puts each cut where a packet filter can make it.
func TestFilterRules(t *testing.T) {
	ips := map[string]netip.Addr{}
	for name, last := range map[string]byte{"resource": 2, "n1": 11, "n2": 12, "sentinel1": 11, "zk1": 120, "zk2": 121, "store": 122} {
		ips[name] = netip.AddrFrom4([4]byte{10, 0, 0, last})
	}
	ip := func(names ...string) []netip.Addr {
		var out []netip.Addr
		for _, n := range names {
			out = append(out, ips[n])
		}
		return out
	}
	// n1, n2, zk1 and zk2 have filters; sentinel1 is beside n1; the
	// resource and store have none.
	filterOf := func(name string) string {
		switch name {
		case "n1", "n2", "zk1", "zk2":
			return name
		case "sentinel1":
			return "n1"
		}
		return ""
	}
	for _, tc := range []struct {
		name  string
		g     nemesis.Grudge
		want  map[string]netfilter.Rules
		error string
	}{
		{"members split: each drops the other on receipt, no more", nemesis.Links{From: []string{"zk1"}, To: []string{"zk2"}, Way: nemesis.Both}.Grudge(),
			map[string]netfilter.Rules{"zk1": {Drop: ip("zk2")}, "zk2": {Drop: ip("zk1")}}, ""},
		{"a node cut from a service listed on its side only drops its own packets too", nemesis.CutFrom("n1", "zk1", "store"),
			map[string]netfilter.Rules{"n1": {Drop: ip("zk1", "store"), DropTo: ip("zk1", "store")}}, ""},
		{"one way at the packet level: the receiver drops", nemesis.Links{From: []string{"n1"}, To: []string{"zk1"}, Way: nemesis.Packets}.Grudge(),
			map[string]netfilter.Rules{"zk1": {Drop: ip("n1")}}, ""},
		{"one way to the resource: the sender drops on its way out", nemesis.Links{From: []string{"n2"}, To: []string{"resource"}, Way: nemesis.Packets}.Grudge(),
			map[string]netfilter.Rules{"n2": {DropTo: ip("resource")}}, ""},
		{"one way at the connection level", nemesis.Links{From: []string{"zk1"}, To: []string{"n2"}, Way: nemesis.Connections}.Grudge(),
			map[string]netfilter.Rules{"n2": {DropNew: ip("zk1")}}, ""},
		{"a member beside a node is cut at its host, never from it", nemesis.Links{From: []string{"sentinel1"}, To: []string{"n1", "n2"}, Way: nemesis.Both}.Grudge(),
			map[string]netfilter.Rules{"n1": {Drop: ip("n2")}, "n2": {Drop: ip("sentinel1")}}, ""},
		{"no filter to refuse connections at", nemesis.Links{From: []string{"n1"}, To: []string{"store"}, Way: nemesis.Connections}.Grudge(),
			nil, "store has no packet filter"},
		{"neither end has a filter", nemesis.Links{From: []string{"store"}, To: []string{"resource"}, Way: nemesis.Packets}.Grudge(),
			nil, "neither resource nor store"},
	} {
		got, err := filterRules(tc.g, ips, filterOf)
		switch {
		case tc.error != "":
			if err == nil || !strings.Contains(err.Error(), tc.error) {
				t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.error)
			}
		case err != nil || !reflect.DeepEqual(got, tc.want):
			t.Errorf("%s: %v %v, want %v", tc.name, got, err, tc.want)
		}
	}
}
