// Command bench-report turns the JSON results of `make bench` into docs/benchmarks.md and the
// latency chart that page embeds.
package main

import (
	"flag"
	"fmt"
	"os"

	"k8s.io/klog"

	"github.com/idc-lts/kube-1.17/test/bench/report"
)

func main() {
	results := flag.String("results", "_output/bench", "directory of the benchmark's JSON results")
	page := flag.String("page", "docs/benchmarks.md", "Markdown page to write")
	chart := flag.String("chart", "docs/benchmarks-latency.png", "PNG chart to write, embedded by the page")
	command := flag.String("command", "make bench", "command that produced the results, quoted on the page")
	flag.Parse()
	if err := run(*results, *page, *chart, *command); err != nil {
		fmt.Fprintln(os.Stderr, "bench-report:", err)
		os.Exit(1)
	}
	klog.Infof("wrote %s and %s", *page, *chart)
}

func run(resultsDir, page, chart, command string) error {
	results, env, err := report.Load(resultsDir)
	if err != nil {
		return err
	}
	if err := report.WriteChart(chart, results); err != nil {
		return err
	}
	return report.WritePage(page, chart, command, env, results)
}
