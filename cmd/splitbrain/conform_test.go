package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// conform prints a line per rule and exits 1 when one is broken; its
// JUnit report has a testcase per rule, the broken one a failure and the
// ones it left unjudged skipped.
func TestConformPrintsRulesAndWritesJUnit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts containers")
	}
	xml := filepath.Join(t.TempDir(), "conform.xml")
	var code int
	out := captureStdout(t, func() {
		code = run([]string{"conform", "--target-dir", "../../harness/conform/testdata/no-leader", "--junit", xml})
	})
	if code != exitInvalid {
		t.Errorf("exited %d, want %d:\n%s", code, exitInvalid, out)
	}
	for _, want := range []string{"pass  health  ", "FAIL  one-leader  ", "skip  leader-write  ", "conform conform-no-leader: 1 of 9 rules broken", "the containers' logs: "} {
		if !strings.Contains(out, want) {
			t.Errorf("conform printed no %q:\n%s", want, out)
		}
	}
	if i := strings.LastIndex(out, "the containers' logs: "); i >= 0 {
		logs := strings.TrimSpace(out[i+len("the containers' logs: "):])
		defer os.RemoveAll(filepath.Dir(logs))
	}
	b, err := os.ReadFile(xml)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<testsuite name="conform-no-leader" tests="9" failures="1" errors="0" skipped="2"`, `<testcase name="one-leader"`, `<failure message="no single leader`, `<skipped message="no single leader to write through`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the report lacks %q:\n%s", want, b)
		}
	}
}
