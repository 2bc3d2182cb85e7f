// Package pipeline tests the pipeline scripts' handling of bad input: each must stop with an
// error naming the culprit and leave things as they were. Every test works in scratch copies of
// its own and runs in parallel with the others: most of their time is git and the scripts.
package pipeline

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/idc-lts/kube-1.17/test/harness"
	"github.com/idc-lts/kube-1.17/test/tier"
)

// scratchTree clones the upstream tree (make source) and copies patches/, so that a test can
// break them without touching the real ones.
func scratchTree(t *testing.T) (tree, patches string) {
	t.Helper()
	root := harness.RepoRoot(t)
	source := filepath.Join(root, "_output", "src", "kubernetes")
	if _, err := os.Stat(filepath.Join(source, ".git")); err != nil {
		tier.Missing(t, "run 'make source'", "no upstream tree at %s", source)
	}
	dir := t.TempDir()
	tree = filepath.Join(dir, "tree")
	if out, err := exec.Command("git", "clone", "-q", "--shared", source, tree).CombinedOutput(); err != nil {
		t.Fatalf("clone: %v\n%s", err, out)
	}
	patches = filepath.Join(dir, "patches")
	if out, err := exec.Command("cp", "-r", filepath.Join(root, "patches"), patches).CombinedOutput(); err != nil {
		t.Fatalf("copy patches: %v\n%s", err, out)
	}
	return tree, patches
}

