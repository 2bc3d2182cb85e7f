// Package diagnose is the differential suite of `cpswap diagnose` (pkg/diagnose): against a
// stock 1.17.3 kube-controller-manager and kube-scheduler under the seeds' conditions (headless
// Services, a resync in the window, a tight client rate, the upstream lock) it reports the
// incidents with the numbers the other suites measure; against the build under test it reports
// them gone, and measures the client's wait that stock hides; and it makes no write request,
// counted at the apiserver.
package diagnose

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/idc-lts/kube-1.17/pkg/diagnose"
	"github.com/idc-lts/kube-1.17/test/diagnoserun"
	"github.com/idc-lts/kube-1.17/test/fixture"
	"github.com/idc-lts/kube-1.17/test/harness"
)

const (
	namespace = "diagnose"
	// services: headless Services, enough that a resync's writes at kcmQPS wait longer than
	// the check's 30 s threshold ((100-3)/3 = 32 s), few enough to be created before the
	// first resync.
	services = 100
	kcmQPS   = "3"
	// The first resync comes 45-90 s after kube-controller-manager's endpoint controller starts
	// (its discovery at kcmQPS takes about 11 s after it leads), after the Endpoints are created
	// (about 35 s at kcmQPS); its writes take 33 s more, all inside a window that opens before
	// kube-controller-manager starts: 134 s at most, and 46 s to spare for a start slowed by a
	// loaded machine (CI runs these suites beside a kubelet's).
	minResync = "45s"
	window    = 180 * time.Second
	userAgent = "cpswap-diagnose-test"
)

func TestStockShowsEachIncident(t *testing.T) {
	t.Parallel()
	r, minRate := observe(t, "stock")
	le := r.Finding(diagnose.FindingLeaderElection)
	for _, c := range harness.SuiteComponents {
		// The leaderelection suite's bound: a renewal every 2 s, at least 25 a minute while the
		// components lead.
		if got := le.Figures[c+"_endpoints_writes_per_minute"]; got < minRate || got > 31 {
			t.Errorf("%s: %v Endpoints writes/min, want %.1f-31 (a renewal every 2 s)", c, got, minRate)
		}
	}
	rs := r.Finding(diagnose.FindingResyncRewrites)
	// The headless suite's bound: a resync rewrites at least 90 % of the headless Endpoints.
	if got := rs.Figures["metadata_only_rewrites"]; got < 0.9*services {
		t.Errorf("rewrites that changed no address: %v, want at least %v (one resync in the window)", got, 0.9*services)
	}
	if rs.Figures["writes_per_resync"] != services || rs.Figures["headless_services"] != services {
		t.Errorf("resync figures: %v, want %d headless Services and as many writes per resync", rs.Figures, services)
	}
	th := r.Finding(diagnose.FindingThrottling)
	if got := th.Figures["resync_pass_seconds"]; got < 30 {
		t.Errorf("a resync's wait at --kube-api-qps=%s: %v s, want (100-3)/3", kcmQPS, got)
	}
	if !evidenceSays(th, "has no rest_client_rate_limiter_duration_seconds") {
		t.Errorf("throttling evidence %q: want the stock metric named as missing", th.Evidence)
	}
	want := map[string]diagnose.Severity{
		diagnose.FindingLeaderElection: diagnose.Observed,
		diagnose.FindingResyncRewrites: diagnose.Observed,
		diagnose.FindingThrottling:     diagnose.Exposed,
		diagnose.FindingBackInTime:     diagnose.OK, // one apiserver, no load balancer: the reflector suite shows it
	}
	checkSeverities(t, r, want)
	if r.ExitCode() != diagnose.ExitObserved {
		t.Errorf("exit code %d, want %d", r.ExitCode(), diagnose.ExitObserved)
	}
}

