package leaderelection

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/idc-lts/kube-1.17/test/harness"
)

const (
	// Upstream defaults, which the components run with.
	leaseDuration = 15 * time.Second
	retryPeriod   = 2 * time.Second
	// client-go waits retryPeriod plus up to 1.2x of it between tries (wait.JitterUntil).
	retryJitterFactor = 1.2
	window            = 60 * time.Second
	acquiredLine      = "successfully acquired lease"
)

// maxFailover is the longest a waiting instance may take to lead after the leader dies. The
// waiter counts the lease duration from when it last saw the record change, which is up to one
// jittered retry interval after the leader's last renewal, and takes the lock on its first try
// after that: lease duration + 2 jittered retry intervals (2 x 4.4 s), plus 1 s for scheduling.
var maxFailover = leaseDuration + 2*time.Duration((1+retryJitterFactor)*float64(retryPeriod)) + time.Second

func startKubeControllerManager(t *testing.T, cp *harness.ControlPlane, logDir, name, variant string) *harness.Component {
	return harness.StartComponent(t, cp, harness.ComponentOptions{Variant: variant, Name: name, LogDir: logDir,
		Args: []string{"--controllers=endpoint", "--leader-elect=true"}})
}

func startKubeScheduler(t *testing.T, cp *harness.ControlPlane, logDir, name, variant string) *harness.Component {
	return harness.StartComponent(t, cp, harness.ComponentOptions{Component: harness.KubeScheduler, Variant: variant, Name: name,
		LogDir: logDir, Args: []string{"--leader-elect=true"}})
}

// waitLeading waits until the component logs that it acquired its lease.
func waitLeading(t *testing.T, c *harness.Component, timeout time.Duration) time.Time {
	t.Helper()
	if err := wait.PollImmediate(100*time.Millisecond, timeout, func() (bool, error) {
		return c.CountLogLines(acquiredLine) > 0, nil
	}); err != nil {
		t.Fatalf("%s did not become leader within %v", c.Name, timeout)
	}
	return time.Now()
}

// churn runs kube-controller-manager and kube-scheduler of a variant and returns, for each lock
// name, the Endpoints writes and Lease writes in kube-system during a 60 s window after both lead,
// plus every Endpoints write in kube-system from before they started.
func churn(t *testing.T, variant string) (endpointWrites, leaseWrites map[string][]write, allEndpoints []write) {
	cp := harness.StartControlPlane(t)
	obs := observeKubeSystem(t, cp.Client)
	logDir := harness.LogDir(t)
	started := time.Now()
	kcm := startKubeControllerManager(t, cp, logDir, "kube-controller-manager", variant)
	scheduler := startKubeScheduler(t, cp, logDir, "kube-scheduler", variant)
	waitLeading(t, kcm, 30*time.Second)
	waitLeading(t, scheduler, 30*time.Second)

	from := time.Now()
	time.Sleep(window)
	endpointWrites, leaseWrites = map[string][]write{}, map[string][]write{}
	for _, name := range harness.SuiteComponents {
		for _, w := range obs.since(from, "Endpoints", name) {
			if w.at.Before(from.Add(window)) {
				endpointWrites[name] = append(endpointWrites[name], w)
			}
		}
		for _, w := range obs.since(from, "Lease", name) {
			if w.at.Before(from.Add(window)) {
				leaseWrites[name] = append(leaseWrites[name], w)
			}
		}
	}
	return endpointWrites, leaseWrites, obs.since(started, "Endpoints", "")
}

// TestStockRenewsThroughEndpoints reproduces the bug: stock components write their kube-system
// Endpoints on every renewal.
func TestStockRenewsThroughEndpoints(t *testing.T) {
	t.Parallel()
	endpointWrites, _, _ := churn(t, "stock")
	for _, name := range harness.SuiteComponents {
		t.Logf("stock %s: %d writes to Endpoints kube-system/%s in %v", name, len(endpointWrites[name]), name, window)
		if len(endpointWrites[name]) < 25 {
			t.Errorf("bug not reproduced: stock %s wrote its Endpoints %d times in %v, want at least 25",
				name, len(endpointWrites[name]), window)
		}
	}
}

