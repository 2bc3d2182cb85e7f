package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// junit writes a JUnit file as ginkgo v1's reporter writes one per node.
func junit(t *testing.T, dir, name string, cases ...string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	text := `<?xml version="1.0" encoding="UTF-8"?>
  <testsuite name="Kubernetes e2e suite" tests="280" failures="0" errors="0" time="0.014">
` + strings.Join(cases, "\n") + `
  </testsuite>`
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

const (
	podsTest   = "[k8s.io] Pods should get a host IP [NodeConformance] [Conformance]"
	dnsTest    = "[sig-network] DNS should provide DNS for services  [Conformance]"
	serialTest = "[sig-scheduling] SchedulerPredicates [Serial] validates resource limits of pods that are allowed to run  [Conformance]"
	storage    = "[sig-storage] In-tree Volumes [Driver: nfs] [Testpattern: Inline-volume (default fs)] subPath should support existing directory"
)

// excludedTest stands for a test the cluster could not pass (the one a single node could not): the
// real list is empty since the second node, and the exclusion's handling stays tested.
var excludedTest = Exclusion{Test: "[sig-apps] Daemon set [Serial] should rollback without unnecessary restarts [Conformance]",
	Reason: "needs two schedulable nodes"}

func init() { Exclusions = []Exclusion{excludedTest} }

// conformanceTests are the conformance tests of the runs written by runs.
var conformanceTests = []string{podsTest, dnsTest, serialTest, excludedTest.Test}

func passed(name, seconds string) string {
	return `      <testcase name="` + name + `" classname="Kubernetes e2e suite" time="` + seconds + `"></testcase>`
}

func skipped(name string) string {
	return `      <testcase name="` + name + `" classname="Kubernetes e2e suite" time="0">
          <skipped></skipped>
      </testcase>`
}

func failed(name, message string) string {
	return `      <testcase name="` + name + `" classname="Kubernetes e2e suite" time="61.2">
          <failure type="Failure">` + message + `</failure>
          <system-out>log</system-out>
      </testcase>`
}

// runs writes a stock run of three phases over two parallel nodes, and ours, in which the DNS
// test fails.
func runs(t *testing.T) (stock, ours string) {
	dir := t.TempDir()
	stock, ours = filepath.Join(dir, "stock"), filepath.Join(dir, "ours")
	for _, run := range []string{stock, ours} {
		dns := passed(dnsTest, "30.5")
		if run == ours {
			dns = failed(dnsTest, "/workspace/test/e2e/network/dns.go:42\nUnexpected error:\n    timed out waiting for the condition\n/workspace/test/e2e/network/dns_common.go:510")
		}
		// Each parallel node lists what the other ran as skipped.
		junit(t, run, "junit_parallel-01.xml", passed(podsTest, "4.25"), skipped(dnsTest), skipped(serialTest), skipped(storage))
		junit(t, run, "junit_parallel-02.xml", skipped(podsTest), dns, skipped(serialTest), skipped(storage))
		junit(t, run, "junit_serial-01.xml", skipped(podsTest), skipped(dnsTest), passed(serialTest, "300.1"), skipped(storage),
			skipped(excludedTest.Test))
	}
	return stock, ours
}

func TestReadRunMergesNodesAndPhases(t *testing.T) {
	stock, _ := runs(t)
	cases, err := ReadRun(stock)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]Result{podsTest: Passed, dnsTest: Passed, serialTest: Passed, storage: Skipped} {
		if got := cases[name].Result; got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	if got := cases[serialTest].Seconds; got != 300.1 {
		t.Errorf("%s took %v s, want 300.1", serialTest, got)
	}
	if _, err := ReadRun(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no JUnit files") {
		t.Errorf("a directory without JUnit files: %v, want an error naming it", err)
	}
}

func TestCompareFindsWhatPassedWithStockOnly(t *testing.T) {
	stockDir, oursDir := runs(t)
	stock, ours := readRuns(t, stockDir, oursDir)
	c, err := Compare(stock, ours, conformanceTests)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rows) != 4 {
		t.Errorf("%d conformance tests, want 4 (the storage test is not one)", len(c.Rows))
	}
	if len(c.Violations) != 1 || c.Violations[0].Name != dnsTest {
		t.Fatalf("violations %v, want the DNS test alone", c.Violations)
	}
	if got := c.Violations[0].Ours.Message; got != "Unexpected error: timed out waiting for the condition" {
		t.Errorf("the failure's message is %q, want what it says without ginkgo's code locations", got)
	}
	if c.Stock.Passed != 3 || c.Stock.Skipped != 1 || c.Ours.Passed != 2 || c.Ours.Failed != 1 {
		t.Errorf("totals stock %+v ours %+v, want 3 passed 1 skipped, and 2 passed 1 failed 1 skipped", c.Stock, c.Ours)
	}
	if len(c.NotPassedWithStock) != 0 {
		t.Errorf("the excluded test counts as not passed with stock: %v", c.NotPassedWithStock)
	}

	dir := t.TempDir()
	meta := Meta{Date: "2026-11-26", Machine: "2 cores", Command: "make conformance", Release: "v1.17.3-idc.1", Commit: "abc123", StockCommit: "def456", Minutes: 104, Nodes: []string{"cp-node", "worker"},
		StockImages: []Image{{"kube-controller-manager", "sha256:aaa"}}, OurImages: []Image{{"kube-controller-manager", "sha256:bbb"}}}
	page, summary := filepath.Join(dir, "conformance.md"), filepath.Join(dir, "conformance.txt")
	if err := WritePage(page, meta, c); err != nil {
		t.Fatal(err)
	}
	if err := WriteSummary(summary, meta, c); err != nil {
		t.Fatal(err)
	}
	for path, wants := range map[string][]string{
		page: {
			"**Passed with stock, not with ours: 1.**",
			"- " + dnsTest + ": ours failed: Unexpected error: timed out waiting for the condition",
			"| stock | 3 | 0 | 1 | 0 | 6 min |",
			"| " + excludedTest.Test + " | " + excludedTest.Reason + " |",
			"| " + podsTest + " | passed | 4.2 s | passed | 4.2 s |",
			"kube-controller-manager `sha256:bbb`",
			"104 minutes for both runs",
			"a kubeadm cluster of 2 nodes\n(cp-node, worker; the control plane on the first)",
			"## Deviations",
			"v1.17.3 rebuilt from source, commit def456",
			"| " + cellText(Deviations[0].What) + " | " + cellText(Deviations[0].Why) + " |",
		},
		summary: {
			"Conformance of v1.17.3-idc.1 (series commit abc123)",
			"  kube-controller-manager sha256:bbb",
			"passed with stock and not with ours: 1\n  " + dnsTest,
			"passed\tfailed\t" + dnsTest,
			"  - " + Deviations[len(Deviations)-1].What + ".",
			"a kubeadm cluster of 2 nodes (cp-node, worker) with real kubelets",
			"Left out (a cluster with no route out cannot pass them):\n  " + excludedTest.Test + ": " + excludedTest.Reason,
		},
	} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range wants {
			if !strings.Contains(string(data), want) {
				t.Errorf("%s lacks %q:\n%s", filepath.Base(path), want, data)
			}
		}
	}
}

