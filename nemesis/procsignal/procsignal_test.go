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
	if err := os.Symlink("9", filepath.Join(root, "self")); err != nil { // the reader
		t.Fatal(err)
	}
	return root
}

func TestReadListsProcessesInPIDOrderButItself(t *testing.T) {
	ps, err := Read(fakeProc(t, map[string]string{"1": "etcd-agent", "27": "etcd", "9": "app", "12": "sh"}))
	if err != nil {
		t.Fatal(err)
	}
	want := []Process{{1, "etcd-agent"}, {12, "sh"}, {27, "etcd"}} // 9, the reader, left out
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
	r, _ := Do(List, "redis-sentinel-agent", append(ps, Process{1, "app"}, Process{9, "sh"}, Process{10, "sh"}), nil)
	if !slices.Equal(r.Signalled, []int{7}) || !slices.Equal(r.Running, []string{"app", "redis-sentinel-", "sh"}) || r.InitComm != "app" {
		t.Errorf("listed %v running %v, init %q; want [7], every name once, init app", r.Signalled, r.Running, r.InitComm)
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