// TestPatchedRenewsOnlyTheLease checks the fix: no Endpoints write in kube-system at all, while
// the Leases keep being renewed.
func TestPatchedRenewsOnlyTheLease(t *testing.T) {
	t.Parallel()
	variant := harness.VariantUnderTest()
	_, leaseWrites, allEndpoints := churn(t, variant)
	if len(allEndpoints) != 0 {
		t.Errorf("%s: %d Endpoints writes in kube-system (first: %s), want 0", variant, len(allEndpoints), allEndpoints[0].name)
	}
	for _, name := range harness.SuiteComponents {
		writes := leaseWrites[name]
		if len(writes) < 2 {
			t.Errorf("%s %s: %d Lease writes in %v, want it renewed throughout", variant, name, len(writes), window)
			continue
		}
		advanced := writes[len(writes)-1].renew.Sub(writes[0].renew)
		t.Logf("%s %s: 0 Endpoints writes; Lease renewed %d times, renewTime advanced %v in %v",
			variant, name, len(writes), advanced.Round(time.Second), window)
		if advanced < window-2*leaseDuration {
			t.Errorf("%s %s: Lease renewTime advanced only %v in %v", variant, name, advanced, window)
		}
	}
}

// handover starts `first`, waits until it leads, starts `second`, requires that `second` does
// not lead while `first` lives (for longer than a lease duration), kills `first`, and requires
// `second` to lead within maxFailover. Both are kube-controller-manager. It checks the Lease's
// holder history and both logs for two leaders at once, and returns the observer for more checks.
func handover(t *testing.T, firstVariant, secondVariant string) *observer {
	cp := harness.StartControlPlane(t)
	obs := observeKubeSystem(t, cp.Client)
	logDir := harness.LogDir(t)
	first := startKubeControllerManager(t, cp, logDir, "first-"+firstVariant, firstVariant)
	waitLeading(t, first, 30*time.Second)
	second := startKubeControllerManager(t, cp, logDir, "second-"+secondVariant, secondVariant)

	time.Sleep(leaseDuration + 2*retryPeriod + 3*time.Second)
	if n := second.CountLogLines(acquiredLine); n != 0 {
		t.Fatalf("TWO LEADERS: %s (%s) acquired the lease while %s (%s) was leading", second.Name, secondVariant, first.Name, firstVariant)
	}
	holdersBefore := obs.holders("Lease", "kube-controller-manager")
	if len(holdersBefore) != 1 {
		t.Fatalf("Lease holders while the first leader lived: %v, want exactly one", holdersBefore)
	}

	first.Kill()
	killed := time.Now()
	acquired := waitLeading(t, second, 2*maxFailover)
	failover := acquired.Sub(killed)
	t.Logf("%s -> %s: leader killed, successor leading after %v (bound %v)", firstVariant, secondVariant, failover.Round(100*time.Millisecond), maxFailover)
	if failover > maxFailover {
		t.Errorf("%s took %v to lead after the leader died, want at most %v", second.Name, failover, maxFailover)
	}

	// The Lease went from the first holder to one other, never back, and only after the kill.
	// The successor logs its acquisition once its write is answered; the observer's watch may
	// deliver that write a moment later.
	holders := obs.waitHolders("Lease", "kube-controller-manager", 2, 10*time.Second)
	if len(holders) != 2 || holders[0] != holdersBefore[0] {
		t.Errorf("Lease holder history %v, want [first, second]", holders)
	}
	for _, w := range obs.since(time.Time{}, "Lease", "kube-controller-manager") {
		if len(holders) == 2 && w.holder == holders[1] && w.at.Before(killed) {
			t.Errorf("TWO LEADERS: Lease held by the second instance at %v, before the first died at %v", w.at, killed)
		}
	}
	return obs
}

