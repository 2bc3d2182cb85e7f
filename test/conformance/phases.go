// Package conformance runs upstream's conformance tests of v1.17.3 on a one-node cluster
// (docs/conformance-plan.md). So far: how a run splits into ginkgo invocations.
package conformance

import (
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
