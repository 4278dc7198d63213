package rediscluster

import (
	"reflect"
	"testing"

	"github.com/splitbrain/splitbrain/contract"
)

// The cluster specification's CRC16 reference ("123456789" is 0x31C3),
// its hash tag examples, and what Redis 7.0.15 answered to CLUSTER
// KEYSLOT for each key.
func TestSlot(t *testing.T) {
	if got := crc16([]byte("123456789")); got != 0x31C3 {
		t.Errorf("crc16(123456789) = %#x, want 0x31c3", got)
	}
	for key, want := range map[string]int{
		"123456789":            0x31C3 % Slots, // 12739
		"{user1000}.following": 3443,
		"{user1000}.followers": 3443,
		"foo{}{bar}":           8363, // an empty tag: the whole key
		"foo{{bar}}zap":        4015, // the tag "{bar"
		"foo{bar}{zap}":        5061, // the first tag, "bar"
		"foo":                  12182,
		"no tag {here":         4645,
		"{}":                   15257,
		HashTag + "k1":         4590,
		HashTag + "fenced:k1":  4590,
		"a{b}c" + HashTag:      3300, // "b"
	} {
		if got := Slot(key); got != want {
			t.Errorf("Slot(%q) = %d, want %d", key, got, want)
		}
	}
}
func TestSplit(t *testing.T) {
	want := []Range{{0, 5460}, {5461, 10922}, {10923, 16383}}
	if got := Split(3); !reflect.DeepEqual(got, want) {
		t.Errorf("Split(3) = %v, want %v (redis-cli's)", got, want)
	}
	for n := 1; n <= 7; n++ {
		got := Split(n)
		if got[0].From != 0 || got[n-1].To != Slots-1 {
			t.Errorf("Split(%d) = %v: not every slot", n, got)
		}
		for i := 1; i < n; i++ {
			if got[i].From != got[i-1].To+1 {
				t.Errorf("Split(%d) = %v: a gap or an overlap", n, got)
			}
		}
	}
}

// A CLUSTER NODES reply of Redis 7.0.15, from a replica, with host names
// announced, a slot being migrated and a primary found failing.
const nodesReply = `3d5c2063cb0d29058da912981105938e05c04352 10.1.0.121:6379@16379,shard2 master - 0 1795815028036 6 connected 5461-10922
b2d2d1625a6a278ccc13059690329a2949e46929 10.1.0.12:6379@16379,n2 myself,slave 9f9ef910f9603d3e3a73bf53cd928ce9580f31c5 0 1795815027000 1 connected
603eecc61d2fe26c8b6f146e02d88439825195a1 10.1.0.123:6379@16379,shard4 master,fail? - 1795815027000 1795815027835 8 disconnected 10923-16382 16383 [16000->-9f9ef910f9603d3e3a73bf53cd928ce9580f31c5]
9f9ef910f9603d3e3a73bf53cd928ce9580f31c5 10.1.0.11:6379@16379,n1 master - 0 1795815028036 1 connected 0-5460
aaaa2063cb0d29058da912981105938e05c04352 10.1.0.13:6379@16379 slave 9f9ef910f9603d3e3a73bf53cd928ce9580f31c5 0 1795815028036 1 connected
`

func TestParseNodes(t *testing.T) {
	nodes, err := ParseNodes(nodesReply)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 5 {
		t.Fatalf("%d nodes: %+v", len(nodes), nodes)
	}
	want := Node{
		ID: "603eecc61d2fe26c8b6f146e02d88439825195a1", Addr: "10.1.0.123:6379", Host: "shard4",
		Flags: []string{"master", "fail?"}, Epoch: 8, Slots: []Range{{10923, 16382}, {16383, 16383}},
	}
	if !reflect.DeepEqual(nodes[2], want) {
		t.Errorf("shard4's line: %+v, want %+v", nodes[2], want)
	}
	me, ok := Myself(nodes)
	if !ok || me.Host != "n2" || me.MasterID != "9f9ef910f9603d3e3a73bf53cd928ce9580f31c5" || !me.Is("slave") || me.Is("master") || !me.Connected {
		t.Errorf("myself: %+v %v", me, ok)
	}
	if nodes[4].Host != "" || nodes[4].Name() != "10.1.0.13:6379" {
		t.Errorf("a server whose host name is not known yet: %+v", nodes[4])
	}
	if !nodes[3].Owns(4590) || nodes[3].Owns(5461) || !nodes[2].Owns(16383) {
		t.Errorf("slots: %+v", nodes)
	}
	for _, bad := range []string{
		"abc 10.1.0.11:6379@16379 master - 0 0 1",
		"abc 10.1.0.11:6379@16379 master - 0 0 x connected",
		"abc 10.1.0.11:6379@16379 master - 0 0 1 connected 5-3",
		"abc 10.1.0.11:6379@16379 master - 0 0 1 connected 16384",
	} {
		if _, err := ParseNodes(bad); err == nil {
			t.Errorf("ParseNodes(%q): no error", bad)
		}
	}
}