// TestMigrationStockToPatched: a stock instance (endpointsleases) leads; a patched one (leases)
// waits for it and takes over only after it dies.
func TestMigrationStockToPatched(t *testing.T) {
	t.Parallel()
	handover(t, "stock", harness.VariantUnderTest())
}

// TestRollbackPatchedToStock: a patched instance leads; a stock one started beside it (a
// rollback on one master) waits and takes over only after it dies. The stock instance writes the
// Endpoints lock with itself as holder while it waits (its create of the Endpoints+Lease pair
// half succeeds), which is misleading to a human but not to either component: the stock one sees
// two different holders and treats the lock as held.
func TestRollbackPatchedToStock(t *testing.T) {
	t.Parallel()
	obs := handover(t, harness.VariantUnderTest(), "stock")
	endpointHolders := obs.holders("Endpoints", "kube-controller-manager")
	t.Logf("Endpoints kube-system/kube-controller-manager holders during the rollback: %v", endpointHolders)
	for _, holder := range endpointHolders {
		if !strings.Contains(holder, "_") {
			t.Errorf("unexpected Endpoints holder %q", holder)
		}
	}
}

// TestPatchedHandsOverOnSIGTERM: two instances of each component run; the leader is told to stop
// (SIGTERM, as the kubelet stops a static pod at each step of a rolling upgrade). Upstream's
// components die at once and leave their lease to expire, so nothing schedules or reconciles
// for about the lease duration. Ours stop their work, give the lease up (the Lease names no
// holder) and exit cleanly; the standby takes the lease at its next try, well before the old
// lease would have expired.
func TestPatchedHandsOverOnSIGTERM(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		start func(t *testing.T, cp *harness.ControlPlane, logDir, name, variant string) *harness.Component
	}{
		{"kube-controller-manager", startKubeControllerManager},
		{"kube-scheduler", startKubeScheduler},
	} {
		c := c
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			variant := harness.VariantUnderTest()
			cp := harness.StartControlPlane(t)
			obs := observeKubeSystem(t, cp.Client)
			logDir := harness.LogDir(t)
			first := c.start(t, cp, logDir, "first", variant)
			waitLeading(t, first, 30*time.Second)
			second := c.start(t, cp, logDir, "second", variant)
			second.WaitHealthy(t, 30*time.Second)
			if err := syscall.Kill(first.Pid(), syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			terminated := time.Now()
			acquired := waitLeading(t, second, 2*maxFailover)
			_ = wait.PollImmediate(100*time.Millisecond, 30*time.Second, func() (bool, error) {
				exited, _ := first.Exited()
				return exited, nil
			})
			exited, exitErr := first.Exited()
			var released time.Time
			for _, w := range obs.since(terminated, "Lease", c.name) {
				if w.holder == "" {
					released = w.at
					break
				}
			}
			t.Logf("%s: SIGTERM to the leader; Lease released %s, the standby leading %v after the signal; old leader exited %t (%v)",
				c.name, sinceSignal(released, terminated), acquired.Sub(terminated).Round(100*time.Millisecond), exited, exitErr)
			if released.IsZero() {
				t.Errorf("the terminated leader never released its Lease: the standby led %v after the signal, by waiting for it to expire; want it released and taken at the standby's next try",
					acquired.Sub(terminated).Round(100*time.Millisecond))
			} else if acquired.Sub(terminated) >= leaseDuration {
				t.Errorf("the standby led %v after the signal, as after an expired lease; a released one is taken at its next try",
					acquired.Sub(terminated).Round(100*time.Millisecond))
			}
			if !exited || exitErr != nil {
				t.Errorf("the terminated leader exited %t with %v within 30 s of SIGTERM, want a clean exit", exited, exitErr)
			}
		})
	}
}

func sinceSignal(at, signalled time.Time) string {
	if at.IsZero() {
		return "never"
	}
	return fmt.Sprintf("%v after the signal", at.Sub(signalled).Round(100*time.Millisecond))
}
