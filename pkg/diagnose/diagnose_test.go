package diagnose

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

func staticPod(component, node, image string, args ...string) v1.Pod {
	return v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: component + "-" + node, Namespace: "kube-system",
			Labels: map[string]string{"component": component, "tier": "control-plane"}},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{
			Name: component, Image: image, Command: append([]string{component}, args...),
		}}},
		Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{
			Name: component, ImageID: "docker-pullable://" + image + "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))}},
		}}},
	}
}

const (
	stockKCM   = "k8s.gcr.io/kube-controller-manager:v1.17.3"
	ourKCM     = "registry.example.com/k8s/kube-controller-manager:v1.17.3-idc.1"
	stockSched = "k8s.gcr.io/kube-scheduler:v1.17.3"
	ourSched   = "registry.example.com/k8s/kube-scheduler:v1.17.3-idc.1"
)

func TestInstancesReadTheStaticPods(t *testing.T) {
	got := instances([]v1.Pod{
		staticPod("kube-scheduler", "m1", ourSched),
		staticPod("kube-controller-manager", "m2", stockKCM, "--kube-api-qps", "100", "--leader-elect-resource-lock=leases", "--kube-api-qps=50"),
		staticPod("etcd", "m1", "k8s.gcr.io/etcd:3.4.3-0"),
		{ObjectMeta: metav1.ObjectMeta{Name: "unlabelled"}},
	})
	if len(got) != 2 {
		t.Fatalf("instances: %d, want 2 (etcd and the unlabelled pod skipped): %+v", len(got), got)
	}
	if v := instances([]v1.Pod{staticPod("kube-scheduler", "m1", "r/kube-scheduler:v1.17.3-idc.1-without-0005")}); !v[0].Ours {
		t.Errorf("a build without a patch (the tests' variants) reads as upstream's: %+v", v[0])
	}
	kcm, sched := got[0], got[1]
	if kcm.Component != "kube-controller-manager" || kcm.Ours || kcm.Version != "v1.17.3" || kcm.Node != "m2" {
		t.Errorf("kube-controller-manager instance: %+v", kcm)
	}
	if kcm.Flags["--kube-api-qps"] != "50" || kcm.Flags["--leader-elect-resource-lock"] != "leases" {
		t.Errorf("flags read as the component reads them (last wins): %v", kcm.Flags)
	}
	if !sched.Ours || sched.Version != "v1.17.3-idc.1" || sched.Started.IsZero() || !strings.Contains(sched.ImageID, "sha256:") {
		t.Errorf("kube-scheduler instance: %+v", sched)
	}
}

