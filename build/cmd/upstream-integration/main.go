// Command upstream-integration runs upstream's own integration tests from a variant's tree
// (build/upstreamtest), one line per test, results in LOG_DIR/results.json, and then either
// records a stock run as the baseline or holds a patched run to it:
//
//	upstream-integration -variant V -tree DIR -bin-dir DIR -log-dir DIR [-path-prefix DIR] [-results FILE]
//	    [-timeout D] [-parallel N] [-judge BASELINE | -record BASELINE] PACKAGE[:REGEX]...
//
// -judge fails (exit 1) when a test that passed on stock fails on the variant, naming the
// patches that change code the test imports, or when the baseline does not know a package or a
// test, or gives no reason for a stock failure. -record refuses a run whose packages failed
// outside any test. Run by build/test-upstream-integration.sh.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/idc-lts/kube-1.17/build/upstreamtest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "upstream-integration: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		runner     = upstreamtest.Runner{Out: os.Stderr, BuildFlags: []string{"-trimpath"}}
		pathPrefix = flag.String("path-prefix", "", "a directory put first on the tests' PATH (where etcd is)")
		judge      = flag.String("judge", "", "the stock baseline to hold the run to")
		record     = flag.String("record", "", "the stock baseline to record the run in (a stock run only)")
		patches    = flag.String("patches", "patches", "the patches directory, whose series names the patches a failure is traced to")
		stored     = flag.String("results", "", "judge or record the results.json of an earlier run instead of running the tests")
	)
	flag.StringVar(&runner.Variant, "variant", "", "the variant the tree is (stock, patched, without-NNNN)")
	flag.StringVar(&runner.Tree, "tree", "", "the variant's worktree")
	flag.StringVar(&runner.BinDir, "bin-dir", "", "where the test binaries are compiled to")
	flag.StringVar(&runner.LogDir, "log-dir", "", "where the go test -json streams and results.json go")
	flag.DurationVar(&runner.Timeout, "timeout", 20*time.Minute, "each run of a package's test binary")
	flag.IntVar(&runner.Parallel, "parallel", 1, "packages run at once")
	flag.Parse()
	for name, value := range map[string]string{"variant": runner.Variant, "tree": runner.Tree, "bin-dir": runner.BinDir, "log-dir": runner.LogDir} {
		if value == "" {
			return fmt.Errorf("-%s is required", name)
		}
	}
	// Absolute: the compiler runs in the tree and each test in its package's directory.
	for _, dir := range []*string{&runner.Tree, &runner.BinDir, &runner.LogDir} {
		abs, err := filepath.Abs(*dir)
		if err != nil {
			return err
		}
		*dir = abs
	}
	if *judge != "" && *record != "" {
		return errors.New("give -judge BASELINE or -record BASELINE, not both")
	}
	if *record != "" && runner.Variant != "stock" {
		return fmt.Errorf("-record takes a stock run, not %s", runner.Variant)
	}
	var specs []upstreamtest.Spec
	var packages []string
	for _, arg := range flag.Args() {
		spec, err := upstreamtest.ParseSpec(arg)
		if err != nil {
			return err
		}
		specs = append(specs, spec)
		packages = append(packages, spec.Package)
	}
	if len(specs) == 0 {
		return errors.New("no packages given")
	}
	baselineFile := *judge + *record
	baseline := &upstreamtest.Baseline{}
	if baselineFile != "" {
		var err error
		baseline, err = upstreamtest.ReadBaseline(baselineFile)
		switch {
		case err == nil:
		case errors.Is(err, os.ErrNotExist) && *record != "":
			baseline = &upstreamtest.Baseline{}
		default:
			return err
		}
	}
	if *judge != "" {
		// Before an hour of tests: a package the baseline does not know cannot be judged.
		if missing := baseline.Missing(packages); len(missing) > 0 {
			return fmt.Errorf("%s has no stock baseline for %s: run 'make test-upstream-baseline'", baselineFile, strings.Join(missing, ", "))
		}
	}
	if *pathPrefix != "" {
		runner.Env = append(runner.Env, "PATH="+*pathPrefix+string(os.PathListSeparator)+os.Getenv("PATH"))
	}

	results, err := runOrRead(&runner, specs, *stored)
	if err != nil {
		return err
	}

	switch {
	case *record != "":
		if err := baseline.Record(results); err != nil {
			return err
		}
		if err := baseline.Write(baselineFile); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "recorded in %s\n", baselineFile)
		if unexplained := baseline.Unexplained(); len(unexplained) > 0 {
			return fmt.Errorf("write the reason for each of these in %s:\n  %s", baselineFile, strings.Join(unexplained, "\n  "))
		}
		return nil
	case *judge == "":
		return nil
	}

	patched, err := upstreamtest.PatchedPackages(*patches, filepath.Join(*patches, "series"))
	if err != nil {
		return err
	}
	suspects := &upstreamtest.Suspects{Tree: runner.Tree, Env: runner.Env, Patches: patched}
	judgement := baseline.Judge(results, suspects.Of)
	for _, note := range judgement.Notes {
		fmt.Fprintf(os.Stderr, "note: %s\n", note)
	}
	if len(judgement.Problems) > 0 {
		return fmt.Errorf("%s does not hold to the stock baseline %s:\n%s", runner.Variant, baselineFile, strings.Join(judgement.Problems, "\n"))
	}
	counts := results.Counts()
	fmt.Fprintf(os.Stderr, "%s holds to the stock baseline %s: %d test(s) passed, %d flaky, %d skipped, %d failed as on stock\n",
		runner.Variant, baselineFile, counts[upstreamtest.Pass], counts[upstreamtest.Flaky], counts[upstreamtest.Skip], counts[upstreamtest.Fail])
	return nil
}

// runOrRead runs the tests and stores their results in the log directory, or reads the results
// an earlier run stored (which must be of the same variant and packages).
func runOrRead(runner *upstreamtest.Runner, specs []upstreamtest.Spec, stored string) (*upstreamtest.Results, error) {
	if stored != "" {
		results, err := upstreamtest.ReadResults(stored)
		if err != nil {
			return nil, err
		}
		if results.Variant != runner.Variant {
			return nil, fmt.Errorf("%s holds a run of %s, not %s", stored, results.Variant, runner.Variant)
		}
		for _, s := range specs {
			if !results.Has(s) {
				return nil, fmt.Errorf("%s holds no run of %s with -run %s", stored, s.Package, s.Run)
			}
		}
		return results, nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	results, err := runner.Run(ctx, specs)
	if err != nil {
		return nil, err
	}
	resultsFile := filepath.Join(runner.LogDir, "results.json")
	if err := results.Write(resultsFile); err != nil {
		return nil, err
	}
	counts := results.Counts()
	fmt.Fprintf(os.Stderr, "%s: %d package(s) in %s: %d pass, %d fail, %d flaky, %d skip (%s)\n", runner.Variant, len(specs),
		time.Since(start).Round(time.Second), counts[upstreamtest.Pass], counts[upstreamtest.Fail], counts[upstreamtest.Flaky], counts[upstreamtest.Skip], resultsFile)
	return results, nil
}
