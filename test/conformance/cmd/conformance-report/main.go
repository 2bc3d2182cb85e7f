// Command conformance-report compares the conformance tests' JUnit files of a stock run and of
// ours, writes docs/conformance.md and, with -summary, the release's conformance.txt, and exits 1
// when a test that passed with stock did not pass with ours.
//
//	conformance-report -tests FILE -stock DIR -ours DIR -page docs/conformance.md -summary RELEASE/conformance.txt \
//	  -release VERSION -commit SHA -stock-images FILE -our-images FILE -minutes N [-subset FOCUS]
//
// It also exits 1, naming each test, when the runs do not account for every test of -tests
// (report.Compare): a page that could miss a test is not written.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/idc-lts/kube-1.17/test/conformance/report"
)

func main() {
	testsFile := flag.String("tests", "", "the conformance tests the runs were to run, one name per line (make conformance-build's conformance-tests.txt, or a subset's)")
	stockDir := flag.String("stock", "", "directory of the stock run's JUnit files")
	oursDir := flag.String("ours", "", "directory of our run's JUnit files")
	page := flag.String("page", "docs/conformance.md", "Markdown page to write")
	summary := flag.String("summary", "", "the release's conformance.txt to write (none if empty)")
	stockImages := flag.String("stock-images", "", `file of "name digest" lines: the stock images run`)
	ourImages := flag.String("our-images", "", `file of "name digest" lines: our images run`)
	nodesFile := flag.String("nodes", "", "the cluster's nodes, one name per line, the control plane's first (TestConformance's nodes.txt)")
	var meta report.Meta
	flag.StringVar(&meta.Date, "date", "", "when the runs were made")
	flag.StringVar(&meta.Machine, "machine", "", "the machine they ran on")
	flag.StringVar(&meta.Command, "command", "make conformance", "the command that ran them")
	flag.StringVar(&meta.Release, "release", "", "the release whose images ours ran")
	flag.StringVar(&meta.Commit, "commit", "", "the patch series' commit")
	flag.StringVar(&meta.StockCommit, "stock-commit", "", "the commit the stock images were rebuilt from (the series' tag stock)")
	flag.Float64Var(&meta.Minutes, "minutes", 0, "how long both runs took")
	flag.StringVar(&meta.Subset, "subset", "", "the focus that narrowed the runs (make conformance-subset), if any")
	flag.Parse()
	if err := run(*testsFile, *stockDir, *oursDir, *page, *summary, *stockImages, *ourImages, *nodesFile, meta); err != nil {
		fmt.Fprintln(os.Stderr, "conformance-report:", err)
		os.Exit(1)
	}
}

func run(testsFile, stockDir, oursDir, page, summary, stockImages, ourImages, nodesFile string, meta report.Meta) error {
	if testsFile == "" || stockDir == "" || oursDir == "" || nodesFile == "" || meta.Release == "" {
		return fmt.Errorf("-tests, -stock, -ours, -nodes and -release are required")
	}
	var err error
	if meta.Nodes, err = report.ReadNodes(nodesFile); err != nil {
		return err
	}
	tests, err := report.ReadTests(testsFile)
	if err != nil {
		return err
	}
	stock, err := report.ReadRun(stockDir)
	if err != nil {
		return fmt.Errorf("stock run: %v", err)
	}
	ours, err := report.ReadRun(oursDir)
	if err != nil {
		return fmt.Errorf("our run: %v", err)
	}
	if meta.StockImages, err = readImages(stockImages); err != nil {
		return err
	}
	if meta.OurImages, err = readImages(ourImages); err != nil {
		return err
	}
	c, err := report.Compare(stock, ours, tests)
	if err != nil {
		return err
	}
	if err := report.WritePage(page, meta, c); err != nil {
		return err
	}
	if summary != "" {
		if err := report.WriteSummary(summary, meta, c); err != nil {
			return err
		}
	}
	fmt.Printf("stock: %d passed, %d failed; ours: %d passed, %d failed; passed with stock and not with ours: %d\n",
		c.Stock.Passed, c.Stock.Failed, c.Ours.Passed, c.Ours.Failed, len(c.Violations))
	if len(c.Violations) > 0 {
		var names []string
		for _, v := range c.Violations {
			names = append(names, v.Name)
		}
		return fmt.Errorf("%d test(s) passed with stock and not with ours:\n  %s", len(names), strings.Join(names, "\n  "))
	}
	return nil
}

// readImages reads "name digest" lines; an empty path is no images.
func readImages(path string) ([]report.Image, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var images []report.Image
	lines := bufio.NewScanner(f)
	for n := 1; lines.Scan(); n++ {
		fields := strings.Fields(lines.Text())
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 || !strings.HasPrefix(fields[1], "sha256:") {
			return nil, fmt.Errorf("%s:%d: want \"name sha256:...\", got %q", path, n, lines.Text())
		}
		images = append(images, report.Image{Name: fields[0], Digest: fields[1]})
	}
	return images, lines.Err()
}