func TestFindings(t *testing.T) {
	stock := instances([]v1.Pod{
		staticPod("kube-apiserver", "m1", "k8s.gcr.io/kube-apiserver:v1.17.3"),
		staticPod("kube-controller-manager", "m1", stockKCM),
		staticPod("kube-scheduler", "m1", stockSched),
	})
	ours := instances([]v1.Pod{
		staticPod("kube-apiserver", "m1", "registry.example.com/k8s/kube-apiserver:v1.17.3-idc.1"),
		staticPod("kube-controller-manager", "m1", ourKCM),
		staticPod("kube-scheduler", "m1", ourSched),
	})
	quiet := counts{lockWrites: map[string]int{}, leaseWrites: map[string]int{}, rewrites: map[string]int{}, rewroteMeta: map[string]int{}}
	churning := counts{
		lockWrites:  map[string]int{"kube-system/kube-controller-manager": 60, "kube-system/kube-scheduler": 58, "app/elector": 30},
		leaseWrites: map[string]int{"kube-controller-manager": 60},
		rewrites:    map[string]int{"a/svc-1": 1, "a/svc-2": 1},
		rewroteMeta: map[string]int{"annotation endpoints.kubernetes.io/last-change-trigger-time removed": 2},
	}
	live := []deletion{{key: "a/svc-3", at: time.Unix(0, 0), serviceUID: "u", back: 3 * time.Second}}
	metricsURL := map[string]string{"kube-controller-manager": "http://127.0.0.1:10252/metrics"}
	waited := map[string]scrape{"kube-controller-manager": {rateLimiter: &histogram{count: 10, sum: 2, upToOneSecond: 9}}}
	before := map[string]scrape{"kube-controller-manager": {rateLimiter: &histogram{count: 4, sum: 0.5, upToOneSecond: 4}}}
	stockMetrics := map[string]scrape{"kube-controller-manager": {}}

	for _, tc := range []struct {
		name string
		in   inputs
		want map[string]Severity
		// figures: finding ID -> figure -> value
		figures map[string]map[string]float64
		seen    map[string]string
	}{{
		name: "stock, quiet, one apiserver, 1,000 headless Services",
		in:   inputs{window: 2 * time.Minute, instances: stock, counts: quiet, services: serviceCounts{1200, 1000}, apiservers: 1},
		want: map[string]Severity{FindingLeaderElection: Exposed, FindingResyncRewrites: Exposed, FindingThrottling: Exposed, FindingBackInTime: OK, FindingComponents: OK},
		figures: map[string]map[string]float64{
			FindingResyncRewrites: {"writes_per_resync": 1000, "headless_services": 1000},
			FindingThrottling:     {"resync_pass_seconds": 48.5}, // (1000-30)/20
		},
	}, {
		name: "stock, churning, three apiservers, a live Service's Endpoints deleted, the wait measured",
		in: inputs{window: 2 * time.Minute, instances: stock, counts: churning, services: serviceCounts{10, 10}, apiservers: 3,
			liveDeletions: live, metricsURLs: metricsURL, metricsBefore: before, metricsAfter: waited},
		want: map[string]Severity{FindingLeaderElection: Observed, FindingResyncRewrites: Observed, FindingThrottling: Observed, FindingBackInTime: Observed},
		figures: map[string]map[string]float64{
			FindingLeaderElection: {"kube-controller-manager_endpoints_writes_per_minute": 30, "kube-scheduler_endpoints_writes_per_minute": 29, "other_endpoints_lock_writes_per_minute": 15},
			FindingResyncRewrites: {"metadata_only_rewrites": 2, "metadata_only_rewrites_per_minute": 1},
			FindingThrottling:     {"rate_limiter_wait_seconds": 1.5, "rate_limited_requests": 6, "requests_waiting_over_1s": 1},
			FindingBackInTime:     {"live_endpoints_deleted": 1, "apiservers": 3},
		},
		seen: map[string]string{FindingBackInTime: "1 Endpoints of live Services deleted"},
	}, {
		name: "stock, three apiservers, nothing seen: exposed",
		in:   inputs{window: time.Minute, instances: stock, counts: quiet, apiservers: 3, metricsURLs: metricsURL, metricsBefore: stockMetrics, metricsAfter: stockMetrics},
		want: map[string]Severity{FindingBackInTime: Exposed, FindingThrottling: OK, FindingResyncRewrites: OK},
		seen: map[string]string{},
	}, {
		name: "ours, quiet, three apiservers, 1,000 headless Services",
		in: inputs{window: 2 * time.Minute, instances: ours, counts: quiet, services: serviceCounts{1000, 1000}, apiservers: 3,
			metricsURLs: metricsURL, metricsBefore: before, metricsAfter: before},
		want: map[string]Severity{FindingLeaderElection: OK, FindingResyncRewrites: OK, FindingThrottling: OK, FindingBackInTime: OK, FindingComponents: OK},
		figures: map[string]map[string]float64{
			FindingResyncRewrites: {"writes_per_resync": 0},
			FindingThrottling:     {"resync_pass_seconds": 0, "rate_limiter_wait_seconds": 0},
			FindingComponents:     {"ours": 3, "instances": 3},
		},
	}, {
		name: "no static pods (not kubeadm): upstream assumed, exposed",
		in:   inputs{window: time.Minute, counts: quiet, services: serviceCounts{1000, 1000}, apiservers: 3},
		want: map[string]Severity{FindingLeaderElection: Exposed, FindingResyncRewrites: Exposed, FindingThrottling: Exposed, FindingBackInTime: Exposed},
		seen: map[string]string{FindingComponents: "the findings assume upstream's"},
	}, {
		name: "stock with --kube-api-qps=0 --kube-api-burst=0 (client-go's 5/10) and its counters restarted during the window",
		in: inputs{window: time.Minute, counts: quiet, services: serviceCounts{200, 200}, apiservers: 1,
			instances:   instances([]v1.Pod{staticPod("kube-controller-manager", "m1", stockKCM, "--kube-api-qps=0", "--kube-api-burst=0")}),
			metricsURLs: metricsURL, metricsBefore: waited, metricsAfter: before},
		want:    map[string]Severity{FindingThrottling: Exposed},
		figures: map[string]map[string]float64{FindingThrottling: {"resync_pass_seconds": 38}}, // (200-10)/5
		seen:    map[string]string{},
	}, {
		name: "ours, many short waits summing over a second: none over 1 s, ok",
		in: inputs{window: time.Minute, instances: ours, counts: quiet, metricsURLs: metricsURL,
			metricsBefore: map[string]scrape{"kube-controller-manager": {rateLimiter: &histogram{}}},
			metricsAfter:  map[string]scrape{"kube-controller-manager": {rateLimiter: &histogram{count: 200, sum: 2, upToOneSecond: 200}}}},
		want:    map[string]Severity{FindingThrottling: OK},
		figures: map[string]map[string]float64{FindingThrottling: {"requests_waiting_over_1s": 0, "rate_limiter_wait_seconds": 2}},
	}, {
		name: "ours with the endpoints lock set by hand: exposed",
		in: inputs{window: time.Minute, instances: instances([]v1.Pod{
			staticPod("kube-controller-manager", "m1", ourKCM, "--leader-elect-resource-lock=endpoints"),
			staticPod("kube-scheduler", "m1", ourSched, "--leader-elect=false", "--leader-elect-resource-lock=endpoints"),
		}), counts: quiet},
		want: map[string]Severity{FindingLeaderElection: Exposed},
		seen: map[string]string{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{Findings: findings(tc.in)}
			for id, want := range tc.want {
				f := r.Finding(id)
				if f == nil {
					t.Fatalf("no finding %s", id)
				}
				if f.Severity != want {
					t.Errorf("%s: %v, want %v (seen: %s; evidence: %q)", id, f.Severity, want, f.Seen, f.Evidence)
				}
				if f.Meaning == "" || f.Seen == "" {
					t.Errorf("%s: says nothing: %+v", id, f)
				}
			}
			for id, figures := range tc.figures {
				for name, want := range figures {
					if got := r.Finding(id).Figures[name]; got != want {
						t.Errorf("%s figure %s: %v, want %v", id, name, got, want)
					}
				}
			}
			for id, want := range tc.seen {
				if !strings.Contains(r.Finding(id).Seen, want) {
					t.Errorf("%s: seen %q, want it to say %q", id, r.Finding(id).Seen, want)
				}
			}
		})
	}
}

