package conformance

import (
	"errors"
	"strings"
	"testing"

	"github.com/idc-lts/kube-1.17/test/conformance/report"
)

// TestPhaseFailure: a phase counts only when ginkgo finished it. Its exit status alone does not
// say so (1 for failed tests too), nor do its JUnit files (a timed-out parallel node writes none).
func TestPhaseFailure(t *testing.T) {
	exit1 := errors.New("exit status 1")
	passedOnly := map[string]report.Case{"a [Conformance]": {Result: report.Passed}}
	oneFailed := map[string]report.Case{"a [Conformance]": {Result: report.Passed}, "b [Conformance]": {Result: report.Failed}}
	for _, tc := range []struct {
		name    string
		exitErr error
		log     string
		results map[string]report.Case
		want    string // "" for a phase that counts
	}{
		{"all passed", nil, "Ran 3 of 4 Specs\nSUCCESS!\n", passedOnly, ""},
		{"a test failed", exit1, "Ran 3 of 4 Specs\nFAIL! -- 2 Passed | 1 Failed\n", oneFailed, ""},
		{"ginkgo's timeout", exit1, "Ran 3 of 4 Specs\nGinkgo timed out waiting for all parallel nodes to report back!\n", oneFailed, "ginkgo did not finish"},
		{"the test binary's timeout", errors.New("exit status 2"), "panic: test timed out after 25m0s\n\ngoroutine 1 [running]:\n", passedOnly, "ginkgo did not finish"},
		{"a crash", errors.New("exit status 2"), "•\npanic: runtime error: invalid memory address\n\ngoroutine 1 [running]:\n", passedOnly, "ginkgo did not finish"},
		{"non-zero, nothing failed", exit1, "Ran 3 of 4 Specs\n", passedOnly, "no test of the phase failed"},
		{"a test's own panic, recovered by ginkgo", exit1, "  Test Panicked\n  panic: boom\n", oneFailed, ""},
		{"a pod's log with a panic, printed by a failing test", exit1, "panic: from the pod\nexit status 2\n", oneFailed, ""},
		{"AfterSuite failed", exit1, "Ran 3 of 4 Specs\n", map[string]report.Case{"a [Conformance]": {Result: report.Passed}, "[AfterSuite] AfterSuite": {Result: report.Failed}}, "which is not a conformance test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PhaseFailure(tc.exitErr, tc.log, tc.results)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("PhaseFailure = %q, want %q", got, tc.want)
			}
		})
	}
}
