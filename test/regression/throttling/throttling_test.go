// Package throttling is the regression suite for invisible client-side throttling (patch
// "client-go: export client-side throttling as rest_client_rate_limiter_duration_seconds").
package throttling

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/idc-lts/kube-1.17/test/fixture"
	"github.com/idc-lts/kube-1.17/test/harness"
)

const (
	metric    = "rest_client_rate_limiter_duration_seconds"
	namespace = "throttled"
	// A deliberately low limit, so that the endpoints controller's writes queue in the limiter.
	qps = "2"
)

// throttledCluster runs the endpoints controller of a variant at --kube-api-qps=2 with n headless
// Services to write Endpoints for.
func throttledCluster(t *testing.T, variant string, n int) (*harness.ControlPlane, *harness.Component) {
	cp := harness.StartControlPlane(t)
	fixture.CreateServices(t, cp.Client, namespace, 0, n)
	kcm := harness.StartComponent(t, cp, harness.ComponentOptions{Variant: variant, Args: []string{
		"--controllers=endpoint", "--leader-elect=false",
		"--kube-api-qps=" + qps, "--kube-api-burst=" + qps}})
	return cp, kcm
}

func waitEndpoints(t *testing.T, cp *harness.ControlPlane, n int) {
	t.Helper()
	err := wait.PollImmediate(500*time.Millisecond, 2*time.Minute, func() (bool, error) {
		list, err := cp.Client.CoreV1().Endpoints(namespace).List(metav1.ListOptions{})
		return err == nil && len(list.Items) >= n, err
	})
	if err != nil {
		t.Fatalf("%d Endpoints not written within 2 minutes: %v", n, err)
	}
}

// rateLimiterWaits returns the histogram's count and sum over all series.
func rateLimiterWaits(t *testing.T, kcm *harness.Component) (count, sum float64) {
	t.Helper()
	count, err := kcm.Metric(metric, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum, err = kcm.Metric(metric+"_sum", nil)
	if err != nil {
		t.Fatal(err)
	}
	return count, sum
}

// TestStockHasNoRateLimiterMetric shows the gap: the stock build exports no such metric while it
// throttles.
func TestStockHasNoRateLimiterMetric(t *testing.T) {
	cp, kcm := throttledCluster(t, "stock", 20)
	waitEndpoints(t, cp, 20)
	if _, err := kcm.Metric(metric, nil); err == nil || !strings.Contains(err.Error(), "has no metric") {
		t.Errorf("stock /metrics: %s lookup gave %v, want it absent", metric, err)
	} else {
		t.Logf("stock: %s absent from /metrics while throttled at qps %s", metric, qps)
	}
}

// TestPatchedExportsRateLimiterLatency checks the fix: the histogram is on /metrics and its count
// and sum grow with a burst of work.
func TestPatchedExportsRateLimiterLatency(t *testing.T) {
	variant := harness.VariantUnderTest()
	cp, kcm := throttledCluster(t, variant, 20)
	waitEndpoints(t, cp, 20)
	count1, sum1 := rateLimiterWaits(t, kcm)
	t.Logf("%s after 20 Services: %s count %v, sum %.2fs", variant, metric, count1, sum1)

	// A burst: 20 more Services, each an Endpoints write behind the limiter.
	for i := 0; i < 20; i++ {
		_, err := cp.Client.CoreV1().Services(namespace).Create(&v1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "burst-" + string(rune('a'+i))},
			Spec: v1.ServiceSpec{ClusterIP: v1.ClusterIPNone, Selector: map[string]string{"burst": "x"},
				Ports: []v1.ServicePort{{Name: "web", Port: 80}}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	waitEndpoints(t, cp, 40)
	count2, sum2 := rateLimiterWaits(t, kcm)
	t.Logf("%s after a burst of 20 more: %s count %v, sum %.2fs", variant, metric, count2, sum2)
	if count2 < count1+20 {
		t.Errorf("count grew from %v to %v, want at least 20 more observations", count1, count2)
	}
	// 20 writes at 2 per second wait about 10 s in total.
	if sum2-sum1 < 5 {
		t.Errorf("sum grew by %.2fs, want the seconds spent throttled (at least 5s)", sum2-sum1)
	}
	if n := kcm.CountLogLines("Throttling request took"); n == 0 {
		t.Errorf("no \"Throttling request took\" line at default verbosity (-v=2)")
	}
}