func TestObserverClassifiesEndpointsUpdates(t *testing.T) {
	clock := time.Unix(0, 0)
	o := newObserver(func() time.Time { clock = clock.Add(time.Second); return clock })
	svcs := cache.NewStore(cache.MetaNamespaceKeyFunc)
	o.services = svcs
	selector := map[string]string{"app": "live"}
	for _, svc := range []*v1.Service{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "live", UID: "u1"}, Spec: v1.ServiceSpec{Selector: selector}},
		// An application's own Endpoints: no selector, not the endpoint controller's.
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "own", UID: "u3"}},
	} {
		if err := svcs.Add(svc); err != nil {
			t.Fatal(err)
		}
	}
	ep := func(ns, name, rv string, ip string, annotations map[string]string) *v1.Endpoints {
		e := &v1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv, Annotations: annotations}}
		if ip != "" {
			e.Subsets = []v1.EndpointSubset{{Addresses: []v1.EndpointAddress{{IP: ip}}}}
		}
		return e
	}
	trigger := map[string]string{"endpoints.kubernetes.io/last-change-trigger-time": "2026-11-28T00:00:00Z"}
	lock := map[string]string{leaderAnnotation: `{"holderIdentity":"m1"}`}

	// Before the window: not counted.
	o.endpointsUpdated(ep("a", "live", "1", "10.0.0.1", trigger), ep("a", "live", "2", "10.0.0.1", nil))
	o.endpointsDeleted(ep("a", "live", "2", "10.0.0.1", nil))
	o.setWatching(true)
	o.endpointsUpdated(ep("a", "live", "2", "10.0.0.1", trigger), ep("a", "live", "2", "10.0.0.1", trigger)) // a relist: same version
	o.endpointsUpdated(ep("a", "live", "2", "10.0.0.1", trigger), ep("a", "live", "3", "10.0.0.1", nil))     // rewrite
	o.endpointsUpdated(ep("a", "live", "3", "10.0.0.1", nil), ep("a", "live", "4", "10.0.0.2", nil))         // change
	o.endpointsUpdated(ep("kube-system", "kube-scheduler", "5", "", lock), ep("kube-system", "kube-scheduler", "6", "", lock))
	o.endpointsUpdated(ep("a", "own", "10", "10.0.0.9", nil), ep("a", "own", "11", "10.0.0.9", map[string]string{"patroni": "x"})) // not a resync's
	o.endpointsUpdated(ep("a", "live", "4", "10.0.0.2", nil), ep("a", "live", "12", "10.0.0.2", map[string]string{"helm": "v2"}))  // nor this
	o.endpointsDeleted(ep("a", "own", "13", "10.0.0.9", nil))                                                                      // selectorless: not a trace
	o.endpointsDeleted(cache.DeletedFinalStateUnknown{Key: "a/live", Obj: ep("a", "live", "4", "10.0.0.2", nil)})
	o.endpointsDeleted(ep("a", "gone", "7", "10.0.0.3", nil)) // no Service of that name
	o.endpointsAdded(ep("a", "live", "8", "10.0.0.2", nil))
	o.setWatching(false)

	c := o.counts()
	if c.rewrites["a/live"] != 1 || c.changes != 1 || c.lockWrites["kube-system/kube-scheduler"] != 1 || c.otherMetadata != 2 {
		t.Errorf("counts: %+v", c)
	}
	if c.rewroteMeta["annotation endpoints.kubernetes.io/last-change-trigger-time removed"] != 1 {
		t.Errorf("what the rewrite changed: %v", c.rewroteMeta)
	}
	live := o.liveDeletions()
	if len(live) != 1 || live[0].key != "a/live" || live[0].back <= 0 {
		t.Errorf("live deletions: %+v, want a/live once", live)
	}
	// The Service deleted and re-created under its name: not the same Service, not a trace.
	if err := svcs.Update(&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "live", UID: "u2"}}); err != nil {
		t.Fatal(err)
	}
	if live := o.liveDeletions(); len(live) != 0 {
		t.Errorf("a re-created Service's old Endpoints counted as live: %+v", live)
	}
}

