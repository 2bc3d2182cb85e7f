package upstreamtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// event is one line of go test -json (cmd/test2json's TestEvent).
type event struct {
	Action  string
	Test    string
	Elapsed float64
	Output  string
}

// whyLines is how many of its last output lines a failed test keeps in its result.
const whyLines = 20

// testOutput gathers one top-level test's output, its subtests' included.
type testOutput struct {
	result  Result
	seconds float64
	lines   []string
}

// ParseEvents reads a package's go test -json stream into its top-level tests' results. A test
// that started but never ended (the binary timed out or panicked) fails; packageFailed says the
// package itself reported failure, and packageOutput is what it printed outside any test.
func ParseEvents(r io.Reader) (tests []TestResult, packageFailed bool, packageOutput []string, err error) {
	byName := map[string]*testOutput{}
	var order []string
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 1<<20), 16<<20)
	for scanner.Scan() {
		line := scanner.Bytes()
		if len(line) == 0 || line[0] != '{' {
			// go test writes build errors as plain text before any event.
			packageOutput = append(packageOutput, string(line))
			continue
		}
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, false, nil, fmt.Errorf("not a go test -json line: %q: %w", line, err)
		}
		if e.Test == "" {
			switch e.Action {
			case "output":
				packageOutput = append(packageOutput, strings.TrimRight(e.Output, "\n"))
			case "fail":
				packageFailed = true
			}
			continue
		}
		top, sub := e.Test, false
		if i := strings.IndexByte(e.Test, '/'); i >= 0 {
			top, sub = e.Test[:i], true
		}
		t := byName[top]
		if t == nil {
			t = &testOutput{}
			byName[top] = t
			order = append(order, top)
		}
		switch e.Action {
		case "output":
			t.lines = append(t.lines, strings.TrimRight(e.Output, "\n"))
		case "pass", "fail", "skip":
			if !sub {
				t.result, t.seconds = Result(e.Action), e.Elapsed
			}
		}
	}
	if err := scanner.Err(); err != nil {
		return nil, false, nil, err
	}
	for _, name := range order {
		t := byName[name]
		result := TestResult{Name: name, Result: t.result, Seconds: t.seconds}
		switch t.result {
		case Skip:
			result.Why = skipMessage(t.lines)
		case Fail:
			result.Why = failureMessage(t.lines)
		case "":
			result.Result = Fail
			result.Why = "never ended: the test binary stopped while it ran (timed out or crashed)\n" +
				lastLines(append(t.lines, packageOutput...), whyLines)
		}
		tests = append(tests, result)
	}
	return tests, packageFailed, packageOutput, nil
}

// testSaid matches what a test itself reported (t.Error, t.Fatal, t.Log: "    file_test.go:12: ..."),
// as opposed to the logs of the apiserver and controllers it runs in-process.
var testSaid = regexp.MustCompile(`^\s+\S+_test\.go:\d+: `)

// failureMessage is what a failed test reported, or its last lines when it reported nothing.
func failureMessage(lines []string) string {
	var said []string
	for _, l := range lines {
		if testSaid.MatchString(l) {
			said = append(said, strings.TrimSpace(l))
		}
	}
	if len(said) == 0 {
		return lastLines(lines, whyLines)
	}
	return lastLines(said, whyLines)
}

// skipMessage is what a skipped test said, without the === RUN and --- SKIP lines.
func skipMessage(lines []string) string {
	var said []string
	for _, l := range lines {
		trimmed := strings.TrimSpace(l)
		if trimmed == "" || strings.HasPrefix(trimmed, "=== ") || strings.HasPrefix(trimmed, "--- ") {
			continue
		}
		said = append(said, trimmed)
	}
	return lastLines(said, 3)
}

func lastLines(lines []string, n int) string {
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
