package upstreamtest

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A go test -json stream as test2json writes it: a pass, a failing subtest, a skip, and a test
// the binary's timeout cut off.
const stream = `{"Action":"run","Test":"TestPasses"}
{"Action":"output","Test":"TestPasses","Output":"=== RUN   TestPasses\n"}
{"Action":"pass","Test":"TestPasses","Elapsed":1.5}
{"Action":"run","Test":"TestSub"}
{"Action":"run","Test":"TestSub/a"}
{"Action":"output","Test":"TestSub/a","Output":"    sub_test.go:9: boom\n"}
{"Action":"output","Test":"TestSub/a","Output":"W1125 17:34:58.455737   18906 cacher.go:162] Terminating all watchers\n"}
{"Action":"fail","Test":"TestSub/a","Elapsed":0.2}
{"Action":"fail","Test":"TestSub","Elapsed":0.3}
{"Action":"run","Test":"TestSkips"}
{"Action":"output","Test":"TestSkips","Output":"=== RUN   TestSkips\n"}
{"Action":"output","Test":"TestSkips","Output":"    skip_test.go:3: needs a cloud\n"}
{"Action":"output","Test":"TestSkips","Output":"--- SKIP: TestSkips (0.00s)\n"}
{"Action":"skip","Test":"TestSkips","Elapsed":0}
{"Action":"run","Test":"TestHangs"}
{"Action":"output","Output":"panic: test timed out after 1m0s\n"}
{"Action":"fail","Elapsed":60}
`

func TestParseEvents(t *testing.T) {
	tests, packageFailed, _, err := ParseEvents(strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	if !packageFailed {
		t.Error("the package's fail event was not seen")
	}
	want := []struct {
		name   string
		result Result
		why    string
	}{
		{"TestPasses", Pass, ""},
		{"TestSub", Fail, "boom"},
		{"TestSkips", Skip, "needs a cloud"},
		{"TestHangs", Fail, "test timed out"},
	}
	if len(tests) != len(want) {
		t.Fatalf("got %d tests, want %d: %+v", len(tests), len(want), tests)
	}
	for i, w := range want {
		got := tests[i]
		if got.Name != w.name || got.Result != w.result || !strings.Contains(got.Why, w.why) || strings.Contains(got.Why, "cacher.go") {
			t.Errorf("test %d: got %s %s %q, want %s %s containing %q", i, got.Name, got.Result, got.Why, w.name, w.result, w.why)
		}
	}
	if tests[0].Seconds != 1.5 {
		t.Errorf("TestPasses took %v s, want 1.5", tests[0].Seconds)
	}
}

func TestParseEventsRefusesWhatIsNotJSON(t *testing.T) {
	if _, _, _, err := ParseEvents(strings.NewReader("{not json\n")); err == nil {
		t.Error("a broken event line was accepted")
	}
}

func TestRetry(t *testing.T) {
	pass := func(name string) TestResult { return TestResult{Name: name, Result: Pass} }
	fail := func(name string) TestResult { return TestResult{Name: name, Result: Fail, Why: "boom"} }
	cases := []struct {
		name          string
		first, second attempt
		wantRetry     string
		want          []Result
		wantErr       string
	}{
		{
			name:      "nothing failed: no retry",
			first:     attempt{tests: []TestResult{pass("TestA")}},
			wantRetry: "",
		},
		{
			name:      "a failure that passes again is flaky; one that fails again fails",
			first:     attempt{tests: []TestResult{pass("TestA"), fail("TestB"), fail("TestC.x")}},
			second:    attempt{tests: []TestResult{pass("TestB"), fail("TestC.x")}},
			wantRetry: `^(TestB|TestC\.x)$`,
			want:      []Result{Pass, Flaky, Fail},
		},
		{
			name:      "a package that failed outside its tests runs whole again",
			first:     attempt{tests: []TestResult{pass("TestA")}, err: "TestMain: etcd did not start"},
			second:    attempt{tests: []TestResult{pass("TestA"), pass("TestB")}},
			wantRetry: ".",
			want:      []Result{Pass, Pass},
		},
		{
			name:      "twice outside its tests: the package fails",
			first:     attempt{err: "etcd did not start"},
			second:    attempt{err: "etcd did not start again"},
			wantRetry: ".",
			wantErr:   "etcd did not start again",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := retryExpression(c.first); got != c.wantRetry {
				t.Fatalf("retry expression %q, want %q", got, c.wantRetry)
			}
			if c.wantRetry == "" {
				return
			}
			tests, err := mergeRetry(c.first, c.second)
			var got []Result
			for _, test := range tests {
				got = append(got, test.Result)
			}
			if !reflect.DeepEqual(got, c.want) || err != c.wantErr {
				t.Errorf("got %v %q, want %v %q", got, err, c.want, c.wantErr)
			}
		})
	}
}

