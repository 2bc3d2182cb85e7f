// Package headless is the regression suite for patch 0004 ("endpoints: stop rewriting unchanged
// Endpoints on every resync"): on the stock build a full informer resync rewrites every headless
// Service's Endpoints (and every multi-subset one against a stock 1.17 apiserver); on the build under
// test it writes none, while a deleted pod still leaves its Endpoints within seconds.
package headless

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/idc-lts/kube-1.17/test/fixture"
	"github.com/idc-lts/kube-1.17/test/harness"
)

const namespace = "headless"

// services is how many headless Services a run creates (HEADLESS_SERVICES overrides it).
func services(t *testing.T) int {
	if s := os.Getenv("HEADLESS_SERVICES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 2 {
			t.Fatalf("HEADLESS_SERVICES=%q: want a number >= 2", s)
		}
		return n
	}
	return 200
}

// cluster is a control plane with the fixture Services and a running endpoints controller whose
// Endpoints are all in place and whose queue is empty.
type cluster struct {
	cp       *harness.ControlPlane
	kcm      *harness.Component
	fixtures []fixture.ServiceFixture
}

func startCluster(t *testing.T, variant string) *cluster {
	cp := harness.StartControlPlane(t)
	n := services(t)
	start := time.Now()
	fixtures := fixture.CreateServices(t, cp.Client, namespace, 0, n)
	t.Logf("created %d headless Services and their pods in %v", n, time.Since(start).Round(time.Millisecond))

	kcm := harness.StartComponent(t, cp, harness.ComponentOptions{Variant: variant, Args: []string{
		"--controllers=endpoint",
		"--leader-elect=false",
		// Informer resyncs every 20-40 s instead of 12-24 h.
		"--min-resync-period=20s",
	}})
	c := &cluster{cp: cp, kcm: kcm, fixtures: fixtures}
	c.waitEndpointsComplete(t, 2*time.Minute)
	c.waitQueueIdle(t, time.Minute)
	return c
}

