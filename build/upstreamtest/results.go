// Package upstreamtest runs upstream Kubernetes' own integration tests (test/integration/...) from
// a variant's tree, records each top-level test's result, and judges a patched run against the
// stock baseline: every test that passes on stock passes on patched.
package upstreamtest

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
)

// Result is what became of one top-level test (its subtests fold into it).
type Result string

const (
	Pass Result = "pass"
	Fail Result = "fail"
	Skip Result = "skip"
	// Flaky: failed, then passed when run once more.
	Flaky Result = "flaky"
)

// TestResult is one top-level test of a package.
type TestResult struct {
	Name    string  `json:"name"`
	Result  Result  `json:"result"`
	Seconds float64 `json:"seconds"`
	// Why holds a skip's message, or the last lines a failed test printed.
	Why string `json:"why,omitempty"`
}

// PackageResult is one package's run: its tests, or why none ran.
type PackageResult struct {
	Package string `json:"package"`
	// Run is the -test.run expression ("." for every test).
	Run     string  `json:"run"`
	Seconds float64 `json:"seconds"`
	// Error says why the package failed outside any test (it did not build, it panicked or timed
	// out before or between tests); empty when it did not.
	Error string       `json:"error,omitempty"`
	Tests []TestResult `json:"tests"`
	// Log is the go test -json stream of the package's last run.
	Log string `json:"log"`
}

// Results is a whole run of one variant.
type Results struct {
	Variant  string          `json:"variant"`
	Packages []PackageResult `json:"packages"`
}

// Test returns the named test's result in the package, or nil.
func (p *PackageResult) Test(name string) *TestResult {
	for i := range p.Tests {
		if p.Tests[i].Name == name {
			return &p.Tests[i]
		}
	}
	return nil
}

// Has says whether the run holds the spec's package run with the spec's expression.
func (r *Results) Has(s Spec) bool {
	for _, p := range r.Packages {
		if p.Package == s.Package && p.Run == s.Run {
			return true
		}
	}
	return false
}

// Counts tallies the results of every test in the run.
func (r *Results) Counts() map[Result]int {
	counts := map[Result]int{}
	for _, p := range r.Packages {
		for _, t := range p.Tests {
			counts[t.Result]++
		}
	}
	return counts
}

// Write stores the results as JSON, packages and tests sorted by name.
func (r *Results) Write(path string) error {
	sort.Slice(r.Packages, func(i, j int) bool { return r.Packages[i].Package < r.Packages[j].Package })
	for _, p := range r.Packages {
		sort.Slice(p.Tests, func(i, j int) bool { return p.Tests[i].Name < p.Tests[j].Name })
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// ReadResults reads what Write stored.
func ReadResults(path string) (*Results, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}