// TestRunWritesNothing: every request Run makes is a GET, counted in the report, and a write
// through its client is refused before it leaves the process.
func TestRunWritesNothing(t *testing.T) {
	var mu sync.Mutex
	var methods []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		methods = append(methods, r.Method)
		mu.Unlock()
		http.Error(w, "not here", http.StatusForbidden)
	}))
	defer srv.Close()
	counter := &requestCounter{}
	cfg := readOnlyConfig(&rest.Config{Host: srv.URL}, Options{QPS: 5, Burst: 5}, counter)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.CoreV1().ConfigMaps("default").Create(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}})
	if err == nil || !strings.Contains(err.Error(), "read-only: refusing POST") {
		t.Errorf("a create through the check's client: %v, want it refused", err)
	}
	_, _ = client.CoreV1().ConfigMaps("default").Get("x", metav1.GetOptions{})
	mu.Lock()
	if len(methods) != 1 || methods[0] != http.MethodGet || counter.total() != 1 {
		t.Errorf("requests that reached the server: %v (counted %d), want one GET", methods, counter.total())
	}
	mu.Unlock()

	_, err = Run(t.Context(), &rest.Config{Host: srv.URL}, Options{Window: time.Second, QPS: 5, Burst: 5})
	if err == nil || !strings.Contains(err.Error(), "list the control plane's static pods in kube-system") {
		t.Errorf("Run against an apiserver that refuses: %v, want the pod list named", err)
	}
}

func TestReportRendersEveryFinding(t *testing.T) {
	r := &Report{Server: "https://10.0.0.1:6443", Window: time.Minute, QPS: 5, Requests: 9,
		Instances: instances([]v1.Pod{staticPod("kube-controller-manager", "m1", stockKCM)}),
		Findings: findings(inputs{window: time.Minute, instances: instances([]v1.Pod{staticPod("kube-controller-manager", "m1", stockKCM)}),
			counts:   counts{lockWrites: map[string]int{"kube-system/kube-controller-manager": 30}, leaseWrites: map[string]int{}, rewrites: map[string]int{}, rewroteMeta: map[string]int{}},
			services: serviceCounts{100, 100}})}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kube-controller-manager  m1", "sha256:0123456789ab", "leader-election-endpoints  OBSERVED", "30.0 writes/min", "[EXPOSED] resyncs rewriting", "fix:"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Findings []struct {
			ID       string `json:"id"`
			Severity string `json:"severity"`
		} `json:"findings"`
		Requests int `json:"requests"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Findings) != 5 || back.Findings[0].Severity != "observed" || back.Requests != 9 {
		t.Errorf("JSON report: %v %+v\n%s", err, back, js.String())
	}
	if r.ExitCode() != ExitObserved {
		t.Errorf("exit code %d, want %d", r.ExitCode(), ExitObserved)
	}
}
