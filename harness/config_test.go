package harness

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/targets"
)

// Service faults need a target with services; the run says so before
// anything starts, and takes them for a target that has some.
func TestPrepareServiceFaults(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RepoRoot, cfg.TargetsRoot, cfg.ResultsDir = "..", "../targets", t.TempDir()
	cfg.Nemesis = []string{"kill", "service"}
	_, err := prepare(cfg)
	if !IsBadInput(err) || !strings.Contains(err.Error(), "raft has no service containers") {
		t.Fatalf("raft with service faults: %v", err)
	}
	cfg.Target = "lease"
	r, err := prepare(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(r.faults); got != 8 {
		t.Errorf("%d faults, want kill's 5 and service's 3", got)
	}
	if img := ServiceImage(r.manifest, r.manifest.Services[0]); img != "splitbrain/lease/store:latest" {
		t.Errorf("service image %s", img)
	}
}

func TestAddressPlan(t *testing.T) {
	plan, err := addressPlan(netip.MustParsePrefix("172.19.0.0/16"), []string{"n1", "n2"},
		[]targets.Member{{Name: "sentinel1", Node: "n1"}, {Name: "etcd1"}, {Name: "sentinel2", Node: "n2"}, {Name: "etcd2"}})
	if err != nil {
		t.Fatal(err)
	}
	// A member beside a node answers at the node's address.
	want := map[string]string{"resource": "172.19.0.2", "n1": "172.19.0.11", "n2": "172.19.0.12",
		"sentinel1": "172.19.0.11", "sentinel2": "172.19.0.12", "etcd1": "172.19.0.120", "etcd2": "172.19.0.121"}
	if len(plan) != len(want) {
		t.Errorf("plan %v", plan)
	}
	for name, addr := range want {
		if plan[name].String() != addr {
			t.Errorf("%s at %s, want %s", name, plan[name], addr)
		}
	}
	if _, err := addressPlan(netip.MustParsePrefix("10.1.2.0/28"), []string{"n1"}, nil); err == nil {
		t.Error("a /28 held the plan")
	}
}

// The run reads each fault's kind and reach: clock faults on nodes that
// read no clock are noted as blind, a service's clock fault wants a service
// whose clock can be skewed, and only partitions need packet-filter
// sidecars.
func TestPrepareFaultKinds(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RepoRoot, cfg.TargetsRoot, cfg.ResultsDir = "..", "../targets", t.TempDir()
	cfg.Target, cfg.Nemesis = "redis-lease-volatile", []string{"clock"}
	r, err := prepare(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.info.Notes) != 1 || !strings.HasPrefix(r.info.Notes[0], "clock-bump, clock-strobe, clock-rate reach nothing in target redis-lease-volatile") {
		t.Errorf("notes %q, want clock-service's nodes' faults blind", r.info.Notes)
	}
	if r.partitions() {
		t.Error("clock faults need packet filters")
	}
	cfg.Target, cfg.Nemesis = "lease", []string{"clock-service"}
	if _, err := prepare(cfg); !IsBadInput(err) || !strings.Contains(err.Error(), "no service of target lease has clock: faketime") {
		t.Errorf("clock-service on lease: %v", err)
	}
	cfg.Nemesis = []string{"kill-service", "partition-service"}
	if r, err := prepare(cfg); err != nil || !r.partitions() {
		t.Errorf("partition-service needs no packet filters (%v)", err)
	}

	// Nodes that wait until absolute deadlines take no clock rate: the
	// family leaves it out, saying so, and one asked for is refused.
	cfg.Target, cfg.Nemesis = "patroni", []string{"clock"}
	r, err = prepare(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var drawn []string
	for _, f := range r.faults {
		drawn = append(drawn, f.Name)
	}
	if !slices.Equal(drawn, []string{"clock-bump", "clock-strobe", "clock-service"}) || len(r.info.Notes) != 1 || !strings.HasPrefix(r.info.Notes[0], "clock-rate left out for target patroni") {
		t.Errorf("the clock family on patroni draws %v, notes %q; want bumps, strobes and its etcd's jumps, clock-rate left out", drawn, r.info.Notes)
	}
	for _, rate := range []string{"clock-rate", "clock-slow-leader", "clock-drift-leader"} {
		cfg.Nemesis = []string{rate}
		if _, err := prepare(cfg); !IsBadInput(err) || !strings.Contains(err.Error(), "waits: absolute") {
			t.Errorf("%s on patroni: %v", rate, err)
		}
	}
}

// Every node and service member of a run gets the run's secret, the same
// for all of them, and the next run gets another.
func TestRunSecret(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RepoRoot, cfg.TargetsRoot, cfg.ResultsDir = "..", "../targets", t.TempDir()
	cfg.Target = "lease"
	var secrets []string
	for range 2 {
		r, err := prepare(cfg)
		if err != nil {
			t.Fatal(err)
		}
		r.cluster = &cluster{nodes: []string{"n1", "n2"}}
		node, member := r.nodeEnv("n1")[contract.EnvSecret], r.memberEnv(r.manifest.Services[0], "store")[contract.EnvSecret]
		if len(node) < 26 || node != member || node != r.nodeEnv("n2")[contract.EnvSecret] {
			t.Fatalf("n1 has secret %q, n2 %q, the store %q", node, r.nodeEnv("n2")[contract.EnvSecret], member)
		}
		secrets = append(secrets, node)
	}
	if secrets[0] == secrets[1] {
		t.Errorf("two runs share the secret %q", secrets[0])
	}
}

// --faults bounds a run by its faults: exactly that many, paced or on the
// rhythm asked for, the faults' ceiling instead of the time limit, and
// the flag in the command that repeats it. It needs faults to count.
func TestPrepareFaultBound(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RepoRoot, cfg.TargetsRoot, cfg.ResultsDir = "..", "../targets", t.TempDir()
	cfg.Target, cfg.Nemesis, cfg.Faults = "bully", []string{"kill-leader"}, 6
	r, err := prepare(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := r.schedule
	if len(s.Faults) != 6 || s.Pace == nil || s.Steady != s.Pace.Wait {
		t.Fatalf("schedule %+v: want 6 paced faults, steady for the pace's wait", s)
	}
	if got, want := cfg.limit(s), s.Ceiling(cfg.StartTimeout, cfg.Nodes); got != want || got <= cfg.TimeLimit {
		t.Errorf("limit %s, want the ceiling %s", got, want)
	}
	if !strings.HasSuffix(r.info.Command, " --faults=6") {
		t.Errorf("command %q", r.info.Command)
	}

	cfg.NemesisInterval = 8 * time.Second
	if r, err = prepare(cfg); err != nil || len(r.schedule.Steps) != 12 || r.schedule.Pace != nil {
		t.Errorf("on a rhythm: %+v, %v", r.schedule, err)
	}

	cfg.Faults, cfg.NemesisInterval = 0, 0
	if r, err = prepare(cfg); err != nil || r.schedule.Steady != 0 || cfg.limit(r.schedule) != cfg.TimeLimit {
		t.Errorf("without --faults: %+v, %v", r.schedule, err)
	}

	for _, bad := range []func(*Config){
		func(c *Config) { c.Faults = -1 },
		func(c *Config) { c.Faults, c.Nemesis = 2, []string{"none"} },
		func(c *Config) { c.Faults, c.Schedule = 2, "schedule.json" },
	} {
		c := cfg
		bad(&c)
		if err := c.Validate(); !IsBadInput(err) {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// A target that says its cluster needs longer to start gets that long,
// and a run that gives longer keeps its own; run.json says which held.
func TestPrepareStartTimeout(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RepoRoot, cfg.TargetsRoot, cfg.ResultsDir = "..", "../targets", t.TempDir()
	cfg.Target = "patroni"
	for _, tc := range []struct{ given, want time.Duration }{
		{30 * time.Second, 3 * time.Minute},
		{5 * time.Minute, 5 * time.Minute},
	} {
		cfg.StartTimeout = tc.given
		r, err := prepare(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r.cfg.StartTimeout != tc.want || r.info.Config.StartTimeout != tc.want {
			t.Errorf("--start-timeout %s: waits %s (run.json %s), want %s", tc.given, r.cfg.StartTimeout, r.info.Config.StartTimeout, tc.want)
		}
	}
}
