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
