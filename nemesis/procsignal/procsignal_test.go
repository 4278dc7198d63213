package procsignal

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// A /proc with init, an agent's child and a thread-less kernel entry.
func fakeProc(t *testing.T, comms map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for pid, comm := range comms {
		if err := os.MkdirAll(filepath.Join(root, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, pid, "comm"), []byte(comm+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(root, "self"), 0o755) // not a process: no number
	return root
}

func TestReadListsProcessesInPIDOrder(t *testing.T) {
	ps, err := Read(fakeProc(t, map[string]string{"1": "etcd-agent", "27": "etcd", "9": "sh"}))
	if err != nil {
		t.Fatal(err)
	}
	want := []Process{{1, "etcd-agent"}, {9, "sh"}, {27, "etcd"}}
	if !slices.Equal(ps, want) {
		t.Errorf("read %v, want %v", ps, want)
	}
}

// The child is sent the signal; init, which its own namespace cannot
// stop, is left to the caller; other processes are not touched.
func TestStopSignalsTheNamedAndLeavesInitToTheCaller(t *testing.T) {
	ps := []Process{{1, "java"}, {12, "java"}, {13, "etcd"}, {40, "java"}}
	var sent []int
	r, err := Do(Stop, "java", ps, func(pid int, s syscall.Signal) error {
		if s != syscall.SIGSTOP {
			t.Errorf("sent %v to %d", s, pid)
		}
		sent = append(sent, pid)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Init || !slices.Equal(r.Signalled, []int{12, 40}) || !slices.Equal(sent, []int{12, 40}) {
		t.Errorf("got %+v, sent to %v; want init and 12, 40", r, sent)
	}
}

// A name longer than the kernel keeps matches the name as it kept it.
func TestLongNamesMatchAsTheKernelCutsThem(t *testing.T) {
	ps := []Process{{7, "redis-sentinel-"}}
	r, _ := Do(List, "redis-sentinel-agent", append(ps, Process{9, "sh"}, Process{10, "sh"}), nil)
	if !slices.Equal(r.Signalled, []int{7}) || !slices.Equal(r.Running, []string{"redis-sentinel-", "sh"}) {
		t.Errorf("listed %v running %v, want [7] and every name once", r.Signalled, r.Running)
	}
}

func TestNothingNamedSoIsNotFound(t *testing.T) {
	r, err := Do(Continue, "postgres", []Process{{1, "patroni"}}, func(int, syscall.Signal) error {
		t.Error("signalled a process not named so")
		return nil
	})
	if err != nil || r.Found() {
		t.Errorf("got %+v, %v; want nothing found", r, err)
	}
}

// A process that exited between the read and the signal is skipped, any
// other refusal is said.
func TestAGoneProcessIsSkippedAndARefusalSaid(t *testing.T) {
	ps := []Process{{5, "etcd"}, {6, "etcd"}}
	r, err := Do(Stop, "etcd", ps, func(pid int, _ syscall.Signal) error {
		if pid == 5 {
			return syscall.ESRCH
		}
		return syscall.EPERM
	})
	if err == nil || len(r.Signalled) != 1 {
		t.Errorf("got %+v, %v; want 5 skipped and 6's refusal said", r, err)
	}
	if _, err := Do("freeze", "etcd", ps, nil); err == nil {
		t.Error("an unknown action was taken")
	}
}
