package results

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const junitSchema = "testdata/junit.xsd"

// xmllint finds libxml2's validator. Without it the test is skipped on a
// developer's machine, and fails in CI, where skipping would hide that the
// reports were never checked against the schema.
func xmllint(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("xmllint")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("xmllint is not installed, so JUnit reports cannot be checked against the schema: run `make deps` (it installs libxml2-utils)")
		}
		t.Skip("xmllint is not installed (make deps installs libxml2-utils)")
	}
	return path
}

// Exit codes of xmllint that judge the document, not the tool or schema.
const (
	notXML     = 1 // not well-formed, as a control character makes it
	notAllowed = 3 // well-formed, but not what the schema allows
)

// validate checks the XML file at path against the schema: 0 if it is
// valid, else notXML or notAllowed and xmllint's complaint.
func validate(t *testing.T, lint, path string) (code int, complaint string) {
	t.Helper()
	out, err := exec.Command(lint, "--noout", "--schema", junitSchema, path).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, ""
	case errors.As(err, &exit) && (exit.ExitCode() == notXML || exit.ExitCode() == notAllowed):
		return exit.ExitCode(), string(out)
	default: // the schema or the tool is broken: no verdict on the document
		t.Fatalf("xmllint %s: %v\n%s", path, err, out)
		return 0, ""
	}
}

func junitFixture() Suite {
	at := 3.25
	c := func(i int, target, outcome, verdict, msg, run string) Case {
		return Case{
			Index: i, Name: fmt.Sprintf("%s; partition; seed %d", target, i+1), Target: target,
			Expect: "valid", Outcome: outcome, Verdict: verdict, Message: msg,
			Seconds: 1.5, Command: "splitbrain run --target=" + target, Run: run,
		}
	}
	s := Suite{Name: "catalogue", File: "targets/catalogue.yaml", Total: 6,
		Started: time.Date(2025, 3, 1, 12, 30, 5, 0, time.FixedZone("CET", 3600)),
		Cases: []Case{
			c(0, "raft", Pass, "valid", "", "r0"),
			c(1, "bully", Failure, "invalid", "want valid, got invalid by fencing; first, fencing at 3.25 s: token <7> & \"8\"\x01 both accepted", "r1"),
			c(2, "raft", Error, "unknown", "unknown: linearizable: too many states", "r2"),
			c(3, "redis", Error, "", "the harness failed: n3 never became healthy; its log ends in ]]>", "r3"),
			c(4, "bully", Pass, "valid", "", ""),
			c(5, "raft", Failure, "invalid", "want valid, got invalid by leader-overlap", "r5"),
		}}
	s.Cases[1].FirstViolation, s.Cases[1].StoppedEarly = &at, true
	return s
}

// What the test reads back of a report.
type (
	parsedSuites struct {
		Name     string        `xml:"name,attr"`
		Tests    int           `xml:"tests,attr"`
		Failures int           `xml:"failures,attr"`
		Errors   int           `xml:"errors,attr"`
		Suites   []parsedSuite `xml:"testsuite"`
	}
	parsedSuite struct {
		Name      string       `xml:"name,attr"`
		Tests     int          `xml:"tests,attr"`
		Failures  int          `xml:"failures,attr"`
		Errors    int          `xml:"errors,attr"`
		Time      string       `xml:"time,attr"`
		Timestamp string       `xml:"timestamp,attr"`
		Cases     []parsedCase `xml:"testcase"`
	}
	parsedCase struct {
		Name      string         `xml:"name,attr"`
		Classname string         `xml:"classname,attr"`
		Failure   *parsedProblem `xml:"failure"`
		Error     *parsedProblem `xml:"error"`
		SystemOut string         `xml:"system-out"`
	}
	parsedProblem struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
)

