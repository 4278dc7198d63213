package history

import (
	"errors"
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
