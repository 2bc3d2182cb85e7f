package report

import (
	"sort"
	"strings"
)

// ConformanceTag marks the tests of the conformance suite in their names.
const ConformanceTag = "[Conformance]"

// Exclusion is a conformance test that the run leaves out, and why.
type Exclusion struct{ Test, Reason string }

// Exclusions are the conformance tests a one-node cluster with no route out cannot pass; the run
// skips them (SkipPattern) and the page lists them. Each test, whole, as e2e.test names it.
var Exclusions = []Exclusion{{
	Test:   "[sig-apps] Daemon set [Serial] should rollback without unnecessary restarts [Conformance]",
	Reason: "needs two schedulable nodes (test/e2e/apps/daemon_set.go: it fails when there are fewer than two)",
}}

// Row is one conformance test in both runs.
type Row struct {
	Name        string
	Stock, Ours Case
	Excluded    string // the reason, when the run leaves it out
}

// Totals count one run's conformance tests by result.
type Totals struct {
	Passed, Failed, Skipped, NotRun int
	Seconds                         float64
}

// Comparison is the conformance tests of both runs.
type Comparison struct {
	Rows        []Row
	Stock, Ours Totals
	// Violations are the tests that passed with stock and did not pass with ours: each is a bug
	// of ours until shown otherwise.
	Violations []Row
	// NotPassedWithStock are the tests, not excluded, that did not pass with stock, whatever ours
	// did: what this cluster cannot show either way.
	NotPassedWithStock []Row
}

// Compare lines up the conformance tests of the two runs.
func Compare(stock, ours map[string]Case) Comparison {
	excluded := map[string]string{}
	for _, e := range Exclusions {
		excluded[e.Test] = e.Reason
	}
	names := map[string]bool{}
	for _, run := range []map[string]Case{stock, ours} {
		for name := range run {
			if strings.Contains(name, ConformanceTag) {
				names[name] = true
			}
		}
	}
	var c Comparison
	for name := range names {
		row := Row{Name: name, Stock: caseOf(stock, name), Ours: caseOf(ours, name), Excluded: excluded[name]}
		c.Rows = append(c.Rows, row)
		count(&c.Stock, row.Stock)
		count(&c.Ours, row.Ours)
		if row.Excluded != "" {
			continue
		}
		if row.Stock.Result == Passed && row.Ours.Result != Passed {
			c.Violations = append(c.Violations, row)
		}
		if row.Stock.Result != Passed {
			c.NotPassedWithStock = append(c.NotPassedWithStock, row)
		}
	}
	for _, rows := range [][]Row{c.Rows, c.Violations, c.NotPassedWithStock} {
		sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	}
	return c
}

func caseOf(run map[string]Case, name string) Case {
	if c, ok := run[name]; ok {
		return c
	}
	return Case{Name: name, Result: NotRun}
}

func count(t *Totals, c Case) {
	switch c.Result {
	case Passed:
		t.Passed++
	case Failed:
		t.Failed++
	case Skipped:
		t.Skipped++
	default:
		t.NotRun++
	}
	t.Seconds += c.Seconds
}
