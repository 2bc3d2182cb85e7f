// Package report compares two runs of the conformance tests, stock's and ours, from the JUnit
// files upstream's e2e.test writes, and renders the comparison: a page for docs/conformance.md and
// a summary for the release (conformance.txt).
package report

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Result is what one run made of one test.
type Result string

const (
	Passed  Result = "passed"
	Failed  Result = "failed"
	Skipped Result = "skipped"
	// NotRun is a test the other run has and this one does not.
	NotRun Result = "not run"
)

// Case is one test of one run.
type Case struct {
	Name    string
	Result  Result
	Seconds float64
	// Message is what a failure says, on one line.
	Message string
}

type junitSuite struct {
	Cases []struct {
		Name    string        `xml:"name,attr"`
		Time    float64       `xml:"time,attr"`
		Skipped *struct{}     `xml:"skipped"`
		Failure *junitProblem `xml:"failure"`
		// Error is JUnit's other way to fail a test (a test that could not run to its
		// assertions); it fails the test as a failure does.
		Error *junitProblem `xml:"error"`
	} `xml:"testcase"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// ReadRun reads every junit_*.xml under dir (one per ginkgo node, and per invocation: a run
// splits into parallel, serial and disruptive phases) into one case per test. A parallel node
// lists the tests the other nodes ran as skipped: a test counts as run when any file ran it. A
// test with a result (passed or failed) in two files is an error: each test runs once per run,
// and which of two results counts is not the report's to choose.
func ReadRun(dir string) (map[string]Case, error) {
	var paths []string
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && filepath.Ext(path) == ".xml" {
			paths = append(paths, path)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no JUnit files (*.xml) under %s", dir)
	}
	return ReadFiles(dir, paths)
}

// ReadFiles is ReadRun for the given JUnit files (one phase's); dir names them in errors.
func ReadFiles(dir string, paths []string) (map[string]Case, error) {
	sort.Strings(paths)
	cases := map[string]Case{}
	ranIn := map[string]string{}
	var twice []string
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var suite junitSuite
		if err := xml.Unmarshal(data, &suite); err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		for _, tc := range suite.Cases {
			c := Case{Name: tc.Name, Result: Passed, Seconds: tc.Time}
			switch {
			case tc.Failure != nil:
				c.Result, c.Message = Failed, failureMessage(tc.Failure.Message, tc.Failure.Text)
			case tc.Error != nil:
				c.Result, c.Message = Failed, failureMessage(tc.Error.Message, tc.Error.Text)
			case tc.Skipped != nil:
				c.Result = Skipped
			}
			if old, seen := cases[c.Name]; seen && c.Result == Skipped && old.Result != Skipped {
				continue
			}
			if c.Result != Skipped {
				if first, ran := ranIn[c.Name]; ran {
					twice = append(twice, fmt.Sprintf("%q in %s and in %s", c.Name, filepath.Base(first), filepath.Base(path)))
				}
				ranIn[c.Name] = path
			}
			cases[c.Name] = c
		}
	}
	if len(twice) > 0 {
		return nil, fmt.Errorf("%s: %d test(s) have two results, each test runs once: %s", dir, len(twice), strings.Join(twice, "; "))
	}
	return cases, nil
}

// codeLocation is a line of ginkgo's failure text that only says where: file.go:N.
var codeLocation = regexp.MustCompile(`^\S+\.go:\d+$`)

// failureMessage is what a failure says, without the code locations ginkgo v1 puts around it
// (location, message, location), on one line, at most 300 characters.
func failureMessage(texts ...string) string {
	var words []string
	for _, text := range texts {
		for _, line := range strings.Split(text, "\n") {
			if line = strings.TrimSpace(line); line != "" && !codeLocation.MatchString(line) {
				words = append(words, line)
			}
		}
	}
	message := strings.Join(words, " ")
	if len(message) > 300 {
		message = message[:300] + "..."
	}
	return message
}