func TestVariantShowsThemGone(t *testing.T) {
	t.Parallel()
	r, minRate := observe(t, harness.VariantUnderTest())
	le := r.Finding(diagnose.FindingLeaderElection)
	for _, c := range harness.SuiteComponents {
		if got := le.Figures[c+"_endpoints_writes_per_minute"]; got != 0 {
			t.Errorf("%s: %v Endpoints writes/min, want 0 (the leases lock)", c, got)
		}
		if got := le.Figures[c+"_lease_writes_per_minute"]; got < minRate {
			t.Errorf("%s: %v Lease writes/min, want a renewal every 2 s", c, got)
		}
	}
	rs := r.Finding(diagnose.FindingResyncRewrites)
	if rs.Figures["metadata_only_rewrites"] != 0 || rs.Figures["writes_per_resync"] != 0 {
		t.Errorf("resync figures: %v, want no rewrite and none due", rs.Figures)
	}
	// Ours exports the client's wait, so the check measures what stock hides: creating the 100
	// Endpoints at 3 writes/s makes requests wait over 1 s (observed), while a resync writes
	// nothing (no wait to expect from it).
	th := r.Finding(diagnose.FindingThrottling)
	if th.Figures["requests_waiting_over_1s"] < 1 || th.Figures["resync_pass_seconds"] != 0 || th.Severity != diagnose.Observed {
		t.Errorf("throttling: %v %v, want the creation's waits measured from the variant's metrics and a resync that waits for nothing: %q", th.Severity, th.Figures, th.Evidence)
	}
	checkSeverities(t, r, map[string]diagnose.Severity{
		diagnose.FindingLeaderElection: diagnose.OK,
		diagnose.FindingResyncRewrites: diagnose.OK,
		diagnose.FindingBackInTime:     diagnose.OK,
	})
	if c := r.Finding(diagnose.FindingComponents); c.Figures["ours"] != 2 {
		t.Errorf("components: %v ours, want kube-controller-manager and kube-scheduler (%s)", c.Figures["ours"], c.Seen)
	}
}

// observe starts the control plane of the seeds' conditions with the variant's components,
// describes them in kube-system as kubeadm's mirror pods would, and runs the check for the
// window. It fails if the check sent the apiserver anything but reads. It returns the report and
// the fewest lock writes a minute that a renewal every 2 s makes over the window: 25 a minute
// (the leaderelection suite's bound) for the part of the window in which both components ran.
func observe(t *testing.T, variant string) (*diagnose.Report, float64) {
	cp, auditLog := startControlPlane(t)
	fixture.CreateServices(t, cp.Client, namespace, 0, services, fixture.SingleSubset)
	kcmArgs := []string{"--controllers=endpoint", "--leader-elect=true", "--min-resync-period=" + minResync,
		"--kube-api-qps=" + kcmQPS, "--kube-api-burst=" + kcmQPS}
	schedulerArgs := []string{"--leader-elect=true"}
	mirror(t, cp, variant, harness.KubeControllerManager, kcmArgs)
	mirror(t, cp, variant, harness.KubeScheduler, schedulerArgs)
	metricsPort := harness.FreePort(t)

	// The window opens before kube-controller-manager starts, so that it holds the creation of
	// the Endpoints (adds, not rewrites), the first resync and all its writes, whenever the
	// resync period drawn falls.
	opened := time.Now()
	finish := diagnoserun.Start(t, cp, diagnose.Options{
		Window: window, QPS: diagnose.DefaultQPS, Burst: diagnose.DefaultBurst, UserAgent: userAgent,
		Metrics: map[string]string{harness.KubeControllerManager: fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)},
	})
	harness.StartComponent(t, cp, harness.ComponentOptions{Component: harness.KubeControllerManager, Variant: variant, Args: kcmArgs, Port: metricsPort})
	harness.StartComponent(t, cp, harness.ComponentOptions{Component: harness.KubeScheduler, Variant: variant, Args: schedulerArgs})
	running := window - time.Since(opened)
	if running < window/2 {
		t.Fatalf("%s's components took %v of the %v window to start: too few renewals left to judge", variant, (window - running).Round(time.Second), window)
	}
	r, err := finish(false)
	if err != nil {
		t.Fatalf("diagnose: %v", err)
	}
	var text strings.Builder
	_ = r.WriteText(&text)
	t.Logf("%s report:\n%s", variant, text.String())
	if r.Window < window {
		t.Errorf("window %v, want %v", r.Window, window)
	}
	checkReadOnly(t, auditLog, r.Requests)
	minRate := 25 * running.Seconds() / window.Seconds()
	t.Logf("%s: both components ran %.0f s of the %v window: at least %.1f lock writes/min", variant, running.Seconds(), window, minRate)
	return r, minRate
}

