package nemesis

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	fs, err := Parse([]string{"kill", " none", ""})
	if err != nil || len(fs) != 1 || fs[0].Name() != "kill" {
		t.Fatalf("got %v, %v", fs, err)
	}
	if fs, err := Parse([]string{"none"}); err != nil || len(fs) != 0 {
		t.Errorf("none: %v, %v", fs, err)
	}
	if _, err := Parse([]string{"meteor"}); err == nil || !strings.Contains(err.Error(), "kill") {
		t.Errorf("unknown nemesis: %v", err)
	}
}
