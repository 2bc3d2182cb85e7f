package report

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The evidence a cncf/k8s-conformance submission carries for a run: its e2e.log, ending in
// ginkgo's verdict line, and its junit_01.xml. A run here is three ginkgo invocations (Phases),
// so both are merged: the log is the invocations' logs in order, then the verdict over the whole
// run, counted from its JUnit results; the JUnit file has one testcase per conformance test.
const (
	E2ELog   = "e2e.log"
	JUnitXML = "junit_01.xml"
)

// WriteEvidence writes E2ELog and JUnitXML for one run into dir: phaseLogs are the run's ginkgo
// logs in the order they ran, tests the conformance tests it was to run, run its results (ReadRun).
// Excluded tests are written as skipped. A test of tests without a result is an error, as in
// Compare.
func WriteEvidence(dir string, phaseLogs, tests []string, run map[string]Case) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	excluded := map[string]bool{}
	for _, e := range Exclusions {
		excluded[e.Test] = true
	}
	suite := junitOut{Name: "Kubernetes e2e suite"}
	var passed, failed, skipped int
	for _, name := range tests {
		c, ok := run[name]
		tc := junitCaseOut{Name: name, ClassName: "Kubernetes e2e suite", Time: c.Seconds}
		switch {
		case excluded[name]:
			tc.Skipped, tc.Time = &struct{}{}, 0
			skipped++
		case !ok || (c.Result != Passed && c.Result != Failed):
			return fmt.Errorf("%q has no result in the run: no evidence can be written", name)
		case c.Result == Failed:
			tc.Failure = &junitFailureOut{Type: "Failure", Text: c.Message}
			failed++
		default:
			passed++
		}
		suite.Time += tc.Time
		suite.Cases = append(suite.Cases, tc)
	}
	suite.Tests, suite.Failures = len(tests), failed
	data, err := xml.MarshalIndent(suite, "  ", "    ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, JUnitXML), append([]byte(xml.Header), append(data, '\n')...), 0o644); err != nil {
		return err
	}

	var log strings.Builder
	fmt.Fprintf(&log, "Conformance run in %d ginkgo invocations of e2e.test, their logs in the order they ran; the last lines count the whole run from its JUnit results (%s).\n", len(phaseLogs), JUnitXML)
	for _, path := range phaseLogs {
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(&log, "\n===== %s =====\n%s", filepath.Base(path), text)
		if len(text) > 0 && text[len(text)-1] != '\n' {
			log.WriteByte('\n')
		}
	}
	verdict := "SUCCESS!"
	if failed > 0 {
		verdict = "FAIL!"
	}
	fmt.Fprintf(&log, "\nRan %d of %d Specs in %.3f seconds\n%s -- %d Passed | %d Failed | 0 Pending | %d Skipped\n",
		passed+failed, len(tests), suite.Time, verdict, passed, failed, skipped)
	return os.WriteFile(filepath.Join(dir, E2ELog), []byte(log.String()), 0o644)
}

type junitOut struct {
	XMLName  xml.Name       `xml:"testsuite"`
	Name     string         `xml:"name,attr"`
	Tests    int            `xml:"tests,attr"`
	Failures int            `xml:"failures,attr"`
	Errors   int            `xml:"errors,attr"`
	Time     float64        `xml:"time,attr"`
	Cases    []junitCaseOut `xml:"testcase"`
}

type junitCaseOut struct {
	Name      string           `xml:"name,attr"`
	ClassName string           `xml:"classname,attr"`
	Time      float64          `xml:"time,attr"`
	Skipped   *struct{}        `xml:"skipped"`
	Failure   *junitFailureOut `xml:"failure"`
}

type junitFailureOut struct {
	Type string `xml:"type,attr"`
	Text string `xml:",chardata"`
}