// mirror creates the pod kubeadm's static pod would show in kube-system: the component's
// labels, its command line, and an image tagged with the binary's own version.
func mirror(t *testing.T, cp *harness.ControlPlane, variant, component string, args []string) {
	t.Helper()
	out, err := exec.Command(harness.Binary(t, variant, component), "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", component, err)
	}
	version := strings.TrimPrefix(strings.TrimSpace(string(out)), "Kubernetes ")
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: component + "-master-1", Namespace: metav1.NamespaceSystem,
			Labels:      map[string]string{"component": component, "tier": "control-plane"},
			Annotations: map[string]string{"kubernetes.io/config.mirror": "test"}},
		Spec: v1.PodSpec{NodeName: "master-1", Containers: []v1.Container{{
			Name: component, Image: "registry.example.com/k8s/" + component + ":" + version,
			Command: append([]string{component}, args...),
		}}},
	}
	if _, err := cp.Client.CoreV1().Pods(metav1.NamespaceSystem).Create(pod); err != nil {
		t.Fatalf("mirror pod of %s: %v", component, err)
	}
}

// auditPolicy records every request's verb and user agent.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

// startControlPlane is harness.StartControlPlane with an audit log of every request.
func startControlPlane(t *testing.T) (*harness.ControlPlane, string) {
	dir := t.TempDir()
	policy, auditLog := filepath.Join(dir, "audit-policy.yaml"), filepath.Join(dir, "audit.log")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	return harness.StartControlPlane(t, "--audit-policy-file="+policy, "--audit-log-path="+auditLog, "--audit-log-format=json"), auditLog
}

// request is what an audit event says of one request.
type request struct {
	AuditID    string `json:"auditID"`
	Verb       string `json:"verb"`
	UserAgent  string `json:"userAgent"`
	RequestURI string `json:"requestURI"`
	ObjectRef  *struct {
		APIGroup  string `json:"apiGroup"`
		Resource  string `json:"resource"`
		Namespace string `json:"namespace"`
	} `json:"objectRef"`
}

// checkReadOnly reads the apiserver's audit log for the check's requests (by its user agent):
// reads only, as many as the report says, each allowed by the release's RBAC file.
func checkReadOnly(t *testing.T, auditLog string, reported int) {
	t.Helper()
	f, err := os.Open(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	requests := map[string]request{} // by audit ID: a watch has two events
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 1<<24)
	for scanner.Scan() {
		var e request
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			t.Fatalf("%s: %v", auditLog, err)
		}
		if strings.HasPrefix(e.UserAgent, userAgent) {
			requests[e.AuditID] = e
		}
	}
	if err := scanner.Err(); err != nil {
		t.Fatalf("%s: %v", auditLog, err)
	}
	byVerb := map[string]int{}
	for _, r := range requests {
		byVerb[r.Verb]++
		if r.Verb != "get" && r.Verb != "list" && r.Verb != "watch" {
			t.Errorf("the check wrote: %s %s", r.Verb, r.RequestURI)
		}
	}
	if len(requests) != reported {
		t.Errorf("the apiserver's audit log has %d requests of the check (%v), the report %d", len(requests), byVerb, reported)
	}
	t.Logf("the apiserver's audit log: %v from the check, no write (it reported %d requests)", byVerb, reported)
	checkRBAC(t, requests)
}

func evidenceSays(f *diagnose.Finding, s string) bool {
	for _, e := range f.Evidence {
		if strings.Contains(e, s) {
			return true
		}
	}
	return false
}

func checkSeverities(t *testing.T, r *diagnose.Report, want map[string]diagnose.Severity) {
	t.Helper()
	for id, sev := range want {
		f := r.Finding(id)
		if f == nil {
			t.Errorf("no finding %s", id)
			continue
		}
		if f.Severity != sev {
			t.Errorf("%s: %v, want %v (seen: %s; evidence: %q)", id, f.Severity, sev, f.Seen, f.Evidence)
		}
	}
}