func runScript(t *testing.T, tree, patches, script string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(harness.RepoRoot(t), "build", script), args...)
	cmd.Env = append(os.Environ(), "TREE_DIR="+tree, "PATCHES_DIR="+patches, "SERIES_FILE="+filepath.Join(patches, "series"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func firstPatch(t *testing.T, patches string, prefix string) string {
	matches, _ := filepath.Glob(filepath.Join(patches, prefix+"-*.patch"))
	if len(matches) != 1 {
		t.Fatalf("no single patch %s-* in %s", prefix, patches)
	}
	return matches[0]
}

// editPatch replaces the first OLD in the patch file with NEW; a patch without OLD fails the test.
func editPatch(t *testing.T, patch, old, new string) {
	t.Helper()
	data, err := os.ReadFile(patch)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(data), old, new, 1)
	if edited == string(data) {
		t.Fatalf("%s has no %q to replace", filepath.Base(patch), old)
	}
	if err := os.WriteFile(patch, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestASeriesWithoutAPatchIsTheSameFromARecordedPrefix: patch.sh --without starts from the commit
// patch.sh recorded for the patches before the one left out. The result is the commit the series
// applied from upstream makes, and a patch before it that changed since is applied from its file,
// never taken from a record.
func TestASeriesWithoutAPatchIsTheSameFromARecordedPrefix(t *testing.T) {
	t.Parallel()
	tree, patches := scratchTree(t)
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", tree}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	apply := func(args ...string) {
		t.Helper()
		if out, err := runScript(t, tree, patches, "patch.sh", args...); err != nil {
			t.Fatalf("patch.sh %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	without := filepath.Base(firstPatch(t, patches, "0030"))
	apply()
	apply("--without", without)
	fromPrefix := git("rev-parse", "without-0030")
	for _, ref := range strings.Fields(git("for-each-ref", "--format=%(refname)", "refs/pipeline/prefix/")) {
		git("update-ref", "-d", ref)
	}
	apply("--without", without)
	if fromUpstream := git("rev-parse", "without-0030"); fromPrefix != fromUpstream {
		t.Errorf("the series without 0030 is %s from the recorded prefix and %s from upstream", fromPrefix, fromUpstream)
	}

	apply() // records the prefixes again
	editPatch(t, firstPatch(t, patches, "0029"), "\nReason: ", "\nReason: (edited after the records) ")
	apply("--without", without)
	if log := git("log", "--format=%H", "--grep=edited after the records", "upstream..without-0030"); log == "" {
		t.Errorf("the series without 0030 took patch 0029 from a record made before it changed")
	}
}

func TestPatchStopsAtABrokenPatchAndNamesIt(t *testing.T) {
	t.Parallel()
	tree, patches := scratchTree(t)
	if out, err := runScript(t, tree, patches, "patch.sh"); err != nil {
		t.Fatalf("the intact series does not apply: %v\n%s", err, out)
	}
	before, _ := exec.Command("git", "-C", tree, "rev-parse", "patched").Output()

	broken := firstPatch(t, patches, "0002")
	// Corrupt one context line of the diff.
	editPatch(t, broken, "\tgithub.com/modern-go/reflect2 => github.com/modern-go/reflect2 v1.0.1", "\tgithub.com/modern-go/reflect2 => github.com/modern-go/reflect2 v9.9.9")

	out, err := runScript(t, tree, patches, "patch.sh")
	if err == nil {
		t.Fatalf("patch.sh accepted a corrupted patch:\n%s", out)
	}
	if !strings.Contains(out, "patch "+filepath.Base(broken)+" does not apply") || !strings.Contains(out, "failing: go.mod") {
		t.Errorf("the error does not name the patch and the failing file:\n%s", out)
	}
	after, _ := exec.Command("git", "-C", tree, "rev-parse", "patched").Output()
	if string(after) != string(before) {
		t.Errorf("branch patched moved from %s to %s", before, after)
	}
}

func TestVerifyPatchesRejectsBadSeries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		breakIt func(t *testing.T, patches string)
		want    string
	}{
		{
			name: "header field missing",
			breakIt: func(t *testing.T, patches string) {
				p := firstPatch(t, patches, "0004")
				data, _ := os.ReadFile(p)
				var kept []string
				for _, line := range strings.Split(string(data), "\n") {
					if !strings.HasPrefix(line, "Reason: ") {
						kept = append(kept, line)
					}
				}
				os.WriteFile(p, []byte(strings.Join(kept, "\n")), 0o644)
			},
			want: "header has no Reason: field",
		},
		{
			name: "patch listed twice",
			breakIt: func(t *testing.T, patches string) {
				f, _ := os.OpenFile(filepath.Join(patches, "series"), os.O_APPEND|os.O_WRONLY, 0)
				f.WriteString(filepath.Base(firstPatch(t, patches, "0004")) + "\n")
				f.Close()
			},
			want: "listed twice",
		},
		{
			name: "patch missing from the series",
			breakIt: func(t *testing.T, patches string) {
				os.WriteFile(filepath.Join(patches, "0099-extra.patch"), []byte("x"), 0o644)
			},
			want: "0099-extra.patch is not listed",
		},
		{
			name: "hand-edited patch",
			breakIt: func(t *testing.T, patches string) {
				p := firstPatch(t, patches, "0004")
				data, _ := os.ReadFile(p)
				// A diffstat that git format-patch would not write; git am ignores it.
				edited := strings.Replace(string(data), " file changed,", " file changed (edited),", 1)
				if edited == string(data) {
					edited = strings.Replace(string(data), " files changed,", " files changed (edited),", 1)
				}
				os.WriteFile(p, []byte(edited), 0o644)
			},
			want: "edited by hand or are stale",
		},
		{
			// 0018 changes lines of controllermanager.go that 0017 changed: without its Requires
			// line prove-patches could not build the series without 0017 (CI stop 30).
			name: "Requires line missing",
			breakIt: func(t *testing.T, patches string) {
				editPatch(t, firstPatch(t, patches, "0018"), "Requires: 0017\n", "")
			},
			want: "its header needs 'Requires: 0017'",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tree, patches := scratchTree(t)
			tc.breakIt(t, patches)
			out, err := runScript(t, tree, patches, "verify-patches.sh")
			if err == nil || !strings.Contains(out, tc.want) {
				t.Errorf("verify-patches: err %v, want output containing %q:\n%s", err, tc.want, out)
			}
		})
	}
}

func TestSourceRejectsAHashMismatch(t *testing.T) {
	t.Parallel()
	root := harness.RepoRoot(t)
	pins, err := os.ReadFile(filepath.Join(root, "build", "upstream.sum"))
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(pins), "k8s.io/api v0.17.3 h1:", "k8s.io/api v0.17.3 h1:AAAA", 1)
	pinFile := filepath.Join(t.TempDir(), "upstream.sum")
	os.WriteFile(pinFile, []byte(bad), 0o644)
	dest := filepath.Join(t.TempDir(), "tree")
	cmd := exec.Command("go", "run", "./build/cmd/upstream-source", "-pins", pinFile, "-dest", dest)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "checksum mismatch for k8s.io/api@v0.17.3") {
		t.Errorf("err %v, want a checksum mismatch naming k8s.io/api:\n%s", err, out)
	}
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Errorf("%s was created despite the mismatch", dest)
	}
}

