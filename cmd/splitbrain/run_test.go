package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A single run writes a JUnit report of one case: a failure when it is
// invalid.
func TestRunWritesJUnit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts containers")
	}
	tmp := t.TempDir()
	xml := filepath.Join(tmp, "run.xml")
	code := run([]string{"run", "--target-dir", "../../harness/testdata/twin-leaders", "--nodes", "3", "--nemesis", "none", "--time-limit", "4s",
		"--quiet-period", "1s", "--results", tmp, "--junit", xml, "--seed", "3"})
	if code != exitInvalid {
		t.Fatalf("exited %d, want %d", code, exitInvalid)
	}
	b, err := os.ReadFile(xml)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<testsuite name="twin-leaders"`, `tests="1"`, `failures="1"`, `<failure message="want valid, got invalid`, "reproduce: splitbrain run", "--seed=3", "report.html"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the report lacks %q:\n%s", want, b)
		}
	}
}
