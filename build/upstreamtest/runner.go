package upstreamtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Spec names a package of the upstream tree and which of its tests to run.
type Spec struct {
	// Package is the package's directory in the tree, e.g. test/integration/daemonset.
	Package string
	// Run is the -test.run expression; "." runs every test.
	Run string
}

// ParseSpec reads PACKAGE[:REGEX].
func ParseSpec(s string) (Spec, error) {
	pkg, run, found := strings.Cut(s, ":")
	if !found || run == "" {
		run = "."
	}
	if pkg == "" || path.IsAbs(pkg) || path.Clean(pkg) != pkg || strings.HasPrefix(pkg, "..") {
		return Spec{}, fmt.Errorf("%q: want a package directory relative to the tree, e.g. test/integration/daemonset[:^TestName$]", s)
	}
	if _, err := regexp.Compile(run); err != nil {
		return Spec{}, fmt.Errorf("%q: the test expression does not compile: %w", s, err)
	}
	return Spec{Package: pkg, Run: run}, nil
}

// Runner compiles upstream test packages once, runs them, and retries what fails once.
type Runner struct {
	// Tree is the variant's worktree; Variant names it in the results.
	Tree, Variant string
	// BinDir receives the compiled test binaries; LogDir the go test -json streams.
	BinDir, LogDir string
	// Env is added to the environment of the compiler and the tests (PATH with etcd first).
	Env []string
	// BuildFlags are go test's build flags, as make build uses them (-trimpath).
	BuildFlags []string
	// Timeout bounds each run of a package's test binary.
	Timeout time.Duration
	// Parallel is how many packages run at once.
	Parallel int
	// Out receives one line per test as results come in.
	Out io.Writer

	outMu sync.Mutex
}

// Run compiles every spec's package in one go test -c (so shared packages compile once), then
// runs the binaries, Parallel at a time. A package whose tests fail runs those tests once more:
// passing then, they are flaky. Results come back in spec order.
func (r *Runner) Run(ctx context.Context, specs []Spec) (*Results, error) {
	seen := map[string]string{}
	for _, s := range specs {
		base := path.Base(s.Package)
		if other, ok := seen[base]; ok && other != s.Package {
			return nil, fmt.Errorf("%s and %s compile to the same test binary name %s.test: run them separately", other, s.Package, base)
		}
		seen[base] = s.Package
		if fi, err := os.Stat(filepath.Join(r.Tree, s.Package)); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("no package %s in the %s tree %s", s.Package, r.Variant, r.Tree)
		}
	}
	for _, dir := range []string{r.BinDir, r.LogDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	buildErr := r.compile(ctx, specs)

	results := &Results{Variant: r.Variant, Packages: make([]PackageResult, len(specs))}
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < max(r.Parallel, 1); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				results.Packages[i] = r.runPackage(ctx, specs[i], buildErr)
			}
		}()
	}
	for i := range specs {
		work <- i
	}
	close(work)
	wg.Wait()
	return results, ctx.Err()
}

// compile builds every package's test binary into BinDir; a package that does not build is told
// apart later by its missing binary, and the returned error carries the compiler's output.
func (r *Runner) compile(ctx context.Context, specs []Spec) error {
	args := append([]string{"test", "-c", "-o", r.BinDir + "/"}, r.BuildFlags...)
	for _, s := range specs {
		os.Remove(r.binary(s))
		args = append(args, "./"+s.Package)
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = r.Tree, append(os.Environ(), r.Env...), &out, &out
	r.say("compiling %d test package(s) in %s: go %s", len(specs), r.Tree, strings.Join(args, " "))
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go test -c: %v\n%s", err, lastLines(strings.Split(strings.TrimSpace(out.String()), "\n"), whyLines))
	}
	return nil
}

func (r *Runner) binary(s Spec) string {
	return filepath.Join(r.BinDir, path.Base(s.Package)+".test")
}

func (r *Runner) logFile(s Spec, attempt string) string {
	return filepath.Join(r.LogDir, strings.ReplaceAll(s.Package, "/", "_")+attempt+".json")
}

// runPackage runs a package's tests and, if some fail, those once more.
func (r *Runner) runPackage(ctx context.Context, s Spec, buildErr error) PackageResult {
	result := PackageResult{Package: s.Package, Run: s.Run}
	if _, err := os.Stat(r.binary(s)); err != nil {
		result.Error = "did not build"
		if buildErr != nil {
			result.Error += ": " + buildErr.Error()
		}
		r.say("%-5s %s: %s", Fail, s.Package, result.Error)
		return result
	}
	start := time.Now()
	first, err := r.runBinary(ctx, s, s.Run, r.logFile(s, ""))
	result.Log = r.logFile(s, "")
	if err != nil {
		result.Error = err.Error()
		return result
	}
	result.Tests, result.Error = first.tests, first.err
	if retry := retryExpression(first); retry != "" && ctx.Err() == nil {
		r.say("      %s: running %s once more", s.Package, retry)
		second, err := r.runBinary(ctx, s, retry, r.logFile(s, ".retry"))
		result.Log = r.logFile(s, ".retry")
		if err != nil {
			result.Error = err.Error()
			return result
		}
		result.Tests, result.Error = mergeRetry(first, second)
	}
	result.Seconds = time.Since(start).Seconds()
	for _, t := range result.Tests {
		r.say("%-5s %7.1fs %s %s", t.Result, t.Seconds, s.Package, t.Name)
	}
	if result.Error != "" {
		r.say("%-5s %s: %s (log: %s)", Fail, s.Package, firstLine(result.Error), result.Log)
	}
	return result
}