// TestVerifyPatchesNamesAPatchLackingAField checks that a header without a required trailer fails
// verify-patches with the patch's name and the missing field.
func TestVerifyPatchesNamesAPatchLackingAField(t *testing.T) {
	t.Parallel()
	tree, patches := scratchTree(t)
	patch := firstPatch(t, patches, "0005")
	data, err := os.ReadFile(patch)
	if err != nil {
		t.Fatal(err)
	}
	header, diff, _ := strings.Cut(string(data), "\n---\n")
	var kept []string
	for _, line := range strings.Split(header, "\n") {
		if !strings.HasPrefix(line, "Reason: ") {
			kept = append(kept, line)
		}
	}
	if len(kept) == len(strings.Split(header, "\n")) {
		t.Fatal("patch 0005 has no Reason: line to remove")
	}
	os.WriteFile(patch, []byte(strings.Join(kept, "\n")+"\n---\n"+diff), 0o644)

	out, err := runScript(t, tree, patches, "verify-patches.sh")
	if err == nil {
		t.Fatalf("verify-patches.sh accepted a header without Reason:\n%s", out)
	}
	if want := filepath.Base(patch) + ": header has no Reason: field"; !strings.Contains(out, want) {
		t.Errorf("the error does not say %q:\n%s", want, out)
	}
}

// TestComponentListsAgree keeps the Go copies of the component lists (test/harness.Components,
// SuiteComponents) equal to the pipeline's (COMPONENTS, SUITE_COMPONENTS in build/lib.sh).
func TestComponentListsAgree(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(harness.RepoRoot(t), "build", "lib.sh"))
	if err != nil {
		t.Fatal(err)
	}
	shell := map[string][]string{}
	for _, line := range strings.Split(string(data), "\n") {
		for _, name := range []string{"COMPONENTS", "SUITE_COMPONENTS"} {
			if list, ok := strings.CutPrefix(line, name+"=("); ok {
				shell[name] = strings.Fields(strings.TrimSuffix(list, ")"))
			}
		}
	}
	for name, goList := range map[string][]string{"COMPONENTS": harness.Components, "SUITE_COMPONENTS": harness.SuiteComponents} {
		if strings.Join(shell[name], " ") != strings.Join(goList, " ") {
			t.Errorf("build/lib.sh %s=%v, test/harness: %v", name, shell[name], goList)
		}
	}
}

// TestVerifyDocsNamesDanglingPathsAndTargets: make lint (build/verify-docs.sh) fails on a doc that
// names, in backticks, a repository path that does not exist or a make target the Makefile lacks,
// links to a heading that is not there, or says we build with another Go than VERSION's, naming
// each; the same doc with real ones passes.
func TestVerifyDocsNamesDanglingPathsAndTargets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad, good := filepath.Join(dir, "bad.md"), filepath.Join(dir, "good.md")
	if err := os.WriteFile(bad, []byte("Run `build/no-such-script.sh`, then `make no-such-target`; `build/lib.sh` and `make lint` exist.\n"+
		"See [its steps](good.md#no-such-step) and [above](#nowhere). It is built with Go 1.13.6.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(good, []byte("# Steps: one, two\n\n`build/lib.sh`, `make lint`, `make test-upstream-integration`, upstream's `test/integration/daemonset`.\n"+
		"[Here](#steps-one-two), [there](bad.md).\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(harness.RepoRoot(t), "build", "verify-docs.sh")
	out, err := exec.Command(script, bad).CombinedOutput()
	for _, want := range []string{"names build/no-such-script.sh, which does not exist", "names make no-such-target, which the Makefile does not have",
		"links to good.md#no-such-step, but " + good + " has no heading that makes #no-such-step", "links to #nowhere, but",
		"says we build with go1.13.6, but VERSION's GO_TOOLCHAIN is go1."} {
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("verify-docs on a dangling doc: %v, want %q:\n%s", err, want, out)
		}
	}
	if strings.Contains(string(out), "build/lib.sh") || strings.Contains(string(out), "make lint,") {
		t.Errorf("verify-docs named a path or target that exists:\n%s", out)
	}
	if out, err := exec.Command(script, good).CombinedOutput(); err != nil {
		t.Errorf("verify-docs on a doc with real paths and targets: %v\n%s", err, out)
	}
}

