// Package conformance runs upstream's conformance tests of v1.17.3 on a two-node cluster
// (docs/conformance-plan.md). So far: how a run splits into ginkgo invocations.
package conformance

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/idc-lts/kube-1.17/test/conformance/report"
)

// Phase is one ginkgo invocation of e2e.test within a run.
type Phase struct {
	Name string
	// Nodes is ginkgo's parallel nodes: 1 for tests that must run alone.
	Nodes       int
	Focus, Skip string
	Timeout     time.Duration
}

// taintTests evict every pod without a toleration from the node, CoreDNS among them: they run last.
const taintTests = `NoExecuteTaintManager`

// Phases splits the conformance tests into what may run beside each other (on parallelNodes
// ginkgo nodes), the [Serial] tests one at a time, and last the taint tests, which disrupt the
// node for whatever runs after them. ginkgo v1 knows nothing of [Serial]: the split is by name, as
// upstream's hack/ginkgo-e2e.sh users split it. Excluded tests are skipped in every phase.
func Phases(parallelNodes int) []Phase {
	excluded := exclusionPattern()
	return []Phase{
		{Name: "parallel", Nodes: parallelNodes, Focus: `\[Conformance\]`, Skip: anyOf(`\[Serial\]`, excluded), Timeout: 45 * time.Minute},
		{Name: "serial", Nodes: 1, Focus: `\[Serial\].*\[Conformance\]`, Skip: anyOf(taintTests, excluded), Timeout: 25 * time.Minute},
		{Name: "disruptive", Nodes: 1, Focus: taintTests + `.*\[Conformance\]`, Skip: excluded, Timeout: 10 * time.Minute},
	}
}

// anyOf joins the non-empty patterns: an empty alternative would match every test.
func anyOf(patterns ...string) string {
	var set []string
	for _, p := range patterns {
		if p != "" {
			set = append(set, p)
		}
	}
	return strings.Join(set, "|")
}

// exclusionPattern matches the excluded tests' names. Not anchored: ginkgo matches against the
// spec's text after its top-level container's.
func exclusionPattern() string {
	var quoted []string
	for _, e := range report.Exclusions {
		quoted = append(quoted, regexp.QuoteMeta(e.Test))
	}
	return strings.Join(quoted, "|")
}

// ginkgoGaveUp matches what ginkgo v1 and the Go test binary print when an invocation ends
// without reporting every test: ginkgo's own timeout (-timeout; a parallel node still running
// writes no JUnit file), the test binary's timeout, and a crash.
var ginkgoGaveUp = regexp.MustCompile(`(?m)^(Ginkgo timed out.*|Ginkgo ran out of time.*|panic: .*\n+goroutine \d+ \[running\]:)`)

// PhaseFailure says why a finished ginkgo invocation cannot be counted, or "" if it can: its log
// shows a timeout or a crash, or ginkgo exited non-zero while the phase's JUnit files record no
// failed test (ginkgo's exit status is the tests' verdict only when they say so).
func PhaseFailure(exitErr error, log string, results map[string]report.Case) string {
	if m := ginkgoGaveUp.FindString(log); m != "" {
		return fmt.Sprintf("ginkgo did not finish: %q", m)
	}
	if exitErr == nil {
		return ""
	}
	// Only a conformance test's failure explains the exit: ginkgo's BeforeSuite and AfterSuite
	// have JUnit cases of their own, and their failure is the phase's.
	explained := false
	for name, c := range results {
		if c.Result != report.Failed {
			continue
		}
		if !strings.Contains(name, report.ConformanceTag) {
			return fmt.Sprintf("ginkgo exited with %v: %q failed, which is not a conformance test", exitErr, name)
		}
		explained = true
	}
	if explained {
		return ""
	}
	return fmt.Sprintf("ginkgo exited with %v, and no test of the phase failed", exitErr)
}
