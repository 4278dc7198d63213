package nemesis

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
)

// A stalled or failing disk is put on the nodes the fault aims at and
// made healthy again at heal; the leader's is said to be.
func TestDiskFaultsSetAndHealTheDisk(t *testing.T) {
	ctx := context.Background()
	for name, want := range map[string][]string{
		"disk-stall-leader": {"disk {Stall:true Fail:} n2", "disk {Stall:false Fail:} n2"},
		"disk-fail-leader":  {"disk {Stall:false Fail:EIO} n2", "disk {Stall:false Fail:} n2"},
		"disk-full-leader":  {"disk {Stall:false Fail:ENOSPC} n2", "disk {Stall:false Fail:} n2"},
	} {
		c := &services{}
		a, err := catalogue[name].inject(ctx, c, rand.New(rand.NewPCG(1, 2)))
		if err != nil || !slices.Equal(a.Nodes, []string{"n2"}) {
			t.Fatalf("%s: %+v, %v", name, a, err)
		}
		if err := a.Heal(ctx); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(c.done, want) {
			t.Errorf("%s: done %v, want %v", name, c.done, want)
		}
	}
}

// A power cut cuts the nodes it aims at and restarts them at heal; a
// kill's restart, so the pacer waits for the nodes to come back.
func TestPowerCutRestarts(t *testing.T) {
	ctx := context.Background()
	c := &services{}
	f := catalogue["disk-lose-unsynced-all"]
	a, err := f.inject(ctx, c, rand.New(rand.NewPCG(1, 2)))
	if err != nil || len(a.Nodes) != 3 || !f.Kind.Restarts() || f.Family != "disk-lose-unsynced" {
		t.Fatalf("%+v, %v", a, err)
	}
	a.Heal(ctx)
	slices.Sort(c.done)
	want := []string{"power cut n1", "power cut n2", "power cut n3", "restart n1", "restart n2", "restart n3"}
	if !slices.Equal(c.done, want) {
		t.Errorf("done %v, want %v", c.done, want)
	}
}

// A disk fault on services strikes the members with data directories
// only, a member of a service that declares none never; with none
// anywhere it strikes nothing and says so.
func TestDiskFaultsOnServices(t *testing.T) {
	ctx := context.Background()
	c := &services{services: []string{"zk1", "zk2", "zk3", "sentinel"}, disks: []string{"zk1", "zk2", "zk3"}}
	a, err := catalogue["disk-lose-unsynced-service-all"].inject(ctx, c, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(slices.Values(a.Nodes)); !slices.Equal(got, []string{"zk1", "zk2", "zk3"}) {
		t.Errorf("power cut to %v, want the three members with data", got)
	}
	for seed := range uint64(20) {
		for _, name := range []string{"disk-stall-service", "disk-fail-service", "disk-lose-unsynced-service"} {
			f := catalogue[name]
			a, err := f.inject(ctx, &services{services: c.services, disks: c.disks}, rand.New(rand.NewPCG(seed, 2)))
			if err != nil || len(a.Nodes) != 1 || a.Nodes[0] == "sentinel" || !f.OnServices || f.Family != "service" {
				t.Fatalf("%s, seed %d: %+v %v (on services %v, family %s)", name, seed, a, err, f.OnServices, f.Family)
			}
		}
	}
	if _, err := catalogue["disk-stall-service"].inject(ctx, &services{services: []string{"sentinel"}}, rand.New(rand.NewPCG(1, 2))); err == nil {
		t.Error("disk-stall-service struck a service without data directories")
	}
}

// Every disk fault is had by a family of the names, and needs
// the layer; no other fault does.
func TestDiskFamilies(t *testing.T) {
	for _, family := range []string{"disk-stall", "disk-fail", "disk-lose-unsynced"} {
		groups, err := Expand([]string{family})
		if err != nil || len(groups) != 1 {
			t.Fatalf("%s: %v", family, err)
		}
		for _, f := range groups[0] {
			if !f.Kind.Disk() || f.Family != family {
				t.Errorf("%s: %s is of kind %s, family %s", family, f.Name, f.Kind, f.Family)
			}
		}
	}
	for _, name := range Names() {
		f := catalogue[name]
		if f.Kind.Disk() != slices.Contains([]Kind{DiskStall, DiskFail, LoseUnsynced}, f.Kind) {
			t.Errorf("%s: Disk() wrong", name)
		}
	}
}
