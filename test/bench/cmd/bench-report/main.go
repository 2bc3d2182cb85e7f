// Command bench-report turns the JSON results of `make bench` into docs/benchmarks.md and the
// charts that page embeds.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/klog"

	"github.com/idc-lts/kube-1.17/test/bench"
	"github.com/idc-lts/kube-1.17/test/bench/report"
)

func main() {
	results := flag.String("results", "_output/bench", "directory of the benchmark's JSON results")
	page := flag.String("page", "docs/benchmarks.md", "Markdown page to write; its charts go next to it")
	readme := flag.String("readme", "README.md", "README whose headline block gets the page's summary (none if empty)")
	command := flag.String("command", "make bench", "command that produced the results, quoted on the page")
	flag.Parse()
	if err := run(*results, *page, *readme, *command); err != nil {
		fmt.Fprintln(os.Stderr, "bench-report:", err)
		os.Exit(1)
	}
	klog.Infof("wrote %s and its charts", *page)
}

func run(resultsDir, page, readme, command string) error {
	results, env, err := report.Load(resultsDir)
	if err != nil {
		return err
	}
	schedulers, err := report.LoadSchedulerHandovers(resultsDir)
	if err != nil {
		return err
	}
	charts := map[string]string{}
	draw := func(name, file string, write func(string, []bench.Result) (bool, error)) error {
		path := filepath.Join(filepath.Dir(page), file)
		written, err := write(path, results)
		if err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		if written {
			charts[name] = path
		} else if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	for name, chart := range report.Charts {
		if err := draw(name, chart.File, chart.Write); err != nil {
			return err
		}
	}
	for name, curve := range report.Curves {
		if err := draw(name, curve.File, curve.Write); err != nil {
			return err
		}
	}
	if err := report.WritePage(page, charts, command, env, results, schedulers); err != nil {
		return err
	}
	if readme == "" {
		return nil
	}
	if _, err := report.Headline(page); err != nil {
		// A run narrowed to builds or rates without a stock pair has no summary to copy.
		klog.Warningf("%v: %s keeps its headline", err, readme)
		return nil
	}
	return report.CopyHeadline(readme, page)
}
