package upstreamtest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Baseline is the committed record of upstream's integration tests on the stock tree here: for
// each package, the top-level tests that passed, and every test that did not, with why.
type Baseline struct {
	Packages []BaselinePackage `yaml:"packages"`
}

// BaselinePackage is one package's tests on stock.
type BaselinePackage struct {
	Package string `yaml:"package"`
	// Passed lists the tests that passed on stock: each must pass on patched.
	Passed []string `yaml:"passed"`
	// NotPassed lists the tests that failed, flaked or skipped on stock, each with a reason.
	NotPassed []KnownResult `yaml:"notPassed,omitempty"`
}

// KnownResult is a test that did not pass on stock, and why.
type KnownResult struct {
	Test   string `yaml:"test"`
	Result Result `yaml:"result"`
	// Reason is written by hand (a skip's is upstream's message); a failure or flake without one
	// fails the comparison.
	Reason string `yaml:"reason"`
}

const baselineHeader = `# Upstream v1.17.3's integration tests (test/integration/...) on the stock tree, on CI's machine
# class (2 cores). Written by 'make test-upstream-baseline'; the reasons are written by hand, and
# a new run keeps each one while its test keeps its result. 'make test-upstream-integration' and
# 'make test' hold patched to it: every test listed as passed must pass on patched.
`

// ReadBaseline reads the baseline file.
func ReadBaseline(path string) (*Baseline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var b Baseline
	decoder := yaml.NewDecoder(bytes.NewReader(data))
	decoder.KnownFields(true)
	if err := decoder.Decode(&b); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &b, nil
}

// Write stores the baseline, packages and tests sorted, under its header.
func (b *Baseline) Write(path string) error {
	sort.Slice(b.Packages, func(i, j int) bool { return b.Packages[i].Package < b.Packages[j].Package })
	for i := range b.Packages {
		p := &b.Packages[i]
		sort.Strings(p.Passed)
		sort.Slice(p.NotPassed, func(i, j int) bool { return p.NotPassed[i].Test < p.NotPassed[j].Test })
	}
	var data bytes.Buffer
	encoder := yaml.NewEncoder(&data)
	encoder.SetIndent(2)
	if err := encoder.Encode(b); err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(baselineHeader), data.Bytes()...), 0o644)
}

// Package returns the package's record, or nil.
func (b *Baseline) Package(pkg string) *BaselinePackage {
	for i := range b.Packages {
		if b.Packages[i].Package == pkg {
			return &b.Packages[i]
		}
	}
	return nil
}

// stockResult is what the baseline says of a test: its result on stock and the reason, ok false
// when the baseline does not know it.
func (p *BaselinePackage) stockResult(test string) (KnownResult, bool) {
	for _, name := range p.Passed {
		if name == test {
			return KnownResult{Test: test, Result: Pass}, true
		}
	}
	for _, k := range p.NotPassed {
		if k.Test == test {
			return k, true
		}
	}
	return KnownResult{}, false
}

// Record folds a stock run into the baseline: each test run takes its new result, keeping its
// reason when the result is the same as before; tests not run keep their record. A package that
// failed outside any test is refused: such a run says nothing about its tests.
func (b *Baseline) Record(stock *Results) error {
	if stock.Variant != "stock" {
		return fmt.Errorf("the baseline records a stock run, not %q", stock.Variant)
	}
	var refused []string
	for _, p := range stock.Packages {
		if p.Error != "" {
			refused = append(refused, fmt.Sprintf("%s: %s (log: %s)", p.Package, firstLine(p.Error), p.Log))
		}
	}
	if len(refused) > 0 {
		return fmt.Errorf("not recorded: package(s) failed outside any test on stock; fix the cause and run again:\n  %s", strings.Join(refused, "\n  "))
	}
	for _, p := range stock.Packages {
		record := b.Package(p.Package)
		if record == nil {
			b.Packages = append(b.Packages, BaselinePackage{Package: p.Package})
			record = &b.Packages[len(b.Packages)-1]
		}
		for _, t := range p.Tests {
			before, known := record.stockResult(t.Name)
			record.forget(t.Name)
			switch {
			case t.Result == Pass:
				record.Passed = append(record.Passed, t.Name)
			case known && before.Result == t.Result && before.Reason != "":
				record.NotPassed = append(record.NotPassed, before)
			case t.Result == Skip:
				record.NotPassed = append(record.NotPassed, KnownResult{Test: t.Name, Result: Skip, Reason: "upstream skips it: " + strings.ReplaceAll(t.Why, "\n", " ")})
			default:
				record.NotPassed = append(record.NotPassed, KnownResult{Test: t.Name, Result: t.Result})
			}
		}
	}
	return nil
}