func TestParseRole(t *testing.T) {
	for _, tc := range []struct {
		reply []any
		want  Role
		ok    bool
	}{
		{[]any{"master", int64(126), []any{[]any{"10.1.0.12", "6379", "126"}}}, Role{Primary: true}, true},
		{[]any{"slave", "10.1.0.11", int64(6379), "connected", int64(126)}, Role{Link: "connected"}, true},
		{[]any{"slave", "10.1.0.11", int64(6379), "connecting", int64(-1)}, Role{Link: "connecting"}, true},
		{[]any{"slave", "10.1.0.11"}, Role{}, false},
		{[]any{"sentinel", []any{}}, Role{}, false},
		{nil, Role{}, false},
	} {
		got, err := ParseRole(tc.reply)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("ParseRole(%v) = %+v, %v; want %+v, ok %v", tc.reply, got, err, tc.want, tc.ok)
		}
	}
}

// view is a CLUSTER NODES of three primaries (n1 holding 0-5460 in epoch
// e1, shard2 and shard4 the rest) and n2, a replica of n1, as server
// "myself" sees it; n2 holds n1's slots instead when promoted.
func view(myself string, e1 uint64, promoted bool) []Node {
	n1 := Node{ID: "id1", Host: "n1", Flags: []string{"master"}, Epoch: e1, Slots: []Range{{0, 5460}}}
	n2 := Node{ID: "id2", Host: "n2", Flags: []string{"slave"}, MasterID: "id1", Epoch: e1}
	if promoted {
		n1.Flags, n1.MasterID, n1.Slots = []string{"slave"}, "id2", nil
		n2.Flags, n2.MasterID, n2.Epoch, n2.Slots = []string{"master"}, "", 10, []Range{{0, 5460}}
		n1.Epoch = 10
	}
	nodes := []Node{
		n1, n2,
		{ID: "id3", Host: "shard2", Flags: []string{"master"}, Epoch: 6, Slots: []Range{{5461, 10922}}},
		{ID: "id4", Host: "shard4", Flags: []string{"master"}, Epoch: 8, Slots: []Range{{10923, 16383}}},
	}
	for i := range nodes {
		if nodes[i].Host == myself {
			nodes[i].Flags = append([]string{"myself"}, nodes[i].Flags...)
		}
	}
	return nodes
}

