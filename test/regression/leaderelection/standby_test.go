package leaderelection

import (
	"errors"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/idc-lts/kube-1.17/test/fixture"
	"github.com/idc-lts/kube-1.17/test/harness"
)

// standbyWatchBound is how long a standby gets to start watching Pods, Services and Endpoints
// while another holds the lock; the patched one does so within a second of starting.
const standbyWatchBound = 30 * time.Second

// standbyKinds are the kinds the endpoint controller reads, which a warm standby watches.
var standbyKinds = []string{"Pod", "Service", "Endpoints"}

// TestStandbyWatchesBeforeLeading checks patch "controller-manager: a standby watches Pods,
// Services and Endpoints before it leads": while the lock is held by someone else, a
// kube-controller-manager standby already watches what its endpoint controller reads (stock
// lists all of it only after acquiring the lock, which delays every failover by the time a LIST of
// every Pod, Service and Endpoints takes); once the lock is free it leads and writes Endpoints as
// usual.
func TestStandbyWatchesBeforeLeading(t *testing.T) {
	t.Parallel()
	variant := harness.VariantUnderTest()
	cp := harness.StartControlPlane(t)

	// Another candidate holds the Lease and renews it, as a live leader on another master would.
	// Both builds are told to use the Lease lock (stock defaults to endpointsleases).
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-controller-manager"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       stringPtr("another-master"),
			LeaseDurationSeconds: int32Ptr(3600),
			AcquireTime:          &metav1.MicroTime{Time: time.Now()},
			RenewTime:            &metav1.MicroTime{Time: time.Now()},
		},
	}
	leases := cp.Client.CoordinationV1().Leases("kube-system")
	if _, err := leases.Create(lease); err != nil {
		t.Fatalf("holding the lock: %v", err)
	}
	// A live holder renews: a candidate counts the lease duration from when it last saw the
	// record change, by its own --leader-elect-lease-duration.
	renewing, stopRenewing := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(renewing)
		wait.Until(func() {
			current, err := leases.Get(lease.Name, metav1.GetOptions{})
			if err != nil {
				t.Errorf("renewing the lock: %v", err)
				return
			}
			current.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
			if _, err := leases.Update(current); err != nil {
				t.Errorf("renewing the lock: %v", err)
			}
		}, retryPeriod, stopRenewing)
	}()
	var stopOnce sync.Once
	stop := func() {
		stopOnce.Do(func() { close(stopRenewing) })
		<-renewing
	}
	t.Cleanup(stop)
	release := func() {
		stop()
		if err := leases.Delete(lease.Name, nil); err != nil {
			t.Fatalf("releasing the lock: %v", err)
		}
	}
	services := fixture.CreateServices(t, cp.Client, "standby", 0, 2)
	before := registeredWatchers(t, cp)

	kcm := harness.StartComponent(t, cp, harness.ComponentOptions{Variant: variant, Args: []string{
		"--controllers=endpoint", "--leader-elect=true", "--leader-elect-resource-lock=leases"}})
	var now map[string]float64
	err := wait.PollImmediate(200*time.Millisecond, standbyWatchBound, func() (bool, error) {
		now = registeredWatchers(t, cp)
		for _, kind := range standbyKinds {
			if now[kind] <= before[kind] {
				return false, nil
			}
		}
		return true, nil
	})
	if kcm.CountLogLines(acquiredLine) != 0 {
		t.Fatalf("%s acquired the lease while another-master held it", variant)
	}
	t.Logf("%s standby: apiserver watchers %v before it started, %v after", variant, before, now)
	if err != nil {
		t.Fatalf("%s standby did not watch all of %v within %v while another held the lock (apiserver watchers %v before, %v after): a new leader lists them only after it acquires the lock",
			variant, standbyKinds, standbyWatchBound, before, now)
	}

	// The lock is given up; the standby leads and its endpoint controller fills the Endpoints.
	release()
	waitLeading(t, kcm, maxFailover)
	for _, f := range services {
		wantReady, wantNotReady := f.WantAddresses()
		if err := wait.PollImmediate(200*time.Millisecond, 30*time.Second, func() (bool, error) {
			ep, err := cp.Client.CoreV1().Endpoints(f.Namespace).Get(f.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			ready, notReady := fixture.CountAddresses(ep)
			return ready == wantReady && notReady == wantNotReady, nil
		}); err != nil {
			t.Errorf("%s leader: Endpoints %s/%s never had %d ready and %d not-ready addresses", variant, f.Namespace, f.Name, wantReady, wantNotReady)
		}
	}
}

// registeredWatchers reads the apiserver's count of watchers of each of standbyKinds; a kind
// nobody has watched yet has no series, which counts as 0.
func registeredWatchers(t *testing.T, cp *harness.ControlPlane) map[string]float64 {
	t.Helper()
	counts := map[string]float64{}
	for _, kind := range standbyKinds {
		n, err := harness.Metric(cp.URL+"/metrics", "apiserver_registered_watchers", map[string]string{"kind": kind})
		if err != nil && !errors.Is(err, harness.ErrNoMetric) && !errors.Is(err, harness.ErrNoSeries) {
			t.Fatalf("reading the apiserver's watchers of %s: %v", kind, err)
		}
		counts[kind] = n
	}
	return counts
}

func stringPtr(s string) *string { return &s }
func int32Ptr(i int32) *int32    { return &i }
