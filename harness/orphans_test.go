package harness

import (
	"os/exec"
	"testing"
	"time"
)

// An object is an orphan when the process its label names, on this
// host, is gone; one of another host never is; one with no owner only
// once it is older than any run.
func TestOrphan(t *testing.T) {
	now := time.Now()
	dead := owner{"vm", 42, 7}
	gone := func(o owner) bool { return o == dead }
	for _, tc := range []struct {
		name    string
		labels  map[string]string
		created time.Time
		want    bool
	}{
		{"owner gone", map[string]string{LabelOwner: dead.String()}, now, true},
		{"owner runs", map[string]string{LabelOwner: owner{"vm", 43, 7}.String()}, now.Add(-24 * time.Hour), false},
		{"another host's", map[string]string{LabelOwner: owner{"other", 42, 7}.String()}, now.Add(-24 * time.Hour), false},
		{"no owner, young", map[string]string{}, now.Add(-unownedAge / 2), false},
		{"no owner, old", map[string]string{}, now.Add(-2 * unownedAge), true},
		{"unreadable owner, old", map[string]string{LabelOwner: "vm/x/7"}, now.Add(-2 * unownedAge), true},
	} {
		if got := orphan(tc.labels, tc.created, now, "vm", gone); got != tc.want {
			t.Errorf("%s: orphan = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// This process is not gone; a process that ended is, and so is a pid
// that another process holds now.
func TestOwnerGone(t *testing.T) {
	self, err := thisProcess()
	if err != nil {
		t.Fatal(err)
	}
	if back, ok := parseOwner(self.String()); !ok || back != self {
		t.Fatalf("parseOwner(%q) = %v, %v", self, back, ok)
	}
	if ownerGone(self) {
		t.Error("this process is taken for gone")
	}
	reused := self
	reused.start++
	if !ownerGone(reused) {
		t.Error("another process under this pid is taken for the owner")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	_, start, err := procStat(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	child := owner{self.host, cmd.Process.Pid, start}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		// Ended, and not yet reaped: a zombie.
		if state, _, err := procStat(child.pid); err != nil || state == "Z" || time.Now().After(deadline) {
			break
		}
	}
	if !ownerGone(child) {
		t.Errorf("process %d ended, not reaped, and is not gone", child.pid)
	}
	cmd.Wait()
	if !ownerGone(child) {
		t.Errorf("process %d ended and is not gone", child.pid)
	}
}