// TestMissingToolsAreNamed: a stage that needs tools the machine lacks stops naming each missing
// one and what installs them (need_tools in build/lib.sh), not with "command not found" halfway.
func TestMissingToolsAreNamed(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("bash", "-c", ". build/lib.sh && need_tools bash no-such-tool-a no-such-tool-b && echo passed")
	cmd.Dir = harness.RepoRoot(t)
	out, err := cmd.CombinedOutput()
	if err == nil || strings.Contains(string(out), "passed") {
		t.Fatalf("need_tools with two missing tools succeeded: %s", out)
	}
	want := "error: missing no-such-tool-a no-such-tool-b: run 'sudo hack/install-tools.sh'"
	if !strings.Contains(string(out), want) {
		t.Errorf("need_tools said %q, want it to contain %q (every missing tool, none present, and the fix)", out, want)
	}
}

// TestVulncheckNamesABadDatabase: build/vulncheck.sh stops naming VULNDB when it names nothing
// usable, before it scans anything.
func TestVulncheckNamesABadDatabase(t *testing.T) {
	t.Parallel()
	root := harness.RepoRoot(t)
	notADB := filepath.Join(t.TempDir(), "empty.zip")
	if out, err := exec.Command("python3", "-m", "zipfile", "-c", notADB, filepath.Join(root, "VERSION")).CombinedOutput(); err != nil {
		t.Fatalf("making a zip: %v\n%s", err, out)
	}
	for vulndb, want := range map[string]string{
		"/no/such/vulndb.zip":          "VULNDB=/no/such/vulndb.zip: no such file or directory",
		filepath.Join(root, "VERSION"): "VULNDB=" + filepath.Join(root, "VERSION") + ": not a directory or a .zip",
		notADB:                         "VULNDB=" + notADB + ": no index/db.json",
	} {
		cmd := exec.Command(filepath.Join(root, "build", "vulncheck.sh"))
		cmd.Env = append(os.Environ(), "VULNDB="+vulndb, "OUTPUT_DIR="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if strings.Contains(string(out), "missing govulncheck") {
			tier.Missing(t, "run 'sudo hack/install-tools.sh'", "no govulncheck")
		}
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("VULNDB=%s: %v, want an error saying %q:\n%s", vulndb, err, want, out)
		}
	}
}

// TestVulncheckHoldsEveryFindingToSecurityMD: make vulncheck fails naming a finding whose row in
// SECURITY.md is gone, and a row that no scan reports (a stale explanation).
func TestVulncheckHoldsEveryFindingToSecurityMD(t *testing.T) {
	t.Parallel()
	root := harness.RepoRoot(t)
	harness.Binary(t, "patched", "kube-controller-manager") // a missing build is a missing prerequisite
	patches := filepath.Join(t.TempDir(), "patches")
	if out, err := exec.Command("cp", "-r", filepath.Join(root, "patches"), patches).CombinedOutput(); err != nil {
		t.Fatalf("copy patches: %v\n%s", err, out)
	}
	security := filepath.Join(patches, "SECURITY.md")
	data, err := os.ReadFile(security)
	if err != nil {
		t.Fatal(err)
	}
	const removed = "| GO-2026-5026 |"
	var kept []string
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, removed) {
			kept = append(kept, line)
		}
		if strings.HasPrefix(line, "| GO-2020-0017 |") {
			kept = append(kept, "| GO-2099-0001 | `example.com/gone` | `F` | an explanation of a finding no scan reports | never |")
		}
	}
	if len(kept) != len(strings.Split(string(data), "\n")) {
		t.Fatalf("SECURITY.md has no row %s or no row GO-2020-0017 to edit", removed)
	}
	if err := os.WriteFile(security, []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root, "build", "vulncheck.sh"))
	cmd.Env = append(os.Environ(), "PATCHES_DIR="+patches, "VULNCHECK_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), "missing govulncheck") {
		tier.Missing(t, "run 'sudo hack/install-tools.sh'", "no govulncheck")
	}
	for _, want := range []string{
		"linux-" + runtime.GOARCH + "/kube-controller-manager: GO-2026-5026 (golang.org/x/net",
		"GO-2099-0001 is no longer reported by any scan: remove the stale row",
	} {
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("vulncheck with a row removed and a stale one added: %v, want %q:\n%s", err, want, out)
		}
	}
}