func TestBelief(t *testing.T) {
	const slot = 4590
	primary, replica := Role{Primary: true}, Role{Link: "connected"}
	leads := func(host string, token int64) contract.Leadership {
		return contract.Leadership{Leader: true, LeaderID: host, Token: token}
	}
	follows := func(host string) contract.Leadership { return contract.Leadership{LeaderID: host} }
	for _, tc := range []struct {
		name  string
		role  Role
		nodes []Node
		want  contract.Leadership
	}{
		{"the primary that holds the slot leads with its epoch", primary, view("n1", 1, false), leads("n1", 1)},
		{"its replica follows it", replica, view("n2", 1, false), follows("n1")},
		{"a promoted replica leads with the epoch of its election", primary, view("n2", 1, true), leads("n2", 10)},
		{"the old primary, told, follows it", replica, view("n1", 1, true), follows("n2")},
		{"ROLE and CLUSTER NODES disagree: not leading", replica, view("n1", 1, false), follows("n1")},
		{"a primary of no slot of ours does not lead", primary, view("shard2", 1, false), follows("n1")},
		{"a primary without an epoch has no token to lead with", primary, view("n1", 0, false), follows("n1")},
		{"no line of its own: nothing known of itself", primary, view("n9", 1, false), follows("n1")},
		{"a view where nobody holds the slot", replica, view("n2", 1, false)[1:], follows("")},
	} {
		if got := Belief(tc.role, tc.nodes, slot); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestMoved(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		slot int
		addr string
		ok   bool
	}{
		{"MOVED 4590 n2:6379", 4590, "n2:6379", true},
		{"MOVED 4590 10.1.0.12:6379", 4590, "10.1.0.12:6379", true},
		{"MOVED 4590 ?:6379", 0, "", false},
		{"ASK 4590 n2:6379", 0, "", false},
		{"MOVED x n2:6379", 0, "", false},
		{"CLUSTERDOWN The cluster is down", 0, "", false},
	} {
		slot, addr, ok := Moved(tc.msg)
		if slot != tc.slot || addr != tc.addr || ok != tc.ok {
			t.Errorf("Moved(%q) = %d, %q, %v", tc.msg, slot, addr, ok)
		}
	}
}

func TestRefusal(t *testing.T) {
	for msg, want := range map[string]bool{
		"MOVED 4590 n2:6379":                                      true,
		"ASK 4590 n2:6379":                                        true,
		"CLUSTERDOWN The cluster is down":                         true,
		"CLUSTERDOWN Hash slot not served":                        true,
		"READONLY You can't write against a read only replica":    true,
		"TRYAGAIN Multiple keys request during rehashing of slot": true,
		"LOADING Redis is loading the dataset in memory":          true,
		"ERR unknown command":                                     false,
		"OOM command not allowed":                                 false,
		"i/o timeout":                                             false,
	} {
		if got := Refusal(msg); got != want {
			t.Errorf("Refusal(%q) = %v", msg, got)
		}
	}
}

func TestParseShards(t *testing.T) {
	got, err := ParseShards("shard2+shard1, shard4+shard3")
	want := []Shard{{"shard2", []string{"shard1"}}, {"shard4", []string{"shard3"}}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("%+v, %v", got, err)
	}
	if got, err := ParseShards("shard1"); err != nil || !reflect.DeepEqual(got, []Shard{{Primary: "shard1", Replicas: []string{}}}) {
		t.Errorf("a shard without replicas: %+v, %v", got, err)
	}
	for _, bad := range []string{"a+b,b+c", "a++b", "a+a"} {
		if _, err := ParseShards(bad); err == nil {
			t.Errorf("ParseShards(%q): no error", bad)
		}
	}
}

func TestPlan(t *testing.T) {
	others, _ := ParseShards("shard2+shard1,shard4+shard3")
	under := Shard{Primary: "n1", Replicas: []string{"n2", "n3"}}
	p := NewPlan(under, others, Slot(HashTag+"k0"))
	if want := []Range{{0, 5460}, {5461, 10922}, {10923, 16383}}; !reflect.DeepEqual(p.Ranges, want) {
		t.Errorf("ranges %v, want %v", p.Ranges, want)
	}
	if got, want := p.Servers(), []string{"n1", "n2", "n3", "shard2", "shard1", "shard4", "shard3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("servers %v, want %v", got, want)
	}
	if p.Epoch("n1") != 1 || p.Epoch("shard3") != 7 {
		t.Errorf("epochs: n1 %d, shard3 %d", p.Epoch("n1"), p.Epoch("shard3"))
	}
	if p.PrimaryOf("n3") != "n1" || p.PrimaryOf("shard1") != "shard2" || p.PrimaryOf("n1") != "" {
		t.Errorf("primaries: %q %q %q", p.PrimaryOf("n3"), p.PrimaryOf("shard1"), p.PrimaryOf("n1"))
	}
	// The slot in the last third: the shard under test takes it, the
	// others the first two in their order.
	p = NewPlan(under, others, 12182)
	if want := []Range{{10923, 16383}, {0, 5460}, {5461, 10922}}; !reflect.DeepEqual(p.Ranges, want) {
		t.Errorf("ranges %v, want %v", p.Ranges, want)
	}
}
