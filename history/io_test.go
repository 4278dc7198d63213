package history

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestRecorderWritesAsItGoes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	rec, err := NewRecorder(path, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	rec.Record(Event{Type: Invoke, Process: 1, F: Write, Key: "k", Value: "v"})
	rec.Record(Event{Type: OK, Process: 1, F: Write, Key: "k", Value: "v", Token: 3})
	// Read before Close: what a killed controller leaves behind, once
	// the writer reached it.
	var events []Event
	for deadline := time.Now().Add(5 * time.Second); len(events) < 2 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if events, err = ReadFile(path, ReadEvents); err != nil {
			t.Fatal(err)
		}
	}
	if len(events) != 2 || events[0].Index != 0 || events[1].Index != 1 || events[1].Token != 3 {
		t.Fatalf("read back %+v", events)
	}
	if events[1].Time < events[0].Time {
		t.Errorf("time went backwards: %d then %d", events[0].Time, events[1].Time)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
}

// A write the disk holds up holds up the file, not Record: events go on
// being stamped when they happen, and reach the file in order, whole,
// once it takes them. A pipe nobody reads is the disk that stalls.
func TestRecorderDoesNotWaitForAStalledWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if err := unix.Mkfifo(path, 0o644); err != nil {
		t.Skip(err)
	}
	reader, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	rec, err := NewRecorder(path, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// More than a pipe holds (64 KiB): the writer is stuck in write(2).
	const n = 2000
	value := strings.Repeat("v", 100)
	var done atomic.Int64 // not rec.Count, which a stalled Record would hold up
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		for i := range n {
			rec.Record(Event{Type: Invoke, Process: i + 1, F: Write, Key: "k", Value: value})
			done.Add(1)
		}
	}()
	select {
	case <-recorded:
	case <-time.After(5 * time.Second):
		t.Fatalf("5 s on, %d of %d events recorded behind a stalled file", done.Load(), n)
	}
	if rec.Count() != n {
		t.Errorf("counted %d events, want %d", rec.Count(), n)
	}
	if err := unix.SetNonblock(int(reader.Fd()), false); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- rec.Close() }()
	events, err := ReadEvents(reader) // until Close ends the writer's end
	if err != nil {
		t.Fatal(err)
	}
	<-closed // a pipe cannot be synced: its error is not the point
	if len(events) != n {
		t.Fatalf("the file took %d events, want %d", len(events), n)
	}
	for i, e := range events {
		if e.Index != int64(i) || e.Process != i+1 || i > 0 && e.Time < events[i-1].Time {
			t.Fatalf("event %d read back as %+v", i, e)
		}
	}
}

// A write that fails (a full disk) stops the writer: Failed is closed,
// and Err and every Close say why.
func TestRecorderStopsAtAFailedWrite(t *testing.T) {
	rec, err := NewRecorder("/dev/full", time.Now())
	if err != nil {
		t.Skip(err)
	}
	rec.Record(Event{Type: Leader, Node: "n1"})
	select {
	case <-rec.Failed():
	case <-time.After(5 * time.Second):
		t.Fatal("no failure 5 s after a write to /dev/full")
	}
	if !errors.Is(rec.Err(), syscall.ENOSPC) {
		t.Errorf("Err: %v, want ENOSPC", rec.Err())
	}
	rec.Record(Event{Type: Leader, Node: "n2"}) // stamped, not written
	if rec.Count() != 2 {
		t.Errorf("counted %d events, want 2", rec.Count())
	}
	if err := rec.Close(); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Close: %v, want ENOSPC", err)
	}
	if err := rec.Close(); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Close again: %v, want ENOSPC", err)
	}
}

func TestTruncatedLineIsNamed(t *testing.T) {
	in := `{"index":0,"time":1,"type":"invoke","process":1}
{"index":1,"time":2,"type":"ok","process":1}
{"index":2,"ti`
	events, err := ReadEvents(strings.NewReader(in))
	var le *LineError
	if !errors.As(err, &le) || le.Line != 3 || !le.Truncated {
		t.Fatalf("want a truncated line 3, got %v", err)
	}
	if !strings.Contains(err.Error(), "line 3 is cut short") {
		t.Errorf("message: %v", err)
	}
	if len(events) != 2 {
		t.Errorf("kept %d events before the bad line, want 2", len(events))
	}
}

func TestMalformedEventIsNamed(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{`{"index":1,"time":2,"type":"bogus"}`, `unknown event type "bogus"`},
		{`{"index":1,"time":2,"type":"ok"}`, "without a process"},
		{`{"index":1,"time":2,"type":"leader"}`, "without a node"},
		{`{"index":1,"time":2,"type":"nemesis","phase":"maybe"}`, `phase "maybe"`},
		{`{"index":1,"time":"soon","type":"leader"}`, "cannot unmarshal"},
	} {
		in := `{"index":0,"time":1,"type":"leader","node":"n1"}` + "\n" + tc.line + "\n{}\n"
		_, err := ReadEvents(strings.NewReader(in))
		var le *LineError
		if !errors.As(err, &le) || le.Line != 2 || le.Truncated || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want line 2 saying %q", tc.line, err, tc.want)
		}
	}
}

func TestReadFileNamesThePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resource.jsonl")
	os.WriteFile(path, []byte("not json\n"), 0o644)
	_, err := ReadFile(path, ReadDecisions)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("got %v", err)
	}
}