// TestConformanceRefusesAFocus: make conformance runs every conformance test; a focus is refused
// before anything runs, naming it and the target that takes one, and conformance-subset without
// a focus is refused too. Neither touches docs/conformance.md.
func TestConformanceRefusesAFocus(t *testing.T) {
	t.Parallel()
	root := harness.RepoRoot(t)
	page := filepath.Join(root, "docs", "conformance.md")
	before, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args  []string
		focus string
		want  string
	}{
		{nil, `\[sig-apps\]`, `CONFORMANCE_FOCUS=\[sig-apps\]: make conformance runs every conformance test; run some with make conformance-subset`},
		{[]string{"--subset"}, "", "make conformance-subset needs CONFORMANCE_FOCUS=<regexp>"},
		{[]string{"--all"}, "", "usage: "},
	} {
		cmd := exec.Command(filepath.Join(root, "build", "conformance.sh"), tc.args...)
		cmd.Env = append(os.Environ(), "CONFORMANCE_FOCUS="+tc.focus, "OUTPUT_DIR="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("build/conformance.sh %v with CONFORMANCE_FOCUS=%q: %v, want an error saying %q:\n%s", tc.args, tc.focus, err, tc.want, out)
		}
	}
	if after, err := os.ReadFile(page); err != nil || string(after) != string(before) {
		t.Errorf("a refused run changed %s (%v)", page, err)
	}
}

// TestVerifyDocsNamesAFigureThatDrifted: make lint fails, naming the figure, when a figure of
// docs/benchmarks.md's tables changes without its summary and the README's headline (a figure
// of the summary changed by hand is named on both sides), or a row of one of docs/ha.md's tables
// is not what docs/ha-figures.tsv or docs/ha-upgrade.tsv makes, or the README's count of
// upstream's integration tests is not the stock baseline's.
func TestVerifyDocsNamesAFigureThatDrifted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, file, old, new string
		want                 []string
	}{
		{"a resync p99 in the benchmark's table", "docs/benchmarks.md", "| 632 s | 642 s |", "| 640 s | 642 s |",
			[]string{`docs/benchmarks.md: the Resync line of the summary has "632" where the summary computed from its tables has "640"`}},
		{"a figure of the summary", "docs/benchmarks.md", "and after 89 ms (p99", "and after 91 ms (p99",
			[]string{`docs/benchmarks.md: the Resync line of the summary has "91" where the summary computed from its tables has "89"`,
				`README.md: the Resync line of its headline has "89" where docs/benchmarks.md's summary has "91"`}},
		{"the README's count of upstream's integration tests", "README.md", "(36 packages of `test/integration`", "(37 packages of `test/integration`",
			[]string{"README.md: says 37 packages of upstream's integration tests, but build/upstreamtest/stock-baseline.yaml records 36"}},
		{"a recovery in docs/ha.md's table", "docs/ha.md", "| patched | 46.1s |", "| patched | 41.6s |",
			[]string{`docs/ha.md: row 1 of its table after "<!-- ha-figures: ` + "docs/ha-figures.tsv as make ha-figures renders it; make lint checks the copy -->\" is \"| VIP moves (every connection silent) | patched | 41.6s |",
				`but docs/ha-figures.tsv makes it "| VIP moves (every connection silent) | patched | 46.1s |`}},
		{"an Endpoints lag in docs/ha.md's rolling-upgrade table", "docs/ha.md", "| 0.3s/16.1s/21.3s (83) |", "| 0.3s/9.9s/21.3s (83) |",
			[]string{`docs/ha.md: row 14 of its table after "<!-- ha-upgrade: ` + "docs/ha-upgrade.tsv as make ha-upgrade-figures renders it; make lint checks the copy -->\" is \"| all applies | - |",
				`but docs/ha-upgrade.tsv makes it "| all applies | - |`, `(make ha-upgrade-figures writes both)`}},
	} {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := verifyDocsAfterEdit(t, tc.file, tc.old, tc.new)
			for _, want := range tc.want {
				if err == nil || !strings.Contains(string(out), want) {
					t.Errorf("verify-docs after %s changed: %v, want %q:\n%s", tc.name, err, want, out)
				}
			}
		})
	}
}

