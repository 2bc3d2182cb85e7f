// Command bench-report turns the JSON results of `make bench` into docs/benchmarks.md and the
// charts that page embeds.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/klog"

	"github.com/idc-lts/kube-1.17/test/bench/report"
)

func main() {
	results := flag.String("results", "_output/bench", "directory of the benchmark's JSON results")
	page := flag.String("page", "docs/benchmarks.md", "Markdown page to write; its charts go next to it")
	command := flag.String("command", "make bench", "command that produced the results, quoted on the page")
	flag.Parse()
	if err := run(*results, *page, *command); err != nil {
		fmt.Fprintln(os.Stderr, "bench-report:", err)
		os.Exit(1)
	}
	klog.Infof("wrote %s and its charts", *page)
}

func run(resultsDir, page, command string) error {
	results, env, err := report.Load(resultsDir)
	if err != nil {
		return err
	}
	charts := map[string]string{}
	for name, chart := range report.Charts {
		path := filepath.Join(filepath.Dir(page), chart.File)
		written, err := chart.Write(path, results)
		if err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		if written {
			charts[name] = path
		} else if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	for name, curve := range report.Curves {
		path := filepath.Join(filepath.Dir(page), curve.File)
		written, err := curve.Write(path, results)
		if err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		if written {
			charts[name] = path
		} else if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return report.WritePage(page, charts, command, env, results)
}
