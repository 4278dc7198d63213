package sdk

import (
	"bytes"
	"log"
	"strings"
	"testing"
)

func TestChangeLogSaysEachChangeOnce(t *testing.T) {
	var out bytes.Buffer
	w, flags := log.Writer(), log.Flags()
	log.SetOutput(&out)
	log.SetFlags(0)
	defer func() { log.SetOutput(w); log.SetFlags(flags) }()

	var c ChangeLog
	c.Printf("leads", "leads (term %d)", 1)
	c.Printf("leads", "leads (term %d)", 2) // the same state: not again
	c.Printf("follows", "follows")
	c.Reset()
	c.Printf("follows", "follows")
	if got, want := out.String(), "leads (term 1)\nfollows\nfollows\n"; got != want {
		t.Errorf("logged %q, want %q", got, want)
	}
	if strings.Contains(out.String(), "term 2") {
		t.Error("a line of an unchanged key was logged")
	}
}