// TestVerifyDocsNamesAStalePatchTable: a README patch table row that is not what the series'
// headers give fails make lint, naming the row.
func TestVerifyDocsNamesAStalePatchTable(t *testing.T) {
	t.Parallel()
	out, err := verifyDocsAfterEdit(t, "README.md", "| 0005 | leader election renewals wrote kube-system Endpoints every 2 s",
		"| 0005 | leader election renewals wrote kube-system Endpoints every 3 s")
	want := "README.md: its patch table is not the series' headers (README < > headers: < | 0005 | leader election renewals wrote kube-system Endpoints every 3 s"
	if err == nil || !strings.Contains(string(out), want) {
		t.Errorf("verify-docs with a hand-edited patch row: %v, want %q:\n%s", err, want, out)
	}
}

// TestVerifyDocsShellchecksEachOperatorBlock: each block an operator pastes from
// docs/operations.md passes shellcheck on its own, and a broken one is named.
func TestVerifyDocsShellchecksEachOperatorBlock(t *testing.T) {
	t.Parallel()
	out, err := verifyDocsAfterEdit(t, "docs/operations.md",
		`*) "$cpswap" rollback --manifest "$manifests/$c.yaml" --backup-dir "${BACKUP_DIR:-/var/lib/cpswap/backups}"`,
		`*) "$cpswap" rollback --manifest $manifests/$c.yaml --backup-dir "${BACKUP_DIR:-/var/lib/cpswap/backups}"`)
	want := `docs/operations.md: block 3 ("  cpswap=bin/linux-amd64/cpswap`
	if err == nil || !strings.Contains(string(out), want) || !strings.Contains(string(out), "SC2086") {
		t.Errorf("verify-docs with an unquoted expansion in the rollback block: %v, want %q and SC2086:\n%s", err, want, out)
	}
}

// verifyDocsAfterEdit clones the repository, replaces the first old in its file rel with new
// (editPatch), and runs the clone's build/verify-docs.sh.
func verifyDocsAfterEdit(t *testing.T, rel, old, new string) ([]byte, error) {
	t.Helper()
	clone := filepath.Join(t.TempDir(), "repo")
	if out, err := exec.Command("git", "clone", "-q", "--shared", harness.RepoRoot(t), clone).CombinedOutput(); err != nil {
		t.Fatalf("clone: %v\n%s", err, out)
	}
	editPatch(t, filepath.Join(clone, rel), old, new)
	return exec.Command(filepath.Join(clone, "build", "verify-docs.sh")).CombinedOutput()
}

// TestGoTestNamesWhatFailedAtTheEnd: hack/go-test.sh (make's long suites) ends a failed run with
// each failed test's lines, a subtest's and a parallel test's among them, the lines of a test a
// timeout stopped and a package's build error, after every passing package's output; it exits as
// go test did.
func TestGoTestNamesWhatFailedAtTheEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"go.mod": "module scratch\n\ngo 1.21\n",
		"a/a_test.go": `package a

import "testing"

func TestPasses(t *testing.T) { t.Log("a figure that passed") }
func TestFails(t *testing.T) {
	t.Log("setup of TestFails")
	t.Run("sub", func(t *testing.T) { t.Error("the subtest's error") })
}
func TestParallelFails(t *testing.T) { t.Parallel(); t.Error("the parallel test's error") }
func TestParallelPasses(t *testing.T) { t.Parallel(); t.Log("another figure") }
`,
		"b/b_test.go": `package b

import (
	"testing"
	"time"
)

func TestHangs(t *testing.T) { t.Log("waiting for what never comes"); time.Sleep(time.Minute) }
`,
		"c/c_test.go": `package c

import "testing"

func TestDoesNotBuild(t *testing.T) { undefinedHelper() }
`,
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(filepath.Join(harness.RepoRoot(t), "hack", "go-test.sh"), "-count=1", "-p", "2", "-timeout", "5s", "./...")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
		t.Fatalf("hack/go-test.sh: %v, want exit code 1 as go test's\n%s", err, out)
	}
	_, summary, found := strings.Cut(string(out), "=== what failed (go test exited 1):")
	if !found {
		t.Fatalf("no summary at the end:\n%s", out)
	}
	for _, want := range []string{"setup of TestFails", "the subtest's error", "--- FAIL: TestFails/sub",
		"the parallel test's error", "--- FAIL: TestParallelFails", "FAIL\tscratch/a",
		"panic: test timed out after 5s", "=== TestHangs printed:\n", "waiting for what never comes", "FAIL\tscratch/b",
		"undefined: undefinedHelper", "FAIL\tscratch/c [build failed]", "\n=== end of what failed\n"} {
		if !strings.Contains(summary, want) {
			t.Errorf("the summary lacks %q:\n%s", want, summary)
		}
	}
	for _, unwanted := range []string{"a figure that passed", "another figure"} {
		if strings.Contains(summary, unwanted) {
			t.Errorf("the summary has a passing test's line %q:\n%s", unwanted, summary)
		}
	}
}

