package diskfs

import (
	"os"
	"path/filepath"
	"testing"
)

// A file on a disk that the undo log watches, written as the layer
// writes it: each change recorded before it is made.
type watched struct {
	t    *testing.T
	undo *Undo
	f    *os.File
	path string
}

func (w watched) write(off int64, s string) {
	w.t.Helper()
	if err := w.undo.Before(int(w.f.Fd()), w.path, off, int64(len(s))); err != nil {
		w.t.Fatal(err)
	}
	if _, err := w.f.WriteAt([]byte(s), off); err != nil {
		w.t.Fatal(err)
	}
}

func (w watched) truncate(size int64) {
	w.t.Helper()
	if err := w.undo.Before(int(w.f.Fd()), w.path, size, 1<<62); err != nil {
		w.t.Fatal(err)
	}
	if err := w.f.Truncate(size); err != nil {
		w.t.Fatal(err)
	}
}

func (w watched) sync() {
	w.t.Helper()
	if err := w.undo.Forget(w.path); err != nil {
		w.t.Fatal(err)
	}
}

func newWatched(t *testing.T) (watched, string) {
	data := t.TempDir()
	undo, err := NewUndo(filepath.Join(t.TempDir(), "undo"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(data, "log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return watched{t, undo, f, path}, path
}

func content(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A power cut leaves each file as it was at its last fsync: overwrites,
// appends and truncations since then undone, in any order.
func TestPowerCutLeavesWhatWasSynced(t *testing.T) {
	w, path := newWatched(t)
	w.write(0, "term=1 vote=a;")
	w.sync()
	w.write(5, "2 vote=b;")     // overwrite past the end
	w.write(14, "term=3;")      // append
	w.truncate(4)               // cut into the synced part
	w.write(10, "hole after 4") // write past the end, leaving a hole
	if got := content(t, path); got == "term=1 vote=a;" {
		t.Fatal("the writes did not reach the file")
	}
	n, err := w.undo.Rollback()
	if err != nil || n != 1 {
		t.Fatalf("rolled back %d files: %v", n, err)
	}
	if got := content(t, path); got != "term=1 vote=a;" {
		t.Fatalf("after the power cut the file holds %q, want what was synced", got)
	}
	if files, _ := w.undo.Pending(); files != 0 {
		t.Fatalf("%d files still have records after the rollback", files)
	}
}

// A file never synced comes back empty, as a file made and written but
// never synced does after a power cut (it exists: metadata is kept).
func TestNeverSyncedComesBackEmpty(t *testing.T) {
	w, path := newWatched(t)
	w.write(0, "vote=a")
	if _, err := w.undo.Rollback(); err != nil {
		t.Fatal(err)
	}
	if got := content(t, path); got != "" {
		t.Fatalf("got %q, want an empty file", got)
	}
}

// Discard keeps what was written: a kill, not a power cut. Writes after
// a sync are the only ones a later cut undoes.
func TestKillKeepsWritesAndSyncForgetsThem(t *testing.T) {
	w, path := newWatched(t)
	w.write(0, "a")
	if err := w.undo.Discard(); err != nil {
		t.Fatal(err)
	}
	w.write(1, "b")
	w.sync()
	w.write(2, "c")
	if files, bytes := w.undo.Pending(); files != 1 || bytes == 0 {
		t.Fatalf("pending %d files, %d bytes; want the one write after the sync", files, bytes)
	}
	if _, err := w.undo.Rollback(); err != nil {
		t.Fatal(err)
	}
	if got := content(t, path); got != "ab" {
		t.Fatalf("got %q, want %q", got, "ab")
	}
}

// A record cut short by a kill while it was appended is dropped: its
// write had not begun.
func TestTornRecordIsDropped(t *testing.T) {
	w, path := newWatched(t)
	w.write(0, "synced")
	w.sync()
	w.write(0, "lost!!")
	logs, _ := os.ReadDir(w.undo.dir)
	torn := filepath.Join(w.undo.dir, logs[0].Name())
	b, _ := os.ReadFile(torn)
	if err := os.WriteFile(torn, append(b, 1, 2, 3), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := w.undo.Rollback(); err != nil {
		t.Fatal(err)
	}
	if got := content(t, path); got != "synced" {
		t.Fatalf("got %q", got)
	}
}

func TestFaultValidate(t *testing.T) {
	for _, f := range []Fault{{}, {Stall: true}, {Fail: "EIO"}, {Fail: "ENOSPC"}} {
		if err := f.Validate(); err != nil {
			t.Errorf("%+v: %v", f, err)
		}
	}
	for _, f := range []Fault{{Fail: "EPERM"}, {Stall: true, Fail: "EIO"}} {
		if f.Validate() == nil {
			t.Errorf("%+v accepted", f)
		}
	}
}

// A rename moves a file's records with it, and those of every file under
// a renamed directory; the records of a file replaced are dropped.
func TestRenameMovesTheRecords(t *testing.T) {
	w, path := newWatched(t)
	w.write(0, "unsynced")
	dir := filepath.Dir(path)
	moved := filepath.Join(dir, "sub", "moved")
	if err := os.MkdirAll(filepath.Dir(moved), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path, moved); err != nil {
		t.Fatal(err)
	}
	if err := w.undo.Move(path, moved); err != nil {
		t.Fatal(err)
	}
	renamed := filepath.Join(dir, "renamed")
	if err := os.Rename(filepath.Dir(moved), renamed); err != nil {
		t.Fatal(err)
	}
	if err := w.undo.Move(filepath.Dir(moved), renamed); err != nil {
		t.Fatal(err)
	}
	if n, err := w.undo.Rollback(); err != nil || n != 1 {
		t.Fatalf("rolled back %d files: %v", n, err)
	}
	if got := content(t, filepath.Join(renamed, "moved")); got != "" {
		t.Fatalf("the renamed file holds %q after the power cut", got)
	}
}