func TestJUnitMatchesSchema(t *testing.T) {
	lint := xmllint(t)
	s, root := junitFixture(), "/srv/results"
	var buf, again bytes.Buffer
	if err := WriteJUnit(&buf, s, root); err != nil {
		t.Fatal(err)
	}
	if err := WriteJUnit(&again, s, root); err != nil || !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Errorf("two reports of the same suite differ (%v)", err)
	}
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, complaint := validate(t, lint, path); code != 0 {
		t.Fatalf("the report does not match the schema:\n%s\n%s", complaint, buf.Bytes())
	}

	// Readers that do not resolve character references would show &#xA;.
	if !bytes.Contains(buf.Bytes(), []byte("\nreproduce: ")) {
		t.Errorf("the lines of system-out are not broken by line breaks:\n%s", buf.Bytes())
	}

	var doc parsedSuites
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Name != "catalogue" || doc.Tests != 6 || doc.Failures != 2 || doc.Errors != 2 {
		t.Errorf("testsuites %q: %d tests, %d failures, %d errors; want catalogue: 6, 2, 2", doc.Name, doc.Tests, doc.Failures, doc.Errors)
	}
	want := []parsedSuite{ // in the order the targets first appear
		{Name: "raft", Tests: 3, Failures: 1, Errors: 1, Time: "4.500"},
		{Name: "bully", Tests: 2, Failures: 1, Errors: 0, Time: "3.000"},
		{Name: "redis", Tests: 1, Failures: 0, Errors: 1, Time: "1.500"},
	}
	if len(doc.Suites) != len(want) {
		t.Fatalf("%d testsuites, want %d", len(doc.Suites), len(want))
	}
	for i, w := range want {
		g := doc.Suites[i]
		if g.Name != w.Name || g.Tests != w.Tests || g.Failures != w.Failures || g.Errors != w.Errors || g.Time != w.Time {
			t.Errorf("testsuite %d: %s, %d tests, %d failures, %d errors, %s s; want %s, %d, %d, %d, %s s",
				i, g.Name, g.Tests, g.Failures, g.Errors, g.Time, w.Name, w.Tests, w.Failures, w.Errors, w.Time)
		}
		if g.Timestamp != "2025-03-01T11:30:05" {
			t.Errorf("testsuite %s: timestamp %s, want the start in UTC without a zone", g.Name, g.Timestamp)
		}
	}
	checkJUnitCases(t, s, doc, root)
}

// checkJUnitCases finds each case of s in its target's testsuite, with
// its outcome and the lines a reader needs to look into it.
func checkJUnitCases(t *testing.T, s Suite, doc parsedSuites, root string) {
	t.Helper()
	byTarget := map[string][]parsedCase{}
	for _, su := range doc.Suites {
		byTarget[su.Name] = su.Cases
	}
	for _, c := range s.Cases {
		got := byTarget[c.Target]
		if len(got) == 0 || got[0].Name != c.Name {
			t.Fatalf("case %q is not next in testsuite %s", c.Name, c.Target)
		}
		g := got[0]
		byTarget[c.Target] = got[1:]
		if g.Classname != "splitbrain.catalogue."+c.Target {
			t.Errorf("%s: classname %q", c.Name, g.Classname)
		}
		if !strings.Contains(g.SystemOut, "reproduce: "+c.Command) {
			t.Errorf("%s: system-out lacks the command that reproduces it:\n%s", c.Name, g.SystemOut)
		}
		if report := c.Report(root); report != "" && !strings.Contains(g.SystemOut, "report: "+report) {
			t.Errorf("%s: system-out lacks its report %s:\n%s", c.Name, report, g.SystemOut)
		}
		if c.Run == "" && strings.Contains(g.SystemOut, "report: ") {
			t.Errorf("%s: system-out names a report the case does not have:\n%s", c.Name, g.SystemOut)
		}
		checkJUnitOutcome(t, c, g)
	}
}

