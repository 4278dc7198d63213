package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/splitbrain/splitbrain/harness/conform"
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
	for _, want := range []string{"pass  health  ", "FAIL  one-leader  ", "skip  leader-write  ", "the containers' logs: "} {
		if !strings.Contains(out, want) {
			t.Errorf("conform printed no %q:\n%s", want, out)
		}
	}
	// The fixture breaks one-leader; on a loaded machine a timing rule
	// (leader-latency's 200 ms) may break beside it, and is counted.
	broken := len(regexp.MustCompile(`(?m)^FAIL  `).FindAllString(out, -1))
	rules := len(conform.Rules())
	if want := fmt.Sprintf("conform conform-no-leader: %d of %d rules broken", broken, rules); broken == 0 || !strings.Contains(out, want) {
		t.Errorf("conform printed no %q:\n%s", want, out)
	}
	if i := strings.LastIndex(out, "the containers' logs: "); i >= 0 {
		logs := strings.TrimSpace(out[i+len("the containers' logs: "):])
		defer os.RemoveAll(filepath.Dir(logs))
	}
	b, err := os.ReadFile(xml)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{fmt.Sprintf(`<testsuite name="conform-no-leader" tests="%d" failures="%d" errors="0" skipped="2"`, rules, broken), `<testcase name="one-leader"`, `<failure message="no single leader`, `<skipped message="no single leader to write through`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the report lacks %q:\n%s", want, b)
		}
	}
}