func (p *BaselinePackage) forget(test string) {
	passed := p.Passed[:0]
	for _, name := range p.Passed {
		if name != test {
			passed = append(passed, name)
		}
	}
	p.Passed = passed
	notPassed := p.NotPassed[:0]
	for _, k := range p.NotPassed {
		if k.Test != test {
			notPassed = append(notPassed, k)
		}
	}
	p.NotPassed = notPassed
}

// Unexplained lists the baseline's failures and flakes that have no reason written.
func (b *Baseline) Unexplained() []string {
	var missing []string
	for _, p := range b.Packages {
		for _, k := range p.NotPassed {
			if strings.TrimSpace(k.Reason) == "" {
				missing = append(missing, fmt.Sprintf("%s %s (%s on stock)", p.Package, k.Test, k.Result))
			}
		}
	}
	return missing
}

// Missing lists the packages the baseline has no record of.
func (b *Baseline) Missing(packages []string) []string {
	var missing []string
	for _, pkg := range packages {
		if b.Package(pkg) == nil {
			missing = append(missing, pkg)
		}
	}
	return missing
}

// Judgement is a patched run held to the baseline.
type Judgement struct {
	// Problems fail the run: a test that passes on stock and fails on patched, a test or package
	// the baseline does not know, a baseline failure with no reason.
	Problems []string
	// Notes are reported and do not fail it: flaky tests, tests that fail on stock too.
	Notes []string
}

// Judge holds a patched run to the baseline: every test that passed on stock must pass (or
// flake) on patched. suspects names, for a package, the patches that change code it imports.
func (b *Baseline) Judge(patched *Results, suspects func(pkg string) string) Judgement {
	var j Judgement
	for _, missing := range b.Unexplained() {
		j.Problems = append(j.Problems, "the baseline gives no reason for "+missing+": write one in the baseline file")
	}
	for _, p := range patched.Packages {
		record := b.Package(p.Package)
		if record == nil {
			j.Problems = append(j.Problems, fmt.Sprintf("%s has no stock baseline: run 'make test-upstream-baseline'", p.Package))
			continue
		}
		if p.Error != "" {
			j.Problems = append(j.Problems, fmt.Sprintf("%s failed outside any test on %s (log: %s): %s; patches that change code it imports: %s",
				p.Package, patched.Variant, p.Log, firstLine(p.Error), suspects(p.Package)))
		}
		for _, t := range p.Tests {
			stock, known := record.stockResult(t.Name)
			switch {
			case !known:
				j.Problems = append(j.Problems, fmt.Sprintf("%s %s: %s on %s, and the stock baseline does not know it: run 'make test-upstream-baseline'", p.Package, t.Name, t.Result, patched.Variant))
			case t.Result == Fail && stock.Result == Pass:
				j.Problems = append(j.Problems, fmt.Sprintf("%s %s passes on stock and fails on %s (log: %s); patches that change code it imports: %s\n%s",
					p.Package, t.Name, patched.Variant, p.Log, suspects(p.Package), indent(t.Why)))
			case t.Result == Flaky:
				j.Notes = append(j.Notes, fmt.Sprintf("flaky on %s: %s %s (stock: %s)", patched.Variant, p.Package, t.Name, stock.Result))
			case t.Result != Pass && t.Result != stock.Result:
				j.Notes = append(j.Notes, fmt.Sprintf("%s on %s, %s on stock: %s %s (%s)", t.Result, patched.Variant, stock.Result, p.Package, t.Name, stock.Reason))
			case t.Result == Fail:
				j.Notes = append(j.Notes, fmt.Sprintf("fails on stock too: %s %s (%s)", p.Package, t.Name, stock.Reason))
			}
		}
	}
	return j
}

func indent(s string) string {
	var b bytes.Buffer
	for _, line := range strings.Split(s, "\n") {
		b.WriteString("    " + line + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}