// attempt is one run of a test binary.
type attempt struct {
	tests []TestResult
	// err says why the package failed with no test failing (TestMain, init, a crash between tests).
	err string
}

// runBinary runs the package's test binary under test2json from the package's directory, as go
// test would, and parses what it wrote to logPath.
func (r *Runner) runBinary(ctx context.Context, s Spec, run, logPath string) (attempt, error) {
	dir := filepath.Join(r.Tree, s.Package)
	if err := linkModuleRoot(dir, r.Tree); err != nil {
		return attempt{}, err
	}
	logOut, err := os.Create(logPath)
	if err != nil {
		return attempt{}, err
	}
	defer logOut.Close()
	args := []string{"tool", "test2json", "-t", "-p", s.Package, r.binary(s),
		"-test.v=test2json", "-test.count=1", "-test.run", run, "-test.timeout", r.Timeout.String()}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, append(os.Environ(), r.Env...), logOut, logOut
	// Its own process group, so that an interrupted run takes the etcd the tests started with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return attempt{}, ctx.Err()
	}
	in, err := os.Open(logPath)
	if err != nil {
		return attempt{}, err
	}
	defer in.Close()
	tests, packageFailed, packageOutput, err := ParseEvents(in)
	if err != nil {
		return attempt{}, fmt.Errorf("%s: %w", logPath, err)
	}
	a := attempt{tests: tests}
	anyFailed := false
	for _, t := range tests {
		anyFailed = anyFailed || t.Result == Fail
	}
	if (packageFailed || runErr != nil) && !anyFailed {
		a.err = fmt.Sprintf("the test binary failed outside any test (%v):\n%s", runErr, lastLines(packageOutput, whyLines))
	}
	return a, nil
}

// linkModuleRoot makes the paths that -trimpath leaves in the binary resolve from the package's
// directory: runtime.Caller then names files as "k8s.io/kubernetes/..." and, for the staging
// modules (replaced by directories at version v0.0.0), "k8s.io/apiextensions-apiserver@v0.0.0/...",
// and the test servers find (and write) their serving-certificate fixtures next to their source
// files that way (kube-apiserver's in k8s.io/kubernetes, apiextensions-apiserver's in its module).
// The worktree is scratch space; checkout_variant cleans the links away.
func linkModuleRoot(dir, tree string) error {
	links := map[string]string{filepath.Join(dir, "k8s.io", "kubernetes"): tree}
	stagingDir := filepath.Join(tree, "staging", "src", "k8s.io")
	staging, err := os.ReadDir(stagingDir)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	for _, module := range staging {
		if module.IsDir() {
			links[filepath.Join(dir, "k8s.io", module.Name()+"@v0.0.0")] = filepath.Join(stagingDir, module.Name())
		}
	}
	for link, target := range links {
		if _, err := os.Lstat(link); err == nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(target, link); err != nil {
			return err
		}
	}
	return nil
}

// retryExpression is the -test.run expression for what failed: the failed top-level tests, or
// the whole package again when it failed outside any test.
func retryExpression(a attempt) string {
	var failed []string
	for _, t := range a.tests {
		if t.Result == Fail {
			failed = append(failed, regexp.QuoteMeta(t.Name))
		}
	}
	switch {
	case len(failed) > 0:
		return "^(" + strings.Join(failed, "|") + ")$"
	case a.err != "":
		return "."
	}
	return ""
}

// mergeRetry folds the second attempt into the first. The second ran the tests that failed (or,
// when the package failed outside any test, every test): one that failed and then passed is
// flaky; one that failed twice keeps the second failure.
func mergeRetry(first, second attempt) ([]TestResult, string) {
	failedBefore := map[string]string{}
	for _, t := range first.tests {
		if t.Result == Fail {
			failedBefore[t.Name] = t.Why
		}
	}
	again := map[string]TestResult{}
	retried := make([]TestResult, 0, len(second.tests))
	for _, t := range second.tests {
		if why, failed := failedBefore[t.Name]; failed && t.Result == Pass {
			t.Result = Flaky
			t.Why = "failed, then passed when run again; the failure:\n" + why
		}
		again[t.Name] = t
		retried = append(retried, t)
	}
	if first.err != "" {
		return retried, second.err
	}
	tests := make([]TestResult, 0, len(first.tests))
	for _, t := range first.tests {
		if t2, ok := again[t.Name]; ok && t.Result == Fail {
			t = t2
		}
		tests = append(tests, t)
	}
	return tests, second.err
}

func (r *Runner) say(format string, args ...any) {
	if r.Out == nil {
		return
	}
	r.outMu.Lock()
	defer r.outMu.Unlock()
	fmt.Fprintf(r.Out, format+"\n", args...)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
