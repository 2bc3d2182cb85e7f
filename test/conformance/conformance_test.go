package conformance

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/idc-lts/kube-1.17/test/conformance/report"
	"github.com/idc-lts/kube-1.17/test/harness"
	"github.com/idc-lts/kube-1.17/test/kubeadmnode"
)

// The run's settings, from the environment (make conformance passes them through):
//   - CONFORMANCE_VARIANTS: the control planes to run, in order (default "stock ours");
//   - CONFORMANCE_NODES: ginkgo's parallel nodes in the parallel phase (default 8);
//   - CONFORMANCE_FOCUS: a regexp; only the conformance tests whose name it matches run (all if
//     empty), for a quicker look at a few: make conformance refuses it, make conformance-subset
//     passes it and its page says "subset".
const (
	variantsVar = "CONFORMANCE_VARIANTS"
	nodesVar    = "CONFORMANCE_NODES"
	focusVar    = "CONFORMANCE_FOCUS"
)

// ginkgoSeed orders the specs alike in both runs.
const ginkgoSeed = "1436380640"

// TestConformance runs upstream v1.17.3's conformance tests on a two-node cluster
// (startCluster), first with the stock control plane and kubelets, then with ours: the control
// plane swapped in by cpswap as an operator would, each node's kubelet by the release's package
// (swapKubelets); each run in Phases. JUnit files go to the test's log directory,
// junit/<variant>/; conformance-report compares them.
func TestConformance(t *testing.T) {
	variants := strings.Fields(envOr(variantsVar, "stock ours"))
	if v := strings.Join(variants, " "); v != "stock ours" && v != "stock" && v != "ours" {
		t.Fatalf("%s=%q: it is \"stock ours\", \"stock\" or \"ours\"", variantsVar, os.Getenv(variantsVar))
	}
	parallel, err := strconv.Atoi(envOr(nodesVar, "8"))
	if err != nil || parallel < 1 {
		t.Fatalf("%s=%q: a number of ginkgo nodes, 1 or more", nodesVar, os.Getenv(nodesVar))
	}
	var focus *regexp.Regexp
	if f := os.Getenv(focusVar); f != "" {
		if focus, err = regexp.Compile(f); err != nil {
			t.Fatalf("%s=%q: %v", focusVar, f, err)
		}
	}
	e2e := harness.Binary(t, "stock", "e2e.test")
	ginkgo := harness.Binary(t, "stock", "ginkgo")
	phases := Phases(parallel)
	if focus != nil {
		phases = narrow(t, e2e, phases, focus)
	}
	tests := writeTests(t, e2e, focus, harness.LogDir(t))

	kubeadmnode.ClaimMachine(t)
	var ours *ourRelease
	if slices.Contains(variants, "ours") {
		ours = publishRelease(t)
	}
	c := startCluster(t, ours)
	c.work = t.TempDir() // e2e.test's HOME, TMPDIR and --repo-root, per phase
	logDir := harness.LogDir(t)
	// The report names the cluster's nodes (conformance-report -nodes).
	var names []string
	for _, node := range c.nodes {
		names = append(names, node.Name)
	}
	if err := os.WriteFile(filepath.Join(logDir, "nodes.txt"), []byte(strings.Join(names, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, variant := range variants {
		if variant == "ours" {
			c.swapIn(t, ours)
			c.swapKubelets(t, ours)
		}
		c.recordImages(t, variant, logDir, ours)
		start := time.Now()
		var phaseLogs []string
		for _, p := range phases {
			phaseLogs = append(phaseLogs, c.runPhase(t, ginkgo, e2e, variant, p, logDir))
			c.waitSettled(t)
		}
		t.Logf("RUN %s: %.1f min", variant, time.Since(start).Minutes())
		run, err := report.ReadRun(filepath.Join(logDir, "junit", variant))
		if err != nil {
			t.Fatal(err)
		}
		if err := report.WriteEvidence(filepath.Join(logDir, "evidence", variant), phaseLogs, tests, run); err != nil {
			t.Fatalf("%s: %v", variant, err)
		}
	}
	// Offline, a missing image fails its pull at once and the test that wanted it fails on its
	// own; this names the image.
	// What every kubelet the nodes ran tried to pull (ours replaced upstream's in the ours run).
	var pulling []string
	for _, node := range c.nodes {
		pulling = append(pulling, node.KubeletLogLines("Pulling image")...)
	}
	if pulls := unexpectedPulls(pulling, ours); len(pulls) > 0 {
		t.Errorf("PULL ATTEMPT: a kubelet tried to pull images the run does not have (make conformance-images builds each test's): %s",
			strings.Join(pulls, ", "))
	}
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

// conformanceTests is how many [Conformance] tests v1.17.3 has (its conformance.txt; make
// conformance-build holds e2e.test to that file).
const conformanceTests = 280

// writeTests writes <logDir>/tests.txt, the conformance tests the runs are to report on, one name
// per line, as e2e.test names them: all of them, or those focus matches. conformance-report holds
// each run to it.
func writeTests(t *testing.T, e2e string, focus *regexp.Regexp, logDir string) []string {
	all := dryRun(t, e2e, `\[Conformance\]`, "")
	if len(all) != conformanceTests {
		t.Fatalf("e2e.test has %d conformance tests, v1.17.3 has %d", len(all), conformanceTests)
	}
	var tests []string
	for name := range all {
		if focus == nil || focus.MatchString(name) {
			tests = append(tests, name)
		}
	}
	sort.Strings(tests)
	if err := os.WriteFile(filepath.Join(logDir, "tests.txt"), []byte(strings.Join(tests, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return tests
}

// narrow keeps in each phase only the tests focus matches, named one by one (ginkgo takes one
// focus regexp, and a spec's name is matched whole); a phase left empty is dropped.
func narrow(t *testing.T, e2e string, phases []Phase, focus *regexp.Regexp) []Phase {
	var kept []Phase
	for _, p := range phases {
		var names []string
		for name := range dryRun(t, e2e, p.Focus, p.Skip) {
			if focus.MatchString(name) {
				names = append(names, regexp.QuoteMeta(name))
			}
		}
		if len(names) == 0 {
			continue
		}
		sort.Strings(names)
		p.Focus, p.Skip = strings.Join(names, "|"), ""
		t.Logf("%s: %d tests match %s", p.Name, len(names), focus)
		kept = append(kept, p)
	}
	if len(kept) == 0 {
		t.Fatalf("%s=%q matches no conformance test", focusVar, focus)
	}
	return kept
}

// runPhase runs one ginkgo invocation of e2e.test from inside the node's namespace, its JUnit
// files in logDir/junit/<variant>/, and returns the path of its verbose log. Failed tests are the
// report's to judge; a phase that ginkgo did not finish (PhaseFailure) or that leaves no JUnit
// file fails the run.
func (c *cluster) runPhase(t *testing.T, ginkgo, e2e, variant string, p Phase, logDir string) string {
	junit := filepath.Join(logDir, "junit", variant)
	work := filepath.Join(c.work, variant+"-"+p.Name)
	for _, dir := range []string{junit, work, filepath.Join(work, "home"), filepath.Join(work, "tmp"), filepath.Join(work, "repo")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{fmt.Sprintf("-nodes=%d", p.Nodes), "-noColor", "-v", fmt.Sprintf("-timeout=%s", p.Timeout), e2e, "--",
		"--kubeconfig=" + c.node.Path("etc/kubernetes/admin.conf"), "--provider=skeleton", fmt.Sprintf("--num-nodes=%d", len(c.nodes)),
		"--kubectl-path=" + harness.Binary(t, "stock", "kubectl"), "--repo-root=" + filepath.Join(work, "repo"),
		"--disable-log-dump", "--system-pods-startup-timeout=5m",
		"--report-dir=" + junit, "--report-prefix=" + variant + "-" + p.Name + "-",
		"--ginkgo.seed=" + ginkgoSeed, "--ginkgo.slowSpecThreshold=120", "--ginkgo.focus=" + p.Focus}
	if p.Skip != "" {
		args = append(args, "--ginkgo.skip="+p.Skip)
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.Timeout+5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + c.ns.Path, "--", ginkgo}, args...)...)
	cmd.Dir = work
	// nsenter executes ginkgo in place: it dies with the test; what it started dies in the teardown,
	// or the next run's, with every other process in the node's namespace.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Env = append(os.Environ(), "HOME="+filepath.Join(work, "home"), "TMPDIR="+filepath.Join(work, "tmp"),
		"KUBECONFIG="+c.node.Path("etc/kubernetes/admin.conf"))
	log, err := os.Create(filepath.Join(logDir, variant+"-"+p.Name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	start := time.Now()
	runErr := cmd.Run()
	files, _ := filepath.Glob(filepath.Join(junit, "junit_"+variant+"-"+p.Name+"-*.xml"))
	var phaseErr, readErr error
	var phaseResults map[string]report.Case
	if len(files) > 0 {
		phaseResults, phaseErr = report.ReadFiles(junit, files)
	}
	run, readErr := report.ReadRun(junit)
	passed, failed := 0, 0
	for name, tc := range run {
		if !strings.Contains(name, "[Conformance]") {
			continue
		}
		switch tc.Result {
		case report.Passed:
			passed++
		case report.Failed:
			failed++
		}
	}
	t.Logf("PHASE %s %s: %.1f min, ginkgo %v; %s so far: %d passed, %d failed", variant, p.Name, time.Since(start).Minutes(), runErr, variant, passed, failed)
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s %s: ginkgo ran past %s (log %s)", variant, p.Name, p.Timeout, log.Name())
	case len(files) == 0 || readErr != nil || phaseErr != nil:
		t.Fatalf("%s %s: no usable JUnit file from ginkgo (%v, %v, %v; log %s)", variant, p.Name, runErr, readErr, phaseErr, log.Name())
	}
	output, err := os.ReadFile(log.Name())
	if err != nil {
		t.Fatal(err)
	}
	if why := PhaseFailure(runErr, string(output), phaseResults); why != "" {
		t.Fatalf("%s %s: %s (log %s)", variant, p.Name, why, log.Name())
	}
	return log.Name()
}

// waitSettled waits, after a phase, for the tests' namespaces to be gone and kube-system's pods
// to be ready again, so the next phase starts on the cluster as it was.
func (c *cluster) waitSettled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	kept := map[string]bool{"default": true, "kube-system": true, "kube-public": true, "kube-node-lease": true}
	err := kubeadmnode.WaitFor(ctx, 5*time.Second, func() (bool, error) {
		namespaces, err := c.client.CoreV1().Namespaces().List(metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, ns := range namespaces.Items {
			if !kept[ns.Name] {
				return false, fmt.Errorf("namespace %s is still there (%s)", ns.Name, ns.Status.Phase)
			}
		}
		pods, err := c.client.CoreV1().Pods("kube-system").List(metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, pod := range pods.Items {
			if !podReady(&pod) {
				return false, fmt.Errorf("kube-system pod %s is not ready", pod.Name)
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the cluster did not settle after a phase: %v", err)
	}
}

func podReady(pod *corev1.Pod) bool {
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// recordImages writes <variant>-images.txt in logDir, for the report to name: each control-plane
// component's image as the kubelet runs it, by ID; the release's, in ours, by their image for
// this machine's architecture, the digest the operator's release (RELEASE_DIR) shares; and each
// node's kubelet, by the sha256 of the binary its package installed.
func (c *cluster) recordImages(t *testing.T, variant, logDir string, ours *ourRelease) {
	var lines []string
	for _, component := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd"} {
		pod, err := c.client.CoreV1().Pods("kube-system").Get(component+"-"+c.node.Name, metav1.GetOptions{})
		if err != nil || len(pod.Status.ContainerStatuses) != 1 {
			t.Fatalf("%s's mirror pod: %v", component, err)
		}
		status := pod.Status.ContainerStatuses[0]
		if platform, ok := ours.platformImage(component); ok && variant == "ours" {
			// Pulled from the test's registry by the index digest of a release cut for it, which
			// names only this machine's architecture: its image is what the release has too.
			lines = append(lines, fmt.Sprintf("%s:%s(linux/%s) %s", component, filepath.Base(ours.dir), runtime.GOARCH, platform))
			continue
		}
		// docker://sha256:…, an image loaded by its ID
		id := status.ImageID[strings.LastIndexAny(status.ImageID, "/@")+1:]
		lines = append(lines, fmt.Sprintf("%s %s", status.Image, id))
	}
	// Each node's kubelet, by the sha256 of the binary it runs (the package's /usr/bin/kubelet).
	for _, node := range c.nodes {
		n, err := c.client.CoreV1().Nodes().Get(node.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		binary, err := os.ReadFile(node.Path("usr/bin/kubelet"))
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, fmt.Sprintf("kubelet:%s@%s sha256:%x", n.Status.NodeInfo.KubeletVersion, node.Name, sha256.Sum256(binary)))
	}
	if err := os.WriteFile(filepath.Join(logDir, variant+"-images.txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