func TestParseSpec(t *testing.T) {
	cases := []struct {
		in      string
		want    Spec
		wantErr bool
	}{
		{in: "test/integration/daemonset", want: Spec{"test/integration/daemonset", "."}},
		{in: "test/integration/quota:^TestQuota$", want: Spec{"test/integration/quota", "^TestQuota$"}},
		{in: "/abs/path", wantErr: true},
		{in: "../outside", wantErr: true},
		{in: "test/integration/quota:(", wantErr: true},
	}
	for _, c := range cases {
		got, err := ParseSpec(c.in)
		if (err != nil) != c.wantErr || (!c.wantErr && got != c.want) {
			t.Errorf("ParseSpec(%q) = %+v, %v", c.in, got, err)
		}
	}
}

func stockRun() *Results {
	return &Results{Variant: "stock", Packages: []PackageResult{{
		Package: "test/integration/a",
		Tests: []TestResult{
			{Name: "TestPasses", Result: Pass},
			{Name: "TestFails", Result: Fail},
			{Name: "TestSkips", Result: Skip, Why: "needs a cloud"},
		},
	}}}
}

func TestRecordKeepsReasonsWhileResultsHold(t *testing.T) {
	b := &Baseline{}
	if err := b.Record(stockRun()); err != nil {
		t.Fatal(err)
	}
	if got := b.Unexplained(); !reflect.DeepEqual(got, []string{"test/integration/a TestFails (fail on stock)"}) {
		t.Errorf("unexplained %v", got)
	}
	b.Packages[0].NotPassed[0].Reason = "needs 8 cores"
	path := filepath.Join(t.TempDir(), "baseline.yaml")
	if err := b.Write(path); err != nil {
		t.Fatal(err)
	}
	b, err := ReadBaseline(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Record(stockRun()); err != nil {
		t.Fatal(err)
	}
	if got := b.Unexplained(); len(got) != 0 {
		t.Errorf("the reason was lost on a second run: %v", got)
	}
	skip, _ := b.Package("test/integration/a").stockResult("TestSkips")
	if skip.Reason != "upstream skips it: needs a cloud" {
		t.Errorf("skip reason %q", skip.Reason)
	}
	// A test whose result changes loses its reason: the old one no longer explains it.
	run := stockRun()
	run.Packages[0].Tests[1].Result = Flaky
	if err := b.Record(run); err != nil {
		t.Fatal(err)
	}
	if got := b.Unexplained(); !reflect.DeepEqual(got, []string{"test/integration/a TestFails (flaky on stock)"}) {
		t.Errorf("unexplained %v", got)
	}
}

func TestRecordRefusesARunThatFailedOutsideItsTests(t *testing.T) {
	run := stockRun()
	run.Packages[0].Error = "etcd did not start"
	b := &Baseline{}
	if err := b.Record(run); err == nil || !strings.Contains(err.Error(), "test/integration/a") {
		t.Errorf("got %v, want a refusal naming the package", err)
	}
	if len(b.Packages) != 0 {
		t.Error("the refused run changed the baseline")
	}
	run.Variant = "patched"
	if err := (&Baseline{}).Record(run); err == nil {
		t.Error("a patched run was recorded as the stock baseline")
	}
}

func TestJudge(t *testing.T) {
	baseline := &Baseline{}
	if err := baseline.Record(stockRun()); err != nil {
		t.Fatal(err)
	}
	baseline.Packages[0].NotPassed[0].Reason = "needs 8 cores"
	suspects := func(pkg string) string { return "0006 0019" }
	patched := func(tests ...TestResult) *Results {
		return &Results{Variant: "patched", Packages: []PackageResult{{Package: "test/integration/a", Tests: tests}}}
	}
	cases := []struct {
		name         string
		run          *Results
		wantProblems []string
		wantNotes    []string
	}{
		{
			name:      "as on stock",
			run:       patched(TestResult{Name: "TestPasses", Result: Pass}, TestResult{Name: "TestFails", Result: Fail}),
			wantNotes: []string{"fails on stock too"},
		},
		{
			name:         "passes on stock, fails on patched: named with its suspects",
			run:          patched(TestResult{Name: "TestPasses", Result: Fail, Why: "boom"}),
			wantProblems: []string{"TestPasses passes on stock and fails on patched", "0006 0019", "boom"},
		},
		{
			name:      "flaky is reported, not failed",
			run:       patched(TestResult{Name: "TestPasses", Result: Flaky}),
			wantNotes: []string{"flaky on patched: test/integration/a TestPasses"},
		},
		{
			name:         "a test the baseline does not know",
			run:          patched(TestResult{Name: "TestNew", Result: Pass}),
			wantProblems: []string{"TestNew: pass on patched, and the stock baseline does not know it"},
		},
		{
			name:         "a package the baseline does not know",
			run:          &Results{Variant: "patched", Packages: []PackageResult{{Package: "test/integration/b"}}},
			wantProblems: []string{"test/integration/b has no stock baseline"},
		},
		{
			name:         "a package that failed outside its tests",
			run:          &Results{Variant: "patched", Packages: []PackageResult{{Package: "test/integration/a", Error: "did not build"}}},
			wantProblems: []string{"failed outside any test on patched", "0006 0019"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := baseline.Judge(c.run, suspects)
			check := func(kind string, got []string, want []string) {
				joined := strings.Join(got, "\n")
				if (len(want) == 0) != (len(got) == 0) {
					t.Errorf("%s: got %q, want %q", kind, joined, want)
				}
				for _, w := range want {
					if !strings.Contains(joined, w) {
						t.Errorf("%s: got %q, want it to contain %q", kind, joined, w)
					}
				}
			}
			check("problems", j.Problems, c.wantProblems)
			check("notes", j.Notes, c.wantNotes)
		})
	}
	baseline.Packages[0].NotPassed[0].Reason = ""
	if j := baseline.Judge(patched(), suspects); len(j.Problems) != 1 || !strings.Contains(j.Problems[0], "no reason for test/integration/a TestFails") {
		t.Errorf("a stock failure without a reason was not a problem: %q", j.Problems)
	}
}

func TestChangedImportPaths(t *testing.T) {
	patch := `Subject: x
---
diff --git a/staging/src/k8s.io/client-go/tools/cache/reflector.go b/staging/src/k8s.io/client-go/tools/cache/reflector.go
diff --git a/staging/src/k8s.io/client-go/tools/cache/reflector_test.go b/staging/src/k8s.io/client-go/tools/cache/reflector_test.go
diff --git a/pkg/controller/daemon/BUILD b/pkg/controller/daemon/BUILD
diff --git a/pkg/controller/daemon/daemon_controller.go b/pkg/controller/daemon/daemon_controller.go
`
	want := []string{"k8s.io/client-go/tools/cache", "k8s.io/kubernetes/pkg/controller/daemon"}
	if got := changedImportPaths([]byte(patch)); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := changedImportPaths([]byte("diff --git a/go.mod b/go.mod\n")); !reflect.DeepEqual(got, []string{"*"}) {
		t.Errorf("go.mod: got %v", got)
	}
	patches := map[string][]string{"0006": {"k8s.io/client-go/tools/cache"}, "0010": {"*"}, "0015": {"k8s.io/kubernetes/pkg/controller/daemon"}}
	if got := patchesAmong(patches, map[string]bool{"k8s.io/client-go/tools/cache": true}); !reflect.DeepEqual(got, []string{"0006", "0010"}) {
		t.Errorf("suspects %v", got)
	}
}

// The series' own patches parse, and the reflector's patch is traced to the reflector's package.
func TestPatchedPackagesOfTheSeries(t *testing.T) {
	patches, err := PatchedPackages("../../patches", "../../patches/series")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := patches["0001"]; ok {
		t.Error("a build patch, which stock carries too, was counted")
	}
	if got := patches["0006"]; !reflect.DeepEqual(got, []string{"k8s.io/client-go/tools/cache"}) {
		t.Errorf("0006 changes %v", got)
	}
}

// The paths -trimpath leaves in a test binary resolve from the package's directory, for
// k8s.io/kubernetes and for each staging module, and linking twice (the retry) changes nothing.
func TestLinkModuleRootResolvesTrimmedPaths(t *testing.T) {
	tree := t.TempDir()
	files := map[string]string{
		"k8s.io/kubernetes/cmd/kube-apiserver/app/testing/testserver.go":            "cmd/kube-apiserver/app/testing/testserver.go",
		"k8s.io/apiextensions-apiserver@v0.0.0/test/integration/fixtures/server.go": "staging/src/k8s.io/apiextensions-apiserver/test/integration/fixtures/server.go",
		"k8s.io/apiserver@v0.0.0/pkg/server/options/serving.go":                     "staging/src/k8s.io/apiserver/pkg/server/options/serving.go",
	}
	for _, inTree := range files {
		if err := os.MkdirAll(filepath.Join(tree, filepath.Dir(inTree)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tree, inTree), []byte(inTree), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pkgDir := filepath.Join(tree, "test", "integration", "apiserver")
	if err := os.MkdirAll(pkgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := linkModuleRoot(pkgDir, tree); err != nil {
			t.Fatalf("linkModuleRoot, time %d: %v", i+1, err)
		}
	}
	for trimmed, inTree := range files {
		content, err := os.ReadFile(filepath.Join(pkgDir, trimmed))
		if err != nil || string(content) != inTree {
			t.Errorf("%s from the package's directory: %q, %v; want the tree's %s", trimmed, content, err, inTree)
		}
	}
}