// TestWhatFailedRepeatsEachFailureAtTheEnd: from a make run's stamped log, hack/what-failed.sh
// prints every stage's "what failed" block and the end of the stage before make's error lines,
// and nothing of what passed; a log without a failure gives nothing; a log it cannot read is named.
func TestWhatFailedRepeatsEachFailureAtTheEnd(t *testing.T) {
	t.Parallel()
	script := filepath.Join(harness.RepoRoot(t), "hack", "what-failed.sh")
	var log strings.Builder
	stamp := func(line string) { log.WriteString("[ 31:51] " + line + "\n") }
	stamp("=== RUN   TestEarly")
	stamp("an early figure that passed")
	stamp("=== what failed (go test exited 1):")
	stamp("    restore_test.go:120: the apiservers were away 11 s, want under the renew deadline")
	stamp("--- FAIL: TestStockIsBlindAfterAnEtcdRestore (300.00s)")
	stamp("=== end of what failed")
	for i := 0; i < 200; i++ {
		stamp("=== RUN   TestOtherLane: a line of the other lane's target")
	}
	stamp("error: the upstream subset: TestNodeAuthorizer failed on patched and passed on stock")
	stamp("make[1]: *** [Makefile:150: test-upstream-subset] Error 1")
	stamp("make: *** [Makefile:115: test] Error 2")
	dir := t.TempDir()
	failedLog, passedLog := filepath.Join(dir, "failed.log"), filepath.Join(dir, "passed.log")
	if err := os.WriteFile(failedLog, []byte(log.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(passedLog, []byte("[  1:00] ok  \tpkg\t1.0s\n[  2:00] make test: all checks passed\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name, log      string
		wantExit       int
		want, unwanted []string
	}{
		{name: "a failed run", log: failedLog,
			want: []string{"=== what failed, again", "want under the renew deadline", "--- FAIL: TestStockIsBlindAfterAnEtcdRestore",
				"=== end of what failed", "error: the upstream subset: TestNodeAuthorizer failed",
				"make[1]: *** [Makefile:150: test-upstream-subset] Error 1", "make: *** [Makefile:115: test] Error 2"},
			unwanted: []string{"an early figure that passed"}},
		{name: "a passed run", log: passedLog, unwanted: []string{"what failed"}},
		{name: "no log", log: filepath.Join(dir, "missing.log"), wantExit: 2, want: []string{"cannot read the log " + filepath.Join(dir, "missing.log")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := exec.Command(script, c.log).CombinedOutput()
			exit := 0
			if exitErr, ok := err.(*exec.ExitError); ok {
				exit = exitErr.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if exit != c.wantExit {
				t.Errorf("exit %d, want %d\n%s", exit, c.wantExit, out)
			}
			for _, want := range c.want {
				if !strings.Contains(string(out), want) {
					t.Errorf("the output lacks %q:\n%s", want, out)
				}
			}
			for _, unwanted := range c.unwanted {
				if strings.Contains(string(out), unwanted) {
					t.Errorf("the output has %q:\n%s", unwanted, out)
				}
			}
		})
	}
}
