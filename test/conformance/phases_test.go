package conformance

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idc-lts/kube-1.17/test/conformance/report"
	"github.com/idc-lts/kube-1.17/test/harness"
)

// TestPhasesCoverEveryConformanceTestOnce asks e2e.test itself (a dry run) which tests each phase
// would run: together, every conformance test but the excluded ones, each in exactly one phase,
// and the excluded ones in none. make conformance-build runs it, once e2e.test is built.
func TestPhasesCoverEveryConformanceTestOnce(t *testing.T) {
	e2e := harness.Binary(t, "stock", "e2e.test")
	all := dryRun(t, e2e, `\[Conformance\]`, "")
	if len(all) != conformanceTests {
		t.Fatalf("e2e.test has %d conformance tests, v1.17.3 has %d", len(all), conformanceTests)
	}
	excluded := map[string]bool{}
	for _, e := range report.Exclusions {
		if !all[e.Test] {
			t.Errorf("excluded %q is not a conformance test of e2e.test", e.Test)
		}
		excluded[e.Test] = true
	}
	phaseOf := map[string]string{}
	for _, p := range Phases(8) {
		ran := dryRun(t, e2e, p.Focus, p.Skip)
		t.Logf("%s: %d tests on %d node(s)", p.Name, len(ran), p.Nodes)
		for name := range ran {
			if !all[name] {
				t.Errorf("%s runs %q, which is not a conformance test", p.Name, name)
			}
			if excluded[name] {
				t.Errorf("%s runs the excluded %q", p.Name, name)
			}
			if other, twice := phaseOf[name]; twice {
				t.Errorf("%q runs in %s and in %s", name, other, p.Name)
			}
			phaseOf[name] = p.Name
		}
	}
	for name := range all {
		if _, ok := phaseOf[name]; !ok && !excluded[name] {
			t.Errorf("no phase runs %q", name)
		}
	}
}

// dryRun returns the tests e2e.test would run with focus and skip.
func dryRun(t *testing.T, e2e, focus, skip string) map[string]bool {
	t.Helper()
	dir := t.TempDir()
	args := []string{"--ginkgo.dryRun", "--ginkgo.noColor", "--ginkgo.focus=" + focus, "--report-dir=" + dir}
	if skip != "" {
		args = append(args, "--ginkgo.skip="+skip)
	}
	cmd := exec.Command(e2e, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", e2e, strings.Join(args, " "), err, out)
	}
	cases, err := report.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]bool{}
	for name, c := range cases {
		if c.Result == report.Passed {
			ran[name] = true
		}
	}
	if len(ran) == 0 {
		t.Fatalf("e2e.test --ginkgo.focus=%q --ginkgo.skip=%q runs nothing (%s)", focus, skip, filepath.Base(dir))
	}
	return ran
}
