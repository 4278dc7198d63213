package redissentinel

import (
	"math/rand/v2"
	"testing"

	"github.com/splitbrain/splitbrain/contract"
)

var (
	n1 = Addr{"n1", 6379}
	n2 = Addr{"n2", 6379}
	n3 = Addr{"n3", 6379}

	primary     = Role{Known: true, Primary: true}
	replicaOf   = func(host string) Role { return Role{Known: true, Master: host} }
	unknown     = Role{}
	says        = func(a Addr, epoch uint64) Answer { return Answer{Primary: a, Epoch: epoch} }
	failingOver = func(a Addr, epoch uint64) Answer { return Answer{Primary: a, Epoch: epoch, Failover: true} }
	leads       = func(host string, token int64) contract.Leadership {
		return contract.Leadership{Leader: true, LeaderID: host, Token: token}
	}
	follows      = func(host string) contract.Leadership { return contract.Leadership{LeaderID: host} }
	leaderless   = contract.Leadership{}
	epochOf      = func(e uint64) State { return State{Epoch: e} }
	pastEpochOf  = func(e uint64) State { return State{Epoch: e, Past: true} }
	noSentinels  []Answer
	sentinelsSay = func(a ...Answer) []Answer { return a }
)

func TestInitial(t *testing.T) {
	if got := Initial("n1", "n1"); got != epochOf(1) {
		t.Errorf("initial primary: %+v", got)
	}
	if got := Initial("n2", "n1"); got != (State{}) {
		t.Errorf("replica: %+v", got)
	}
}

func TestLearnAndBelief(t *testing.T) {
	for _, tc := range []struct {
		name    string
		self    Addr
		st      State
		role    Role
		answers []Answer
		want    State
		belief  contract.Leadership
	}{
		{"the initial primary leads with epoch 1 before any Sentinel runs",
			n1, epochOf(1), primary, noSentinels, epochOf(1), leads("n1", 1)},
		{"a replica follows its master",
			n2, State{}, replicaOf("n1"), sentinelsSay(says(n1, 1)), State{}, follows("n1")},
		{"a server that does not answer: nothing learnt, nobody known",
			n1, epochOf(1), unknown, sentinelsSay(says(n2, 2)), epochOf(1), leaderless},
		{"just promoted, no Sentinel has switched yet: a primary that does not lead",
			n2, State{}, primary, sentinelsSay(says(n1, 1), says(n1, 1)), State{}, leaderless},
		{"promoted: learns the epoch that names it",
			n2, State{}, primary, sentinelsSay(says(n2, 2), says(n1, 1)), epochOf(2), leads("n2", 2)},
		{"the failover's leader raised the epoch before moving the primary: not this node's epoch",
			n1, pastEpochOf(1), primary, sentinelsSay(failingOver(n1, 2)), pastEpochOf(1), leaderless},
		{"nor the promoted node's, until the failover ends",
			n2, State{}, primary, sentinelsSay(failingOver(n1, 2), says(n1, 1)), State{}, leaderless},
		{"an epoch that two answers pair with two primaries is nobody's",
			n1, pastEpochOf(1), primary, sentinelsSay(says(n1, 3), says(n2, 3)), pastEpochOf(1), leaderless},
		{"the newest configuration's epoch, past a Sentinel that lags",
			n2, State{}, primary, sentinelsSay(says(n2, 2), says(n2, 4), says(n3, 3)), epochOf(4), leads("n2", 4)},
		{"not an epoch that a newer configuration has superseded",
			n2, State{}, primary, sentinelsSay(says(n2, 2), says(n3, 3)), State{}, leaderless},
		{"a primary keeps its epoch, though the Sentinels have moved on (cut off from them, or not yet demoted)",
			n1, epochOf(1), primary, sentinelsSay(says(n2, 2), says(n2, 2)), epochOf(1), leads("n1", 1)},
		{"a primary keeps its epoch, though a Sentinel names it in a newer one",
			n1, epochOf(1), primary, sentinelsSay(says(n1, 3)), epochOf(1), leads("n1", 1)},
		{"demoted: its epoch is past",
			n1, epochOf(1), replicaOf("n2"), sentinelsSay(says(n2, 2)), pastEpochOf(1), follows("n2")},
		{"promoted again: the old epoch does not count",
			n1, pastEpochOf(2), primary, sentinelsSay(says(n1, 2)), pastEpochOf(2), leaderless},
		{"promoted again: a newer epoch does",
			n1, pastEpochOf(2), primary, sentinelsSay(says(n1, 2), says(n1, 5)), epochOf(5), leads("n1", 5)},
		{"a replica learns nothing from answers that name it",
			n2, State{}, replicaOf("n1"), sentinelsSay(says(n2, 2)), State{}, follows("n1")},
		{"a port is part of the name",
			n2, State{}, primary, sentinelsSay(says(Addr{"n2", 6380}, 2)), State{}, leaderless},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Learn(tc.st, tc.self, tc.role, tc.answers)
			if got != tc.want {
				t.Errorf("Learn = %+v, want %+v", got, tc.want)
			}
			if b := Belief(got, tc.self, tc.role); b != tc.belief {
				t.Errorf("Belief = %+v, want %+v", b, tc.belief)
			}
		})
	}
}

