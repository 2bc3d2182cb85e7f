package report

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// ConformanceTag marks the tests of the conformance suite in their names.
const ConformanceTag = "[Conformance]"

// Exclusion is a conformance test that the run leaves out, and why.
type Exclusion struct{ Test, Reason string }

// Exclusions are the conformance tests the cluster (two nodes, no route out) cannot pass; the run
// skips them (exclusionPattern) and the page lists them. Each test, whole, as e2e.test names it.
// None since the second node (issue #47): the one a single node could not pass, "[sig-apps]
// Daemon set [Serial] should rollback without unnecessary restarts", asks for two schedulable
// nodes.
var Exclusions []Exclusion

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

// Compare lines up the conformance tests of the two runs against tests, the conformance tests the
// runs were to run (e2e.test's, which make conformance-build holds to v1.17.3's conformance.txt,
// or the subset a focus chose). It fails, naming each, on what would make the comparison
// miscount: a test of tests without a result (passed or failed) in a run, unless excluded; an
// excluded test that ran; a conformance test a run reports that is not one of tests. (That each
// exclusion names a conformance test of e2e.test is TestPhasesCoverEveryConformanceTestOnce's
// check: a subset's tests rightly leave exclusions out.)
func Compare(stock, ours map[string]Case, tests []string) (Comparison, error) {
	if len(tests) == 0 {
		return Comparison{}, fmt.Errorf("no conformance tests to compare the runs against")
	}
	expected := map[string]bool{}
	for _, name := range tests {
		expected[name] = true
	}
	excluded := map[string]string{}
	var problems []string
	for _, e := range Exclusions {
		excluded[e.Test] = e.Reason
	}
	for _, run := range []struct {
		name  string
		cases map[string]Case
	}{{"stock", stock}, {"ours", ours}} {
		for name, c := range run.cases {
			// ginkgo's JUnit lists the specs a focus left out as skipped: only one that ran counts.
			if strings.Contains(name, ConformanceTag) && !expected[name] && c.Result != Skipped {
				problems = append(problems, fmt.Sprintf("%s ran %q, which is not one of the %d tests", run.name, name, len(tests)))
			}
		}
		for _, name := range tests {
			result := caseOf(run.cases, name).Result
			switch {
			case excluded[name] != "" && (result == Passed || result == Failed):
				problems = append(problems, fmt.Sprintf("%s ran the excluded %q", run.name, name))
			case excluded[name] == "" && result != Passed && result != Failed:
				problems = append(problems, fmt.Sprintf("%s has no result for %q (%s)", run.name, name, result))
			}
		}
	}
	var c Comparison
	for _, name := range tests {
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
	if len(problems) > 0 {
		sort.Strings(problems)
		return c, fmt.Errorf("the runs do not account for the %d tests (%d problem(s)):\n  %s", len(tests), len(problems), strings.Join(problems, "\n  "))
	}
	return c, nil
}

// ReadTests reads a list of test names, one per line (make conformance-build's
// conformance-tests.txt, or a subset's).
func ReadTests(path string) ([]string, error) { return readNames(path, "test") }

// ReadNodes reads a cluster's node names, one per line, the control plane's first (the nodes.txt
// that TestConformance writes).
func ReadNodes(path string) ([]string, error) { return readNames(path, "node") }

// readNames reads names, one per line, and fails on none or on one listed twice.
func readNames(path, what string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var names []string
	seen := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		if seen[line] {
			return nil, fmt.Errorf("%s lists %q twice", path, line)
		}
		seen[line] = true
		names = append(names, line)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s lists no %s", path, what)
	}
	return names, nil
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
