// Package failover is the regression suite for patch 0018 ("endpoints: a standby
// kube-controller-manager keeps its endpoint controller warm"): when the leader dies, the stock
// standby that takes over lists every pod, Service and Endpoints and then syncs the Services in the
// order that list returned them, so the Endpoints of pods deleted while nobody led are fixed
// somewhere in a pass over all Services (at 13,000 Services, seconds after the takeover); the
// build under test, which kept watching while it waited, fixes them first, in the order the pods
// went. TestLeaderBuildsItsControllersOnUnstartedInformers guards how it stands by: with its own
// informers, not the shared ones the leader's other controllers expect to start after them.
package failover

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/idc-lts/kube-1.17/test/fixture"
	"github.com/idc-lts/kube-1.17/test/harness"
)

const (
	namespace = "failover"
	services  = 60
	// deletions are pods deleted, one every deleteInterval, while nobody leads.
	deletions      = 10
	deleteInterval = 200 * time.Millisecond
	acquiredLine   = "successfully acquired lease"
	syncedLine     = "Caches are synced for endpoint"
)

// leaderElectionArgs: a short lease, so that the takeover comes 5-8 s after the kill, after the
// deletions.
var leaderElectionArgs = []string{
	"--leader-elect=true", "--leader-elect-lease-duration=6s", "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s",
}

// kcmArgs: the endpoint controller with one worker, so that the order of the new leader's writes
// is the order of its queue.
var kcmArgs = append([]string{"--controllers=endpoint", "--concurrent-endpoint-syncs=1"}, leaderElectionArgs...)

// TestStockNewLeaderFixesEndpointsInListOrder shows the bug: stock's new leader fixes the
// Endpoints of pods deleted while nobody led in the order its list of Services returned them.
func TestStockNewLeaderFixesEndpointsInListOrder(t *testing.T) {
	deleted, fixed := failover(t, "stock")
	if reflect.DeepEqual(fixed, deleted) {
		t.Errorf("stock: the new leader fixed the Endpoints in the order the pods were deleted (%v); want list order (a 1 in %d! chance)", fixed, deletions)
	}
}

// TestPatchedNewLeaderFixesStaleEndpointsFirst: the new leader of the build under test fixes
// them first, oldest first.
func TestPatchedNewLeaderFixesStaleEndpointsFirst(t *testing.T) {
	variant := harness.VariantUnderTest()
	deleted, fixed := failover(t, variant)
	if !reflect.DeepEqual(fixed, deleted) {
		t.Errorf("%s: the new leader fixed the Endpoints of %v in the order %v, want the order their pods were deleted in", variant, deleted, fixed)
	}
}

// TestLeaderBuildsItsControllersOnUnstartedInformers guards how patch 0018 stands by: the
// informers its endpoint controller keeps while the process waits for the lock must not be the
// ones the leader builds its other controllers on. 1.17 controllers expect those to start after
// they are built: the attach-detach, DaemonSet and node lifecycle controllers add pod indexes,
// which a started informer holding pods refuses (attach-detach alone says so in its log).
func TestLeaderBuildsItsControllersOnUnstartedInformers(t *testing.T) {
	variant := harness.VariantUnderTest()
	cp := harness.StartControlPlane(t)
	fixture.CreateServices(t, cp.Client, namespace, 0, 5, fixture.SingleSubset)
	logDir := harness.LogDir(t)
	holder := harness.StartComponent(t, cp, harness.ComponentOptions{Variant: "stock", Name: "lock-holder", LogDir: logDir, Args: kcmArgs})
	waitLog(t, holder, acquiredLine, 60*time.Second)
	// Every controller kube-controller-manager runs by default.
	kcm := harness.StartComponent(t, cp, harness.ComponentOptions{Variant: variant, LogDir: logDir, Args: leaderElectionArgs})
	waitStandbySynced(t, variant, kcm)
	holder.Kill()
	waitLog(t, kcm, acquiredLine, 60*time.Second)
	// Its controllers are built and their informers started once attach-detach has synced.
	built := wait.PollImmediate(100*time.Millisecond, 60*time.Second, func() (bool, error) {
		if exited, err := kcm.Exited(); exited {
			return false, fmt.Errorf("the new leader exited (%v)", err)
		}
		return kcm.CountLogLines("Caches are synced for attach detach") > 0, nil
	})
	for line, why := range map[string]string{
		"adding indexer got": "built the attach-detach controller on a started pod informer",
		"Observed a panic":   "called a controller's handler before its constructor was done",
	} {
		if found := kcm.FirstLogLine(line); found != "" {
			t.Errorf("%s: the new leader %s: %s", variant, why, found)
		}
	}
	if built != nil {
		t.Fatalf("%s: the new leader's attach-detach controller did not sync within 60 s: %v", variant, built)
	}
}