// TestTheReportAccountsForEveryTest: each way a run can miscount is refused, naming the test:
// a test with two results, a test of the list without a result in a run (a ginkgo node that
// timed out writes no JUnit file), a conformance test that is not on the list, and an excluded
// test that ran anyway.
func TestTheReportAccountsForEveryTest(t *testing.T) {
	for _, tc := range []struct {
		name string
		// change alters ours's JUnit directory and the list of tests.
		change func(t *testing.T, ours string, tests []string) []string
		want   string
	}{
		{"a test run twice", func(t *testing.T, ours string, tests []string) []string {
			junit(t, ours, "junit_rerun-01.xml", passed(podsTest, "3.0"))
			return tests
		}, `test(s) have two results, each test runs once: "` + podsTest + `" in junit_parallel-01.xml and in junit_rerun-01.xml`},
		{"a node that wrote no JUnit file", func(t *testing.T, ours string, tests []string) []string {
			if err := os.Remove(filepath.Join(ours, "junit_parallel-02.xml")); err != nil {
				t.Fatal(err)
			}
			return tests
		}, `ours has no result for "` + dnsTest + `" (skipped)`},
		{"a test the list lacks", func(t *testing.T, ours string, tests []string) []string {
			return tests[1:]
		}, `ours ran "` + podsTest + `", which is not one of the 3 tests`},
		{"a test of the list that neither run has", func(t *testing.T, ours string, tests []string) []string {
			return append(tests, "[sig-cli] Kubectl client should vanish [Conformance]")
		}, `stock has no result for "[sig-cli] Kubectl client should vanish [Conformance]" (not run)`},
		{"an excluded test that ran", func(t *testing.T, ours string, tests []string) []string {
			junit(t, ours, "junit_serial-01.xml", skipped(podsTest), skipped(dnsTest), passed(serialTest, "300.1"), passed(excludedTest.Test, "12"))
			return tests
		}, `ours ran the excluded "` + excludedTest.Test + `"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stockDir, oursDir := runs(t)
			tests := tc.change(t, oursDir, append([]string(nil), conformanceTests...))
			stock, err := ReadRun(stockDir)
			if err != nil {
				t.Fatal(err)
			}
			ours, err := ReadRun(oursDir)
			if err == nil {
				_, err = Compare(stock, ours, tests)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestASubsetCountsOnlyTheSpecsThatRan: ginkgo's JUnit lists every spec a focus left out as
// skipped; a conformance test among them that is not on the subset's list is no problem (make
// conformance-subset), one that ran is (TestTheReportAccountsForEveryTest).
func TestASubsetCountsOnlyTheSpecsThatRan(t *testing.T) {
	stockDir, oursDir := runs(t)
	left := "[sig-apps] Job should run a job to completion [Conformance]"
	for _, dir := range []string{stockDir, oursDir} {
		junit(t, dir, "junit_parallel-03.xml", skipped(left))
	}
	stock, ours := readRuns(t, stockDir, oursDir)
	if _, err := Compare(stock, ours, conformanceTests); err != nil {
		t.Errorf("a spec the focus skipped was counted: %v", err)
	}
}

// readRuns reads both runs' JUnit directories.
func readRuns(t *testing.T, stockDir, oursDir string) (stock, ours map[string]Case) {
	t.Helper()
	var err error
	if stock, err = ReadRun(stockDir); err != nil {
		t.Fatal(err)
	}
	if ours, err = ReadRun(oursDir); err != nil {
		t.Fatal(err)
	}
	return stock, ours
}

func cellText(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// TestEvidenceIsTheRunInUpstreamsForm: e2e.log holds each phase's log in order and ends in
// ginkgo's verdict over the whole run; junit_01.xml reads back as the same results, one per test.
func TestEvidenceIsTheRunInUpstreamsForm(t *testing.T) {
	stockDir, oursDir := runs(t)
	dir := t.TempDir()
	var logs []string
	for _, phase := range []string{"parallel", "serial"} {
		path := filepath.Join(dir, "stock-"+phase+".log")
		if err := os.WriteFile(path, []byte("Running Suite: Kubernetes e2e suite\n"+phase+" output\nSUCCESS! -- 1 Passed | 0 Failed | 0 Pending | 3 Skipped"), 0o644); err != nil {
			t.Fatal(err)
		}
		logs = append(logs, path)
	}
	for _, tc := range []struct {
		run, verdict string
	}{
		{stockDir, "SUCCESS! -- 3 Passed | 0 Failed | 0 Pending | 1 Skipped\n"},
		{oursDir, "FAIL! -- 2 Passed | 1 Failed | 0 Pending | 1 Skipped\n"},
	} {
		cases, err := ReadRun(tc.run)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, filepath.Base(tc.run))
		if err := WriteEvidence(out, logs, conformanceTests, cases); err != nil {
			t.Fatal(err)
		}
		log, err := os.ReadFile(filepath.Join(out, E2ELog))
		if err != nil {
			t.Fatal(err)
		}
		text := string(log)
		if !strings.HasSuffix(text, tc.verdict) {
			t.Errorf("%s's e2e.log ends %q, want %q", filepath.Base(tc.run), text[max(0, len(text)-80):], tc.verdict)
		}
		if i, j := strings.Index(text, "parallel output"), strings.Index(text, "serial output"); i < 0 || j < i {
			t.Errorf("e2e.log does not hold the phases' logs in order:\n%s", text)
		}
		back, err := ReadFiles(out, []string{filepath.Join(out, JUnitXML)})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range conformanceTests {
			want := cases[name].Result
			if name == excludedTest.Test {
				want = Skipped
			}
			if back[name].Result != want {
				t.Errorf("junit_01.xml has %q %s, want %s", name, back[name].Result, want)
			}
		}
	}
	cases, _ := ReadRun(stockDir)
	delete(cases, dnsTest)
	if err := WriteEvidence(filepath.Join(dir, "missing"), logs, conformanceTests, cases); err == nil || !strings.Contains(err.Error(), dnsTest) {
		t.Errorf("a run without the DNS test's result: %v, want an error naming it", err)
	}
}

// TestNothingLeftOutSaysSo: with no exclusion, the page and the summary say that every
// conformance test ran, instead of an empty table.
func TestNothingLeftOutSaysSo(t *testing.T) {
	defer func(kept []Exclusion) { Exclusions = kept }(Exclusions)
	Exclusions = nil
	dir := t.TempDir()
	page, summary := filepath.Join(dir, "conformance.md"), filepath.Join(dir, "conformance.txt")
	meta := Meta{Release: "v1.17.3-idc.1", Nodes: []string{"cp-node", "worker"}}
	c := Comparison{Rows: []Row{{Name: podsTest, Stock: Case{Result: Passed}, Ours: Case{Result: Passed}}}}
	if err := WritePage(page, meta, c); err != nil {
		t.Fatal(err)
	}
	if err := WriteSummary(summary, meta, c); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{page: "## Left out\n\nNone: every conformance test runs.\n",
		summary: "Left out (a cluster with no route out cannot pass them): none\n"} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), want) {
			t.Errorf("%s lacks %q:\n%s", filepath.Base(path), want, data)
		}
	}
}

// TestAnErroredTestFailed: a JUnit <error> (a test that could not run to its assertions) is a
// failure, never a pass.
func TestAnErroredTestFailed(t *testing.T) {
	dir := t.TempDir()
	junit(t, dir, "junit_01.xml", `      <testcase name="`+podsTest+`" classname="Kubernetes e2e suite" time="3.0">
          <error message="BeforeEach panicked">stack</error>
      </testcase>`)
	run, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c := run[podsTest]; c.Result != Failed || c.Message != "BeforeEach panicked stack" {
		t.Errorf("a test with <error> read as %q %q, want failed with its message", c.Result, c.Message)
	}
}
