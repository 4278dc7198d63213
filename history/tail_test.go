package history

import (
	"os"
	"path/filepath"
	"testing"
)

// A tail returns each complete line once, and a line being written only
// once it is whole.
func TestTailReadsWhatWasAdded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	tail := NewTail(path, ReadEvents)
	if got, err := tail.Next(); err != nil || len(got) != 0 {
		t.Fatalf("before the file exists: %v %v", got, err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	write := func(s string) {
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"type":"leader","time":1,"node":"n1"}` + "\n" + `{"type":"leader","ti`)
	got, err := tail.Next()
	if err != nil || len(got) != 1 || got[0].Node != "n1" {
		t.Fatalf("first look: %+v %v", got, err)
	}
	if got, _ := tail.Next(); len(got) != 0 {
		t.Fatalf("a line half written was read: %+v", got)
	}
	write(`me":2,"node":"n2"}` + "\n" + `{"type":"leader","time":3,"node":"n3"}` + "\n")
	got, err = tail.Next()
	if err != nil || len(got) != 2 || got[0].Node != "n2" || got[1].Node != "n3" {
		t.Fatalf("second look: %+v %v", got, err)
	}
	write("not json\n")
	if _, err := tail.Next(); err == nil {
		t.Error("a bad line read without an error")
	}
}
