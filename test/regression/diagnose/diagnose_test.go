// Package diagnose is the differential suite of `cpswap diagnose` (pkg/diagnose): against a
// stock 1.17.3 kube-controller-manager and kube-scheduler under the seeds' conditions (headless
// Services, a resync in the window, a tight client rate, the upstream lock) it reports the
// incidents with the numbers the other suites measure; against the build under test it reports
// them gone; and it makes no write request, counted at the apiserver.
package diagnose

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/idc-lts/kube-1.17/pkg/diagnose"
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
	// The first resync comes 45-90 s after kube-controller-manager starts: after the
	// Endpoints are created (about 35 s at kcmQPS), and its writes (33 s) inside the window.
	minResync = "45s"
	window    = 95 * time.Second
	userAgent = "cpswap-diagnose-test"
)

func TestStockShowsEachIncident(t *testing.T) {
	t.Parallel()
	r := observe(t, "stock")
	le := r.Finding(diagnose.FindingLeaderElection)
	for _, c := range harness.SuiteComponents {
		// The leaderelection suite's bound: a renewal every 2 s, at least 25 a minute.
		if got := le.Figures[c+"_endpoints_writes_per_minute"]; got < 25 || got > 31 {
			t.Errorf("%s: %v Endpoints writes/min, want 25-31 (a renewal every 2 s)", c, got)
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
	r := observe(t, harness.VariantUnderTest())
	le := r.Finding(diagnose.FindingLeaderElection)
	for _, c := range harness.SuiteComponents {
		if got := le.Figures[c+"_endpoints_writes_per_minute"]; got != 0 {
			t.Errorf("%s: %v Endpoints writes/min, want 0 (the leases lock)", c, got)
		}
		if got := le.Figures[c+"_lease_writes_per_minute"]; got < 25 {
			t.Errorf("%s: %v Lease writes/min, want a renewal every 2 s", c, got)
		}
	}
	rs := r.Finding(diagnose.FindingResyncRewrites)
	if rs.Figures["metadata_only_rewrites"] != 0 || rs.Figures["writes_per_resync"] != 0 {
		t.Errorf("resync figures: %v, want no rewrite and none due", rs.Figures)
	}
	th := r.Finding(diagnose.FindingThrottling)
	if _, measured := th.Figures["rate_limiter_wait_seconds"]; !measured {
		t.Errorf("throttling: the wait not measured from the variant's metrics: %q", th.Evidence)
	}
	checkSeverities(t, r, map[string]diagnose.Severity{
		diagnose.FindingLeaderElection: diagnose.OK,
		diagnose.FindingResyncRewrites: diagnose.OK,
		diagnose.FindingThrottling:     diagnose.OK,
		diagnose.FindingBackInTime:     diagnose.OK,
	})
	if c := r.Finding(diagnose.FindingComponents); c.Figures["ours"] != 2 {
		t.Errorf("components: %v ours, want kube-controller-manager and kube-scheduler (%s)", c.Figures["ours"], c.Seen)
	}
}

// observe starts the control plane of the seeds' conditions with the variant's components,
// describes them in kube-system as kubeadm's mirror pods would, and runs the check for the
// window. It fails if the check sent the apiserver anything but reads.
func observe(t *testing.T, variant string) *diagnose.Report {
	cp, auditLog := startControlPlane(t)
	fixture.CreateServices(t, cp.Client, namespace, 0, services, fixture.SingleSubset)
	kcmArgs := []string{"--controllers=endpoint", "--leader-elect=true", "--min-resync-period=" + minResync,
		"--kube-api-qps=" + kcmQPS, "--kube-api-burst=" + kcmQPS}
	kcm := harness.StartComponent(t, cp, harness.ComponentOptions{Component: harness.KubeControllerManager, Variant: variant, Args: kcmArgs})
	schedulerArgs := []string{"--leader-elect=true"}
	harness.StartComponent(t, cp, harness.ComponentOptions{Component: harness.KubeScheduler, Variant: variant, Args: schedulerArgs})
	mirror(t, cp, variant, harness.KubeControllerManager, kcmArgs)
	mirror(t, cp, variant, harness.KubeScheduler, schedulerArgs)
	waitEndpoints(t, cp)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := diagnose.Run(ctx, cp.Config, diagnose.Options{
		Window: window, QPS: diagnose.DefaultQPS, Burst: diagnose.DefaultBurst, UserAgent: userAgent,
		Metrics: map[string]string{harness.KubeControllerManager: kcm.BaseURL + "/metrics"},
	})
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
	return r
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

// waitEndpoints waits until every fixture Service has its Endpoints.
func waitEndpoints(t *testing.T, cp *harness.ControlPlane) {
	t.Helper()
	err := wait.PollImmediate(time.Second, 2*time.Minute, func() (bool, error) {
		list, err := cp.Client.CoreV1().Endpoints(namespace).List(metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return len(list.Items) == services, nil
	})
	if err != nil {
		t.Fatalf("the fixture's Endpoints: %v", err)
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

// rbacFile is the release's RBAC for the check.
const rbacFile = "deploy/cpswap-diagnose.yaml"

// grant is one verb on one resource (or non-resource URL) a rule of rbacFile gives.
type grant struct{ namespace, group, resource, url, verb string }

// checkRBAC: every request the check made is allowed by rbacFile, and every grant in it was
// used: the file is what the check needs, no more.
func checkRBAC(t *testing.T, requests map[string]request) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(harness.RepoRoot(t), rbacFile))
	if err != nil {
		t.Fatal(err)
	}
	grants := map[grant]bool{}
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var kind struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &kind); err != nil {
			t.Fatalf("%s: %v", rbacFile, err)
		}
		var rules []rbacv1.PolicyRule
		namespace := ""
		switch kind.Kind {
		case "ClusterRole":
			var r rbacv1.ClusterRole
			if err := yaml.UnmarshalStrict([]byte(doc), &r); err != nil {
				t.Fatalf("%s: %v", rbacFile, err)
			}
			rules = r.Rules
		case "Role":
			var r rbacv1.Role
			if err := yaml.UnmarshalStrict([]byte(doc), &r); err != nil {
				t.Fatalf("%s: %v", rbacFile, err)
			}
			rules, namespace = r.Rules, r.Namespace
		}
		for _, rule := range rules {
			for _, verb := range rule.Verbs {
				for _, url := range rule.NonResourceURLs {
					grants[grant{url: url, verb: verb}] = false
				}
				for _, group := range rule.APIGroups {
					for _, resource := range rule.Resources {
						grants[grant{namespace: namespace, group: group, resource: resource, verb: verb}] = false
					}
				}
			}
		}
	}
	for _, r := range requests {
		// A ClusterRole's grant (namespace "") allows a request in any namespace; a Role's,
		// in its own.
		var candidates []grant
		if r.ObjectRef == nil {
			candidates = []grant{{url: strings.SplitN(r.RequestURI, "?", 2)[0], verb: r.Verb}}
		} else {
			g := grant{group: r.ObjectRef.APIGroup, resource: r.ObjectRef.Resource, verb: r.Verb}
			candidates = append(candidates, g)
			if r.ObjectRef.Namespace != "" {
				g.namespace = r.ObjectRef.Namespace
				candidates = append(candidates, g)
			}
		}
		allowed := false
		for _, g := range candidates {
			if _, ok := grants[g]; ok {
				grants[g], allowed = true, true
			}
		}
		if !allowed {
			t.Errorf("%s does not allow the check's %s %s", rbacFile, r.Verb, r.RequestURI)
		}
	}
	for g, used := range grants {
		if !used {
			t.Errorf("%s grants %+v, which the check never used", rbacFile, g)
		}
	}
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
