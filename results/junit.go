package results

import (
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// junitHost is every testsuite's hostname. Not the writer's: merged
// shards ran on other machines, and a fixed name keeps the file the same
// for the same suite.
const junitHost = "splitbrain"

// noVerdict stands for the verdict of a case whose harness failed before
// judging.
const noVerdict = "none: the harness failed"

// junitTimestamp is the Ant schema's timestamp: no zone, so it is UTC.
const junitTimestamp = "2006-01-02T15:04:05"

// junitSuites and the types below it are the report's XML.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Time      string      `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr"`
	Hostname  string      `xml:"hostname,attr"`
	ID        int         `xml:"id,attr"`
	Package   string      `xml:"package,attr"`
	Cases     []junitCase `xml:"testcase"`
	seconds   float64
}

// junitCase's fields are in the order Ant writes the elements, which
// strict readers and the schema hold to.
type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Skipped   *junitSkip    `xml:"skipped"`
	Failure   *junitProblem `xml:"failure"`
	Error     *junitProblem `xml:"error"`
	SystemOut junitText     `xml:"system-out"`
}

// junitProblem is a failure or an error.
type junitProblem struct {
	Message string `xml:"message,attr,omitempty"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",cdata"`
}

// junitSkip says why a case was not judged.
type junitSkip struct {
	Message string `xml:"message,attr,omitempty"`
}

// junitText is an element's text as CDATA, where encoding/xml keeps line
// breaks as they are: as character data it writes each as &#xA;, which
// some readers show as it stands.
type junitText struct {
	Text string `xml:",cdata"`
}

// WriteJUnit writes suite s as a JUnit XML report, one testsuite per
// target in the order the targets first appear; report paths are under
// results folder root.
func WriteJUnit(w io.Writer, s Suite, root string) error {
	b, err := xml.MarshalIndent(junitDoc(s, root), "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(append([]byte(xml.Header), b...), '\n'))
	return err
}

func junitDoc(s Suite, root string) junitSuites {
	doc := junitSuites{Name: xmlText(s.Name)}
	at := map[string]int{} // target -> its testsuite
	var seconds float64
	for _, c := range s.Cases {
		i, ok := at[c.Target]
		if !ok {
			i = len(doc.Suites)
			at[c.Target] = i
			doc.Suites = append(doc.Suites, junitSuite{
				Name: xmlText(c.Target), ID: i, Hostname: junitHost,
				Timestamp: s.Started.UTC().Format(junitTimestamp),
				Package:   xmlText("splitbrain." + s.Name),
			})
		}
		tc := junitTestCase(s.Name, c, root)
		doc.Suites[i].add(tc, c.Seconds)
		seconds += c.Seconds
	}
	for i := range doc.Suites {
		su := &doc.Suites[i]
		su.Time = junitSeconds(su.seconds)
		doc.Tests += su.Tests
		doc.Failures += su.Failures
		doc.Errors += su.Errors
	}
	doc.Time = junitSeconds(seconds)
	return doc
}

func (su *junitSuite) add(tc junitCase, seconds float64) {
	su.Cases = append(su.Cases, tc)
	su.Tests++
	su.seconds += seconds
	if tc.Failure != nil {
		su.Failures++
	}
	if tc.Error != nil {
		su.Errors++
	}
	if tc.Skipped != nil {
		su.Skipped++
	}
}

func junitTestCase(suite string, c Case, root string) junitCase {
	tc := junitCase{
		Name:      xmlText(c.Name),
		Classname: xmlText("splitbrain." + suite + "." + c.Target),
		Time:      junitSeconds(c.Seconds),
		SystemOut: junitText{xmlText(junitOut(c, root))},
	}
	switch c.Outcome {
	case Pass: // nothing to report
	case Failure:
		tc.Failure = junitProblemOf(c, c.Verdict)
	case Skipped:
		tc.Skipped = &junitSkip{Message: xmlText(c.Message)}
	default:
		// An outcome that is neither is no pass either: counting it as an
		// error keeps a broken record from turning a report green.
		tc.Error = junitProblemOf(c, cmp.Or(c.Verdict, "harness-failure"))
	}
	return tc
}

func junitProblemOf(c Case, kind string) *junitProblem {
	text := strings.Join([]string{
		"expected: " + c.Expect,
		"got: " + cmp.Or(c.Verdict, noVerdict),
		c.Message,
	}, "\n")
	return &junitProblem{Message: xmlText(c.Message), Type: xmlText(kind), Text: xmlText(text)}
}

// junitOut is a case's system-out: what a reader of the CI page needs to
// judge the case and run it again.
func junitOut(c Case, root string) string {
	lines := []string{
		"expected: " + c.Expect,
		"verdict: " + cmp.Or(c.Verdict, noVerdict),
	}
	if c.FirstViolation != nil {
		lines = append(lines, fmt.Sprintf("first violation: %.2f s", *c.FirstViolation))
	}
	if c.StoppedEarly {
		lines = append(lines, "stopped early at the violation")
	}
	lines = append(lines, "reproduce: "+c.Command)
	if r := c.Report(root); r != "" {
		lines = append(lines, "report: "+r)
	}
	return strings.Join(lines, "\n")
}

func junitSeconds(s float64) string {
	return strconv.FormatFloat(s, 'f', 3, 64)
}

// xmlText drops the characters XML 1.0 cannot hold even escaped (control
// characters, U+FFFE, U+FFFF): messages quote what targets and checkers
// said, and one such character would make a CI's reader reject the file.
// encoding/xml does not drop them from CDATA.
func xmlText(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' ||
			(r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || r >= 0x10000 {
			return r
		}
		return -1
	}, s)
}