// waitEndpointsComplete waits until every Service's Endpoints hold all its pods.
func (c *cluster) waitEndpointsComplete(t *testing.T, timeout time.Duration) {
	t.Helper()
	var missing int
	err := wait.PollImmediate(500*time.Millisecond, timeout, func() (bool, error) {
		list, err := c.cp.Client.CoreV1().Endpoints(namespace).List(metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		byName := map[string]*v1.Endpoints{}
		for i := range list.Items {
			byName[list.Items[i].Name] = &list.Items[i]
		}
		missing = 0
		for _, f := range c.fixtures {
			ep, ok := byName[f.Name]
			wantReady, wantNotReady := f.WantAddresses()
			if !ok {
				missing++
				continue
			}
			if ready, notReady := fixture.CountAddresses(ep); ready != wantReady || notReady != wantNotReady {
				missing++
			}
		}
		return missing == 0, nil
	})
	if err != nil {
		t.Fatalf("%d of %d Endpoints incomplete after %v: %v", missing, len(c.fixtures), timeout, err)
	}
}

// waitQueueIdle waits until the endpoint controller's work queue has been empty for 2 s.
func (c *cluster) waitQueueIdle(t *testing.T, timeout time.Duration) {
	t.Helper()
	idleSince := time.Time{}
	err := wait.PollImmediate(250*time.Millisecond, timeout, func() (bool, error) {
		depth, err := c.kcm.Metric("workqueue_depth", harness.EndpointQueue)
		if err != nil {
			return false, err
		}
		if depth > 0 {
			idleSince = time.Time{}
			return false, nil
		}
		if idleSince.IsZero() {
			idleSince = time.Now()
		}
		return time.Since(idleSince) >= 2*time.Second, nil
	})
	if err != nil {
		t.Fatalf("endpoint queue not idle within %v: %v", timeout, err)
	}
}

// writesDuringResyncs watches the namespace's Endpoints until the controller has gone through
// `resyncs` full resyncs (its queue received that many rounds of every Service and drained) and
// returns how often each Endpoints object was written meanwhile.
func (c *cluster) writesDuringResyncs(t *testing.T, resyncs int, timeout time.Duration) map[string]int {
	t.Helper()
	list, err := c.cp.Client.CoreV1().Endpoints(namespace).List(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.cp.Client.CoreV1().Endpoints(namespace).Watch(metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	baseline, err := c.kcm.Metric("workqueue_adds_total", harness.EndpointQueue)
	if err != nil {
		t.Fatal(err)
	}

	writes := map[string]int{}
	want := baseline + float64(resyncs*len(c.fixtures))
	deadline := time.After(timeout)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	var doneAt time.Time
	for {
		select {
		case event, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("Endpoints watch closed")
			}
			if ep, isEndpoints := event.Object.(*v1.Endpoints); isEndpoints && event.Type != watch.Bookmark {
				writes[ep.Name]++
			}
		case <-tick.C:
			if !doneAt.IsZero() {
				// Writes issued by the last syncs reach the watch within moments.
				if time.Since(doneAt) > 3*time.Second {
					return writes
				}
				continue
			}
			adds, err1 := c.kcm.Metric("workqueue_adds_total", harness.EndpointQueue)
			depth, err2 := c.kcm.Metric("workqueue_depth", harness.EndpointQueue)
			if err1 != nil || err2 != nil {
				t.Fatalf("scraping the endpoint queue: %v %v", err1, err2)
			}
			if adds >= want && depth == 0 {
				t.Logf("%d full resync(s): endpoint queue adds %v -> %v", resyncs, baseline, adds)
				doneAt = time.Now()
			}
		case <-deadline:
			t.Fatalf("no %d full resync(s) within %v (queue adds from %v, want %v)", resyncs, timeout, baseline, want)
		}
	}
}

func (c *cluster) writtenByShape(writes map[string]int) map[fixture.Shape]int {
	written := map[fixture.Shape]int{}
	for _, f := range c.fixtures {
		if writes[f.Name] > 0 {
			written[f.Shape]++
		}
	}
	return written
}

func countShape(fixtures []fixture.ServiceFixture, shape fixture.Shape) int {
	n := 0
	for _, f := range fixtures {
		if f.Shape == shape {
			n++
		}
	}
	return n
}

// TestStockRewritesHeadlessEndpointsOnResync reproduces the bug: on the stock build, one resync
// rewrites (nearly) every headless Service's Endpoints although nothing changed.
func TestStockRewritesHeadlessEndpointsOnResync(t *testing.T) {
	c := startCluster(t, "stock")
	writes := c.writesDuringResyncs(t, 1, 3*time.Minute)
	written := c.writtenByShape(writes)
	total := written[fixture.SingleSubset] + written[fixture.MultiSubset]
	n := len(c.fixtures)
	t.Logf("stock: one resync rewrote %d of %d unchanged Endpoints (single-subset %d/%d, multi-subset %d/%d)",
		total, n, written[fixture.SingleSubset], countShape(c.fixtures, fixture.SingleSubset), written[fixture.MultiSubset], countShape(c.fixtures, fixture.MultiSubset))
	if float64(total) < 0.9*float64(n) {
		t.Errorf("bug not reproduced: one resync rewrote %d of %d Endpoints, want at least 90%%", total, n)
	}
}

// TestPatchedLeavesUnchangedEndpointsAlone checks the fix on the build under test: no Endpoints
// write across two full resyncs, for single- and multi-subset Endpoints, while a real change (a
// deleted pod) still reaches the Endpoints within seconds.
func TestPatchedLeavesUnchangedEndpointsAlone(t *testing.T) {
	variant := harness.VariantUnderTest()
	c := startCluster(t, variant)
	writes := c.writesDuringResyncs(t, 2, 4*time.Minute)
	written := c.writtenByShape(writes)
	t.Logf("%s: two resyncs rewrote single-subset %d/%d, multi-subset %d/%d Endpoints",
		variant, written[fixture.SingleSubset], countShape(c.fixtures, fixture.SingleSubset), written[fixture.MultiSubset], countShape(c.fixtures, fixture.MultiSubset))
	for _, shape := range []fixture.Shape{fixture.SingleSubset, fixture.MultiSubset} {
		if written[shape] != 0 {
			t.Errorf("%s: %d %s-subset Endpoints were rewritten by resyncs, want 0", variant, written[shape], shape)
		}
	}

	// A real change still propagates: delete one pod of each shape.
	for _, f := range c.fixtures[:2] {
		for pod, ip := range f.PodIPs {
			latency := c.deletePodAndWait(t, f.Name, pod, ip)
			t.Logf("%s: pod %s deleted -> address %s gone from Endpoints %s in %v", variant, pod, ip, f.Name, latency)
			if latency > 5*time.Second {
				t.Errorf("deleting pod %s took %v to reach its Endpoints, want under 5s", pod, latency)
			}
			break
		}
	}
}

// deletePodAndWait deletes a pod and returns how long until its IP left the Service's Endpoints.
func (c *cluster) deletePodAndWait(t *testing.T, service, pod, ip string) time.Duration {
	t.Helper()
	endpoints := c.cp.Client.CoreV1().Endpoints(namespace)
	current, err := endpoints.Get(service, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := endpoints.Watch(metav1.ListOptions{
		FieldSelector:   fmt.Sprintf("metadata.name=%s", service),
		ResourceVersion: current.ResourceVersion,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	start := time.Now()
	if err := c.cp.Client.CoreV1().Pods(namespace).Delete(pod, &metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(30 * time.Second)
	for {
		select {
		case event := <-w.ResultChan():
			if ep, ok := event.Object.(*v1.Endpoints); ok && !fixture.HasIP(ep, ip) {
				return time.Since(start)
			}
		case <-timeout:
			t.Fatalf("address %s of deleted pod %s still in Endpoints %s after 30s", ip, pod, service)
		}
	}
}
