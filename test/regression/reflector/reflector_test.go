package reflector

import (
	"io"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/idc-lts/kube-1.17/pkg/diagnose"
	"github.com/idc-lts/kube-1.17/test/diagnoserun"
	"github.com/idc-lts/kube-1.17/test/harness"
)

const namespace = "rv"

// endpointsDeletions records the Endpoints DELETED events the apiserver sends.
type endpointsDeletions struct {
	mu    sync.Mutex
	names []string
}

func watchEndpointsDeletions(t *testing.T, client kubernetes.Interface) *endpointsDeletions {
	w, err := client.CoreV1().Endpoints(namespace).Watch(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	d := &endpointsDeletions{}
	go func() {
		for e := range w.ResultChan() {
			if ep, ok := e.Object.(*v1.Endpoints); ok && e.Type == watch.Deleted {
				d.mu.Lock()
				d.names = append(d.names, ep.Name)
				d.mu.Unlock()
			}
		}
	}()
	return d
}

// ofLiveServices returns the deleted Endpoints whose Service exists.
func (d *endpointsDeletions) ofLiveServices(t *testing.T, client kubernetes.Interface) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var live []string
	for _, name := range d.names {
		_, err := client.CoreV1().Services(namespace).Get(name, metav1.GetOptions{})
		if err == nil {
			live = append(live, name)
		} else if !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	return live
}

func createService(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	_, err := client.CoreV1().Services(namespace).Create(&v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.ServiceSpec{
			ClusterIP: v1.ClusterIPNone,
			Selector:  map[string]string{"app": name},
			Ports:     []v1.ServicePort{{Name: "web", Port: 80}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func deleteService(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	if err := client.CoreV1().Services(namespace).Delete(name, &metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitEndpoints waits until the Endpoints of a Service exist (want) or are gone (!want).
func waitEndpoints(t *testing.T, client kubernetes.Interface, name string, want bool) {
	t.Helper()
	err := wait.PollImmediate(100*time.Millisecond, 30*time.Second, func() (bool, error) {
		_, err := client.CoreV1().Endpoints(namespace).Get(name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return !want, nil
		}
		return want && err == nil, err
	})
	if err != nil {
		t.Fatalf("Endpoints %s exist=%v not reached: %v", name, want, err)
	}
}

// checkAllEndpoints requires every Service in the namespace to have its Endpoints.
func checkAllEndpoints(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	services, err := client.CoreV1().Services(namespace).List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range services.Items {
		waitEndpoints(t, client, s.Name, true)
	}
}

type run struct {
	cp     *harness.ControlPlane
	proxy  *faultProxy
	kcm    *harness.Component
	client kubernetes.Interface
}

// start runs kube-controller-manager (endpoints controller) through the fault proxy, with
// Services old-1, old-2 and flap and their Endpoints in place.
func start(t *testing.T, variant string) *run {
	cp := harness.StartControlPlane(t)
	client := cp.Client
	if _, err := client.CoreV1().Namespaces().Create(&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"old-1", "old-2", "flap"} {
		createService(t, client, name)
	}
	proxy := newFaultProxy(t, cp.URL)
	throughProxy := *cp
	throughProxy.Kubeconfig = harness.WriteKubeconfig(t, proxy.URL())
	kcm := harness.StartComponent(t, &throughProxy, harness.ComponentOptions{Variant: variant, Args: []string{
		"--controllers=endpoint", "--leader-elect=false", "--kube-api-content-type=application/json"}})
	for _, name := range []string{"old-1", "old-2", "flap"} {
		waitEndpoints(t, client, name, true)
	}
	return &run{cp: cp, proxy: proxy, kcm: kcm, client: client}
}

// watchPath replays the incident: a Service is deleted and re-created, then an old Service is
// deleted and its DELETED event carries its previous resourceVersion; the watch ends there. It
// returns the Endpoints of live Services that were deleted afterwards.
func (r *run) watchPath(t *testing.T) []string {
	deleteService(t, r.client, "flap")
	waitEndpoints(t, r.client, "flap", false)
	createService(t, r.client, "flap")
	waitEndpoints(t, r.client, "flap", true)

	deletions := watchEndpointsDeletions(t, r.client)
	sent := r.proxy.rewriteNextDelete(namespace, "old-1")
	deleteService(t, r.client, "old-1")
	select {
	case <-sent:
	case <-time.After(30 * time.Second):
		t.Fatal("the proxy never saw the DELETED event of old-1")
	}
	// The reflector re-watches within moments; give the replay (slowed down by the proxy after
	// each DELETED event) time to reach Endpoints.
	time.Sleep(8 * time.Second)
	_, watches := r.proxy.requests()
	t.Logf("Services watches asked for resourceVersions %v", watches)
	return deletions.ofLiveServices(t, r.client)
}

// relistPath replays a lagging apiserver cache: Services lists at resourceVersion "0" get an
// answer from before Service "late" existed, and a 410 forces a relist. It returns the Endpoints
// of live Services that were deleted afterwards.
func (r *run) relistPath(t *testing.T) []string {
	resp, err := http.Get(r.cp.URL + servicesPath)
	if err != nil {
		t.Fatal(err)
	}
	snapshot, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	createService(t, r.client, "late")
	waitEndpoints(t, r.client, "late", true)

	deletions := watchEndpointsDeletions(t, r.client)
	r.proxy.serveStaleZeroLists(snapshot)
	listsBefore, _ := r.proxy.requests()
	r.proxy.expireServicesWatches()
	err = wait.PollImmediate(100*time.Millisecond, 30*time.Second, func() (bool, error) {
		lists, _ := r.proxy.requests()
		return len(lists) > len(listsBefore), nil
	})
	if err != nil {
		t.Fatal("kube-controller-manager did not relist Services after the 410")
	}
	time.Sleep(5 * time.Second)
	lists, _ := r.proxy.requests()
	t.Logf("Services lists asked for resourceVersions %q", lists)
	return deletions.ofLiveServices(t, r.client)
}

// diagnoseBeside runs cpswap diagnose's observation (pkg/diagnose) while both paths run; the
// returned function ends its window and checks that it counted the Endpoints of live Services
// deleted as the suite did.
func diagnoseBeside(t *testing.T, cp *harness.ControlPlane) func(suiteCounted int) {
	finish := diagnoserun.Start(t, cp, diagnose.Options{Window: 10 * time.Minute, QPS: diagnose.DefaultQPS, Burst: diagnose.DefaultBurst})
	return func(suiteCounted int) {
		report, err := finish(true)
		if err != nil {
			t.Fatalf("cpswap diagnose: %v", err)
		}
		f := report.Finding(diagnose.FindingBackInTime)
		t.Logf("cpswap diagnose beside the paths: %s: %s %q", f.Severity, f.Seen, f.Evidence)
		if got := int(f.Figures["live_endpoints_deleted"]); got != suiteCounted {
			t.Errorf("cpswap diagnose counted %d Endpoints of live Services deleted, the suite %d", got, suiteCounted)
		}
		if want := map[bool]diagnose.Severity{true: diagnose.Observed, false: diagnose.OK}[suiteCounted > 0]; f.Severity != want {
			t.Errorf("cpswap diagnose's %s: %v, want %v", f.ID, f.Severity, want)
		}
	}
}

// TestStockGoesBackInTime reproduces both failures on the stock build.
func TestStockGoesBackInTime(t *testing.T) {
	r := start(t, "stock")
	diagnosed := diagnoseBeside(t, r.cp)
	watchLive := r.watchPath(t)
	if len(watchLive) == 0 {
		t.Error("watch path: bug not reproduced: no Endpoints of a live Service deleted")
	} else {
		sort.Strings(watchLive)
		t.Logf("stock, watch path: Endpoints of live Services deleted: %v", watchLive)
	}
	relistLive := r.relistPath(t)
	if len(relistLive) == 0 {
		t.Error("relist path: bug not reproduced: no Endpoints of a live Service deleted")
	} else {
		t.Logf("stock, relist path: Endpoints of live Services deleted: %v", relistLive)
	}
	diagnosed(len(watchLive) + len(relistLive))
}

// TestPatchedNeverGoesBackInTime checks the fix: on neither path are a live Service's Endpoints
// deleted, and at the end every Service has its Endpoints.
func TestPatchedNeverGoesBackInTime(t *testing.T) {
	variant := harness.VariantUnderTest()
	r := start(t, variant)
	diagnosed := diagnoseBeside(t, r.cp)
	watchLive := r.watchPath(t)
	if len(watchLive) != 0 {
		t.Errorf("%s, watch path: Endpoints of live Services deleted: %v, want none", variant, watchLive)
	}
	relistLive := r.relistPath(t)
	if len(relistLive) != 0 {
		t.Errorf("%s, relist path: Endpoints of live Services deleted: %v, want none", variant, relistLive)
	}
	checkAllEndpoints(t, r.client)
	diagnosed(len(watchLive) + len(relistLive))
	if n := r.kcm.CountLogLines("not resuming from it"); n == 0 {
		t.Errorf("%s: no V(2) log of the ignored resourceVersion", variant)
	}
}