// TestTokens drives three nodes through random roles and random Sentinel
// answers, stale ones and ones in a failover's window among them, and
// checks what the rule promises: a node leads only with an epoch the
// configuration gave it, and its tokens never go down.
func TestTokens(t *testing.T) {
	nodes := []Addr{n1, n2, n3}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 1))
		config := []Addr{{}, n1} // config[e]: the primary epoch e made
		states := map[Addr]State{}
		for _, n := range nodes {
			states[n] = Initial(n.Host, "n1")
		}
		highest := map[Addr]int64{}
		for step := 0; step < 300; step++ {
			if rng.IntN(10) == 0 {
				config = append(config, nodes[rng.IntN(len(nodes))])
			}
			var answers []Answer
			for range rng.IntN(4) {
				e := 1 + rng.IntN(len(config)-1)
				if rng.IntN(5) == 0 && e > 1 {
					// The failover's leader: the new epoch, the old primary.
					answers = append(answers, failingOver(config[e-1], uint64(e)))
					continue
				}
				answers = append(answers, says(config[e], uint64(e)))
			}
			n := nodes[rng.IntN(len(nodes))]
			role := []Role{primary, replicaOf("n1"), unknown}[rng.IntN(3)]
			states[n] = Learn(states[n], n, role, answers)
			b := Belief(states[n], n, role)
			if !b.Leader {
				continue
			}
			if e := b.Token; e <= 0 || int(e) >= len(config) || config[e] != n {
				t.Fatalf("seed %d step %d: %s leads with token %d, which the configuration %v did not give it", seed, step, n.Host, e, config)
			}
			if b.Token < highest[n] {
				t.Fatalf("seed %d step %d: %s's token went down from %d to %d", seed, step, n.Host, highest[n], b.Token)
			}
			highest[n] = b.Token
		}
	}
}

func TestParseRole(t *testing.T) {
	for _, tc := range []struct {
		reply []any
		want  Role
		ok    bool
	}{
		{[]any{"master", int64(3863), []any{[]any{"n2", "6379", "3863"}}}, primary, true},
		{[]any{"slave", "n3", int64(6379), "connected", int64(17952)}, replicaOf("n3"), true},
		{[]any{"sentinel", []any{"mymaster"}}, Role{}, false},
		{[]any{"slave"}, Role{}, false},
		{nil, Role{}, false},
	} {
		got, err := ParseRole(tc.reply)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("ParseRole(%v) = %+v, %v", tc.reply, got, err)
		}
	}
}

func TestParseMaster(t *testing.T) {
	// What Redis 7.0.15's Sentinel said in the middle of a failover.
	fields := map[string]string{
		"name": "mymaster", "ip": "n2", "port": "6379", "flags": "s_down,o_down,master,failover_in_progress",
		"config-epoch": "4", "num-slaves": "2", "quorum": "2",
	}
	got, err := ParseMaster(fields)
	if want := failingOver(n2, 4); err != nil || got != want {
		t.Errorf("ParseMaster = %+v, %v; want %+v", got, err, want)
	}
	fields["flags"] = "master"
	if got, err := ParseMaster(fields); err != nil || got != says(n2, 4) {
		t.Errorf("ParseMaster = %+v, %v", got, err)
	}
	for _, bad := range []map[string]string{
		{"ip": "n2", "port": "x", "config-epoch": "1"},
		{"ip": "n2", "port": "6379", "config-epoch": "-1"},
		{"port": "6379", "config-epoch": "1"},
	} {
		if _, err := ParseMaster(bad); err == nil {
			t.Errorf("ParseMaster(%v): no error", bad)
		}
	}
}