// failover runs two instances of variant, kills the leader, deletes a pod of each of `deletions`
// Services before the standby takes over, and returns those Services in deletion order and in the
// order the new leader removed the pods' addresses from their Endpoints.
func failover(t *testing.T, variant string) (deleted, fixed []string) {
	cp := harness.StartControlPlane(t)
	fixtures := fixture.CreateServices(t, cp.Client, namespace, 0, services, fixture.SingleSubset)
	logDir := harness.LogDir(t)
	start := func(name string) *harness.Component {
		return harness.StartComponent(t, cp, harness.ComponentOptions{Variant: variant, Name: name, LogDir: logDir, Args: kcmArgs})
	}
	leader := start("kube-controller-manager-0")
	waitLog(t, leader, acquiredLine, 60*time.Second)
	waitEndpointsComplete(t, cp, fixtures, 60*time.Second)
	standby := start("kube-controller-manager-1")
	waitStandbySynced(t, variant, standby)
	if standby.CountLogLines(acquiredLine) > 0 {
		t.Fatalf("%s: the standby acquired the lock while the leader was alive", variant)
	}

	var victims []fixture.ServiceFixture
	for i := 0; i < deletions; i++ {
		victims = append(victims, fixtures[i*services/deletions+3])
	}
	fixes := watchFixes(t, cp, victims)

	leader.Kill()
	killedAt := time.Now()
	for _, f := range victims {
		pod, _ := f.FirstPod()
		if err := cp.Client.CoreV1().Pods(namespace).Delete(pod, &metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		deleted = append(deleted, f.Name)
		time.Sleep(deleteInterval)
	}
	deletedAt := time.Now()
	acquiredAt := waitLog(t, standby, acquiredLine, 60*time.Second)
	if acquiredAt.Before(deletedAt) {
		t.Fatalf("%s: the standby took over %v after the kill, before the last deletion (%v after it): the test needs every deletion before the takeover",
			variant, acquiredAt.Sub(killedAt), deletedAt.Sub(killedAt))
	}
	fixed = fixes.wait(t, 60*time.Second)
	t.Logf("%s: pods deleted %v while nobody led; the new leader took over %.1fs after the kill and fixed their Endpoints in the order %v",
		variant, deleted, acquiredAt.Sub(killedAt).Seconds(), fixed)
	return deleted, fixed
}

// waitStandbySynced waits until a standby's endpoint controller has its caches: the build under
// test's syncs them before it leads; stock's does not, and the test goes on without.
func waitStandbySynced(t *testing.T, variant string, standby *harness.Component) {
	t.Helper()
	if err := wait.PollImmediate(100*time.Millisecond, 15*time.Second, func() (bool, error) {
		return standby.CountLogLines(syncedLine) > 0, nil
	}); err != nil {
		t.Logf("%s: the standby did not sync its caches while waiting for the lock", variant)
	}
}

// waitLog waits until the component logs a line containing line and returns when it did.
func waitLog(t *testing.T, c *harness.Component, line string, timeout time.Duration) time.Time {
	t.Helper()
	if err := wait.PollImmediate(100*time.Millisecond, timeout, func() (bool, error) {
		return c.CountLogLines(line) > 0, nil
	}); err != nil {
		t.Fatalf("%s did not log %q within %v:\n%s", c.Name, line, timeout, c.Tail(20))
	}
	return c.FirstLogTime(line)
}

func waitEndpointsComplete(t *testing.T, cp *harness.ControlPlane, fixtures []fixture.ServiceFixture, timeout time.Duration) {
	t.Helper()
	var missing []string
	err := wait.PollImmediate(200*time.Millisecond, timeout, func() (bool, error) {
		missing = nil
		for _, f := range fixtures {
			_, ip := f.FirstPod()
			ep, err := cp.Client.CoreV1().Endpoints(namespace).Get(f.Name, metav1.GetOptions{})
			if err != nil || !fixture.HasIP(ep, ip) {
				missing = append(missing, f.Name)
			}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		t.Fatalf("Endpoints incomplete after %v: %v", timeout, missing)
	}
}

// fixes records the order in which the victims' Endpoints lose their pod's address.
type fixes struct {
	mu      sync.Mutex
	pending map[string]string // Service -> the address it must lose
	order   []string
	stop    func()
}

func watchFixes(t *testing.T, cp *harness.ControlPlane, victims []fixture.ServiceFixture) *fixes {
	f := &fixes{pending: map[string]string{}}
	for _, v := range victims {
		_, ip := v.FirstPod()
		f.pending[v.Name] = ip
	}
	w, err := cp.Client.CoreV1().Endpoints(namespace).Watch(metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.stop = w.Stop
	t.Cleanup(w.Stop)
	go func() {
		for event := range w.ResultChan() {
			ep, ok := event.Object.(*v1.Endpoints)
			if !ok || event.Type == watch.Error {
				continue
			}
			f.mu.Lock()
			if ip, ok := f.pending[ep.Name]; ok && (event.Type == watch.Deleted || !fixture.HasIP(ep, ip)) {
				delete(f.pending, ep.Name)
				f.order = append(f.order, ep.Name)
			}
			f.mu.Unlock()
		}
	}()
	return f
}

// wait returns the order once every victim's Endpoints lost its address.
func (f *fixes) wait(t *testing.T, timeout time.Duration) []string {
	t.Helper()
	err := wait.PollImmediate(100*time.Millisecond, timeout, func() (bool, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.pending) == 0, nil
	})
	f.stop()
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		t.Fatalf("after %v, Endpoints still list deleted pods: %v", timeout, fmt.Sprint(f.pending))
	}
	return append([]string(nil), f.order...)
}
