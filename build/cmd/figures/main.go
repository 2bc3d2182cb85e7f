// Command figures keeps the measured figures the docs quote tied to where they were measured:
//
//	figures check [-root DIR]             make lint: docs/benchmarks.md's summary is what its tables
//	                                      say, the README's headline is that summary, docs/ha.md's
//	                                      tables are docs/ha-figures.tsv and docs/ha-upgrade.tsv
//	                                      rendered, and the README's count of upstream's integration
//	                                      packages and tests is the stock baseline's; each
//	                                      difference names the figure
//	figures write-ha [-root DIR]          make ha-figures: render docs/ha-figures.tsv into docs/ha.md
//	figures write-ha-upgrade [-root DIR]  make ha-upgrade-figures: render docs/ha-upgrade.tsv into
//	                                      docs/ha.md
//
// The benchmark page and its summary are written by make bench (test/bench/cmd/bench-report),
// which computes the summary with the same code (test/bench/summary).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/idc-lts/kube-1.17/build/docblock"
	"github.com/idc-lts/kube-1.17/build/upstreamtest"
	"github.com/idc-lts/kube-1.17/test/bench/summary"
	"github.com/idc-lts/kube-1.17/test/regression/ha/figures"
)

// The files, relative to the repository's root.
const (
	benchmarksPage = "docs/benchmarks.md"
	readme         = "README.md"
	haPage         = "docs/ha.md"
	haFigures      = "docs/ha-figures.tsv"
	haUpgrade      = "docs/ha-upgrade.tsv"
	stockBaseline  = "build/upstreamtest/stock-baseline.yaml"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: figures check|write-ha|write-ha-upgrade [-root DIR]")
	}
	flags := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	root := flags.String("root", ".", "the repository's root")
	_ = flags.Parse(os.Args[2:])
	switch os.Args[1] {
	case "check":
		problems, err := check(*root)
		if err != nil {
			fail(err.Error())
		}
		if len(problems) > 0 {
			fail(strings.Join(problems, "\n"))
		}
	case "write-ha":
		if err := writeHA(*root, figures.Faults, haFigures); err != nil {
			fail(err.Error())
		}
	case "write-ha-upgrade":
		if err := writeHA(*root, figures.Upgrade, haUpgrade); err != nil {
			fail(err.Error())
		}
	default:
		fail(fmt.Sprintf("figures: no command %q (check, write-ha, write-ha-upgrade)", os.Args[1]))
	}
}

func fail(message string) {
	fmt.Fprintln(os.Stderr, message)
	os.Exit(1)
}

func read(root, path string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, path))
	return string(data), err
}

// check returns every figure of the docs that differs from its source.
func check(root string) ([]string, error) {
	var problems []string
	page, err := read(root, benchmarksPage)
	if err != nil {
		return nil, err
	}
	differences, err := summary.Check(page)
	if err != nil {
		problems = append(problems, fmt.Sprintf("%s: %v", benchmarksPage, err))
	}
	for _, d := range differences {
		problems = append(problems, fmt.Sprintf("%s: %s (make bench writes both; a figure changed by hand must change in both)", benchmarksPage, d))
	}
	text, err := read(root, readme)
	if err != nil {
		return nil, err
	}
	if headline, ok := docblock.Get(text, summary.HeadlineStart, summary.HeadlineEnd); !ok {
		problems = append(problems, fmt.Sprintf("%s: no headline block (%s ... %s)", readme, summary.HeadlineStart, summary.HeadlineEnd))
	} else {
		for _, d := range summary.Differences(strings.Split(strings.TrimRight(headline, "\n"), "\n"), summary.Lines(page), "its headline", benchmarksPage+"'s summary") {
			problems = append(problems, fmt.Sprintf("%s: %s (make bench copies the summary)", readme, d))
		}
	}
	counts, err := integrationCounts(root, text)
	if err != nil {
		return nil, err
	}
	problems = append(problems, counts...)
	for _, table := range []struct {
		kind       figures.Kind
		tsv, maker string
	}{{figures.Faults, haFigures, "make ha-figures"}, {figures.Upgrade, haUpgrade, "make ha-upgrade-figures"}} {
		haProblems, err := haTable(root, table.kind, table.tsv, table.maker)
		if err != nil {
			return nil, err
		}
		problems = append(problems, haProblems...)
	}
	return problems, nil
}

// haTable compares one of docs/ha.md's figures tables with its figures lines rendered, row by row.
func haTable(root string, kind figures.Kind, tsvPath, maker string) ([]string, error) {
	ha, err := read(root, haPage)
	if err != nil {
		return nil, err
	}
	tsv, err := read(root, tsvPath)
	if err != nil {
		return nil, err
	}
	want, err := kind.Table(tsv)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", tsvPath, err)}, nil
	}
	got, err := kind.Block(ha)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", haPage, err)}, nil
	}
	var problems []string
	gotRows, wantRows := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(gotRows) || i < len(wantRows); i++ {
		var g, w string
		if i < len(gotRows) {
			g = gotRows[i]
		}
		if i < len(wantRows) {
			w = wantRows[i]
		}
		if g == w {
			continue
		}
		// The first two lines are the header and its separator; rows count from the first below.
		line := map[int]string{0: "the header", 1: "the separator"}[i]
		if line == "" {
			line = fmt.Sprintf("row %d", i-1)
		}
		problems = append(problems, fmt.Sprintf("%s: %s of its table after %q is %q, but %s makes it %q (%s writes both)",
			haPage, line, kind.Start, g, tsvPath, w, maker))
	}
	return problems, nil
}

// writeHA renders the figures lines of tsvPath into docs/ha.md's table of that kind.
func writeHA(root string, kind figures.Kind, tsvPath string) error {
	tsv, err := read(root, tsvPath)
	if err != nil {
		return err
	}
	table, err := kind.Table(tsv)
	if err != nil {
		return fmt.Errorf("%s: %v", tsvPath, err)
	}
	page, err := read(root, haPage)
	if err != nil {
		return err
	}
	updated, err := kind.Replace(page, table)
	if err != nil {
		return fmt.Errorf("%s: %v", haPage, err)
	}
	return os.WriteFile(filepath.Join(root, haPage), []byte(updated), 0o644)
}

// integrationCountsRE is how the README counts upstream's integration tests that judge the fork.
var integrationCountsRE = regexp.MustCompile("\\((\\d+) packages of `test/integration`, (\\d+) tests\\)")

// integrationCounts compares the README's count of upstream's integration packages and tests with
// the stock baseline's: every package it records and every test of them.
func integrationCounts(root, readmeText string) ([]string, error) {
	m := integrationCountsRE.FindStringSubmatch(readmeText)
	if m == nil {
		return []string{fmt.Sprintf("%s: no count of upstream's integration tests (%s)", readme, integrationCountsRE)}, nil
	}
	baseline, err := upstreamtest.ReadBaseline(filepath.Join(root, stockBaseline))
	if err != nil {
		return nil, err
	}
	tests := 0
	for _, p := range baseline.Packages {
		tests += len(p.Passed) + len(p.NotPassed)
	}
	var problems []string
	if n, _ := strconv.Atoi(m[1]); n != len(baseline.Packages) {
		problems = append(problems, fmt.Sprintf("%s: says %s packages of upstream's integration tests, but %s records %d", readme, m[1], stockBaseline, len(baseline.Packages)))
	}
	if n, _ := strconv.Atoi(m[2]); n != tests {
		problems = append(problems, fmt.Sprintf("%s: says %s upstream integration tests, but %s records %d", readme, m[2], stockBaseline, tests))
	}
	return problems, nil
}
