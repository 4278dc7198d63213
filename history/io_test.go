package history

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRecorderWritesAsItGoes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	rec, err := NewRecorder(path, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	rec.Record(Event{Type: Invoke, Process: 1, F: Write, Key: "k", Value: "v"})
	rec.Record(Event{Type: OK, Process: 1, F: Write, Key: "k", Value: "v", Token: 3})
	// Read before Close: what a killed controller leaves behind.
	events, err := ReadFile(path, ReadEvents)
	if err != nil {
		t.Fatal(err)
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

func TestTruncatedLineIsNamed(t *testing.T) {
	in := `{"index":0,"time":1,"type":"invoke"}
{"index":1,"time":2,"type":"ok"}
{"index":2,"ti`
	events, err := ReadEvents(strings.NewReader(in))
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("want an error naming line 3, got %v", err)
	}
	if len(events) != 2 {
		t.Errorf("kept %d events before the bad line, want 2", len(events))
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