func checkJUnitOutcome(t *testing.T, c Case, g parsedCase) {
	t.Helper()
	message := strings.ReplaceAll(c.Message, "\x01", "") // XML cannot hold it
	switch {
	case c.Outcome == Pass && (g.Failure != nil || g.Error != nil):
		t.Errorf("%s passed, but the report has a failure or an error", c.Name)
	case c.Outcome == Failure && (g.Failure == nil || g.Error != nil):
		t.Errorf("%s failed, but the report has no failure, or an error", c.Name)
	case c.Outcome == Failure && (g.Failure.Message != message || g.Failure.Type != c.Verdict):
		t.Errorf("%s: failure %q of type %q, want %q of type %q", c.Name, g.Failure.Message, g.Failure.Type, message, c.Verdict)
	case c.Outcome == Error && (g.Error == nil || g.Failure != nil):
		t.Errorf("%s is an error, but the report has no error, or a failure", c.Name)
	case c.Outcome == Error && g.Error.Message != message:
		t.Errorf("%s: error %q, want %q", c.Name, g.Error.Message, message)
	case c.Outcome == Error && c.Verdict == "" && g.Error.Type != "harness-failure":
		t.Errorf("%s: the harness failed, but the error's type is %q", c.Name, g.Error.Type)
	case c.Outcome == Error && c.Verdict != "" && g.Error.Type != c.Verdict:
		t.Errorf("%s: error of type %q, want %q", c.Name, g.Error.Type, c.Verdict)
	}
	for _, p := range []*parsedProblem{g.Failure, g.Error} {
		if p != nil && !strings.HasPrefix(p.Text, "expected: "+c.Expect+"\n") {
			t.Errorf("%s: the details do not start with what the case expected:\n%s", c.Name, p.Text)
		}
	}
}

// TestJUnitRejectsBadDocumentsAgainstSchema proves the schema test can
// fail: a valid document passes, and each break of it does not.
func TestJUnitRejectsBadDocumentsAgainstSchema(t *testing.T) {
	lint := xmllint(t)
	const good = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="s" tests="1" failures="1" errors="0" time="1.000">
  <testsuite name="raft" tests="1" failures="1" errors="0" time="1.000">
    <testcase name="raft; seed 1" classname="splitbrain.s.raft" time="1.000">
      <failure message="m" type="invalid">details</failure>
      <system-out>reproduce: splitbrain run</system-out>
    </testcase>
  </testsuite>
</testsuites>
`
	dir := t.TempDir()
	write := func(name, doc string) string {
		path := filepath.Join(dir, name+".xml")
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	if code, complaint := validate(t, lint, write("good", good)); code != 0 {
		t.Fatalf("the document the bad ones break is itself rejected:\n%s", complaint)
	}
	for _, b := range []struct{ name, old, new string }{
		{"testcase without name", `<testcase name="raft; seed 1" `, `<testcase `},
		{"failure outside testcase", `    </testcase>`, `    </testcase>
    <failure message="m" type="invalid"/>`},
		{"testsuite missing tests", `<testsuite name="raft" tests="1" `, `<testsuite name="raft" `},
		{"system-out before failure", `      <failure message="m" type="invalid">details</failure>
      <system-out>reproduce: splitbrain run</system-out>`, `      <system-out>reproduce: splitbrain run</system-out>
      <failure message="m" type="invalid">details</failure>`},
		{"time not a number", `classname="splitbrain.s.raft" time="1.000"`, `classname="splitbrain.s.raft" time="1s"`},
	} {
		bad := strings.Replace(good, b.old, b.new, 1)
		if bad == good {
			t.Fatalf("%s: the replacement did not apply", b.name)
		}
		// Well-formed, so that only the schema can reject it.
		if code, complaint := validate(t, lint, write(strings.ReplaceAll(b.name, " ", "-"), bad)); code != notAllowed {
			t.Errorf("%s: xmllint exits %d, want %d (rejected by the schema)\n%s", b.name, code, notAllowed, complaint)
		}
	}
}

// A case not judged is skipped, with why, and counted so; the report
// still matches the schema.
func TestJUnitSkippedCase(t *testing.T) {
	lint := xmllint(t)
	s := Suite{Name: "conform", Total: 2, Started: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), Cases: []Case{
		{Index: 0, Name: "one-leader", Target: "t", Expect: "the rule holds", Outcome: Failure, Verdict: "FAIL", Message: "no leader"},
		{Index: 1, Name: "leader-write", Target: "t", Expect: "the rule holds", Outcome: Skipped, Verdict: "skip", Message: "no leader to write through"},
	}}
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, s, ""); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, complaint := validate(t, lint, path); code != 0 {
		t.Fatalf("the report does not match the schema:\n%s\n%s", complaint, buf.Bytes())
	}
	for _, want := range []string{`failures="1" errors="0" skipped="1"`, `<skipped message="no leader to write through"></skipped>`} {
		if !bytes.Contains(buf.Bytes(), []byte(want)) {
			t.Errorf("the report lacks %s:\n%s", want, buf.Bytes())
		}
	}
}
