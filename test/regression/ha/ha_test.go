// Package ha is the fault suite of an HA control plane: two stock kube-apiservers on one etcd
// behind a load balancer, and three kube-controller-manager instances of the build under test
// that reach them only through it. Each test injects one fault that hits IDC control planes
// (a moved VIP, an apiserver going away, etcd compaction under watches, a leader frozen past its
// lease) and measures: how long until a pod deletion reaches its Endpoints, who leads, whether any
// live Endpoints were lost and whether an instance wrote while another held the lock. The
// apiservers' audit logs are the record of every write. Each test logs a FIGURES line, also kept
// in _output/test-logs/<test>/figures.txt.
package ha

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/idc-lts/kube-1.17/test/harness"
)

// TestSilentConnectionsAreReplaced: the VIP moves. Every established connection of every
// instance goes silent; new connections are forwarded. Without the HTTP/2 health check each
// instance keeps its dead connection until the kernel gives up on it (~15 min with unacknowledged
// bytes; never here, where the load balancer acknowledges what it drops): the leader loses its
// lease and no standby can take it. With it, the connections are replaced after
// ReadIdleTimeout + PingTimeout (45 s) and a standby leads.
func TestSilentConnectionsAreReplaced(t *testing.T) {
	s := setUp(t)
	before := s.waitLeader(time.Minute)
	var frontends []string
	for i := range s.kcms {
		frontends = append(frontends, kcmName(i))
	}
	n := s.lb.blackhole(frontends...)
	faultAt := time.Now()
	p := s.deletePod()
	t.Logf("VIP moved: %d established connections of %v silenced; leader was %s; deleted pod %s", n, frontends, before, p.name)
	recovery, ok := s.waitRemoved(p, faultAt, recoveryBound(t, 100*time.Second))
	s.check(outcome{scenario: "VIP moves (every connection silent)", deleted: p, recovery: recovery, recovered: ok})
}

// TestBlackholedLeader: only the leader's connections go silent (its master lost the path to the
// VIP). The leader's renewal is bounded by the leader-election client's timeout (RenewDeadline),
// so it steps down, and exits, before its lease expires; a standby then leads.
func TestBlackholedLeader(t *testing.T) {
	s := setUp(t)
	leader := s.waitLeader(time.Minute)
	n := s.lb.blackhole(leader)
	faultAt := time.Now()
	p := s.deletePod()
	t.Logf("%d connections of the leader %s silenced; deleted pod %s", n, leader, p.name)
	recovery, ok := s.waitRemoved(p, faultAt, recoveryBound(t, 60*time.Second))
	old := s.kcm(leader)
	waitExited(old, faultAt.Add(2*leaseDuration))
	// It stops leading (its controllers stop) when it logs the loss; klog.Fatalf then takes a
	// while to dump every goroutine and exit.
	steppedDown := old.FirstLogTime(stoppedLeadingLine)
	h := s.history()
	successor := h.successor()
	takeover := h.firstLockWriteBy(successor, faultAt)
	extra := []string{fmt.Sprintf("old leader stopped leading %s", since(steppedDown, faultAt)), fmt.Sprintf("successor's first lock write %s", since(takeover, faultAt))}
	s.check(outcome{scenario: "leader's connections silent", deleted: p, recovery: recovery, recovered: ok, extra: extra})
	if steppedDown.IsZero() || (!takeover.IsZero() && takeover.Before(steppedDown)) {
		t.Errorf("TWO LEADERS: the silenced leader %s still led when %s took the lock (%s after the fault); it stopped leading %s",
			leader, successor, since(takeover, faultAt), since(steppedDown, faultAt))
	}
}

// stoppedLeadingLine is what kube-controller-manager logs when it loses its lease, right before
// it exits.
const stoppedLeadingLine = "leaderelection lost"

// TestAPIServerStops: apiserver A stops (an upgrade or a crash of its master); the load balancer
// sends new connections to B.
func TestAPIServerStops(t *testing.T) {
	s := setUp(t)
	leader := s.waitLeader(time.Minute)
	s.lb.route(1)
	s.apiservers[0].proc.Stop()
	faultAt := time.Now()
	p := s.deletePod()
	t.Logf("apiserver A stopped, new connections to B; leader was %s; deleted pod %s", leader, p.name)
	recovery, ok := s.waitRemoved(p, faultAt, recoveryBound(t, 60*time.Second))
	s.check(outcome{scenario: "apiserver A stops", deleted: p, recovery: recovery, recovered: ok})
}

// TestCompactionUnderWatches: the instances watch through apiserver A. B restarts while writes
// go on, etcd is compacted at its current revision, then A stops: every watch resumes on B from a
// resourceVersion older than anything B's watch cache or etcd still holds, gets 410 Gone, and the
// informers relist. Counts the LISTs that reached etcd meanwhile: the relists must be served by
// the watch cache, not turn into a storm of etcd reads.
func TestCompactionUnderWatches(t *testing.T) {
	s := setUp(t)
	a, b := s.apiservers[0], s.apiservers[1]
	b.proc.Stop()
	for i := 0; i < 20; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("churn-%d", i)}}
		if _, err := s.client.CoreV1().ConfigMaps(namespace).Create(cm); err != nil {
			t.Fatal(err)
		}
	}
	revision := s.compact()
	s.startAPIServer(b)
	informerSets := s.endpointControllers()
	before := s.listCounts(b)
	s.lb.route(1)
	a.proc.Stop()
	faultAt := time.Now()
	p := s.deletePod()
	t.Logf("etcd compacted at revision %d, B restarted, A stopped; deleted pod %s", revision, p.name)
	recovery, ok := s.waitRemoved(p, faultAt, recoveryBound(t, 60*time.Second))
	time.Sleep(5 * time.Second)
	// Counted before the test lists anything itself (its own list would reach etcd).
	after := s.listCounts(b)
	s.waitEndpointsComplete(30 * time.Second)
	etcdLists, clientLists, gone := after.etcd-before.etcd, after.client-before.client, after.gone-before.gone
	s.check(outcome{scenario: "etcd compaction under watches", deleted: p, recovery: recovery, recovered: ok, extra: []string{
		fmt.Sprintf("LISTs answered 410 %.0f", gone), fmt.Sprintf("LISTs from clients %.0f", clientLists), fmt.Sprintf("LISTs to etcd %.0f", etcdLists)}})
	if clientLists < 1 {
		t.Errorf("no client listed anything on B after the failover: the scenario did not force a relist")
	}
	// Each instance that runs an endpoint controller (the leader; with patch 0018 every standby
	// too) has three informers (pods, Services, Endpoints), which may each reach etcd twice: once
	// at the compacted resourceVersion (answered 410) and once for the latest state.
	if maxLists := float64(2 * 3 * informerSets); etcdLists > maxLists {
		t.Errorf("%.0f LISTs reached etcd after the failover, want at most %.0f (two per informer of the %d instances running an endpoint controller)",
			etcdLists, maxLists, informerSets)
	}
}

// listCounts are an apiserver's LIST counters.
type listCounts struct {
	// etcd: LISTs it sent to etcd; client: LISTs clients sent it; gone: those answered 410.
	etcd, client, gone float64
}

// TestPausedLeader: the leader freezes (SIGSTOP: a long GC pause, a frozen VM) for longer than its
// lease; a standby takes over; the old leader wakes up (SIGCONT) while pods keep being deleted.
// Measures how long the old leader keeps acting: each Endpoints write it attempts after the new
// leader's first lock write is a dual-writer write.
func TestPausedLeader(t *testing.T) {
	s := setUp(t)
	leader := s.waitLeader(time.Minute)
	old := s.kcm(leader)
	if err := syscall.Kill(old.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// A stopped process is killed by the harness's SIGKILL at cleanup; SIGCONT is for the record.
	t.Cleanup(func() { _ = syscall.Kill(old.Pid(), syscall.SIGCONT) })
	pausedAt := time.Now()
	p := s.deletePod()
	recovery, ok := s.waitRemoved(p, pausedAt, 90*time.Second)
	time.Sleep(time.Until(pausedAt.Add(leaseDuration + 10*time.Second)))
	if err := syscall.Kill(old.Pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumedAt := time.Now()
	// Deletions keep coming while the old leader wakes up: work for both.
	for time.Since(resumedAt) < renewDeadline+5*time.Second {
		s.deletePod()
		time.Sleep(500 * time.Millisecond)
	}
	waitExited(old, resumedAt.Add(30*time.Second))
	h := s.history()
	successor := h.successor()
	takeover := h.firstLockWriteBy(successor, pausedAt)
	attempts, succeeded := 0, 0
	var last time.Time
	for _, w := range h.writes {
		if w.user == leader && !w.lock && w.namespace == namespace && w.at.After(resumedAt) && !takeover.IsZero() && w.at.After(takeover) {
			attempts++
			if w.ok {
				succeeded++
			}
			last = w.at
		}
	}
	interval := time.Duration(0)
	if !last.IsZero() {
		interval = last.Sub(resumedAt)
	}
	s.check(outcome{scenario: "leader paused past its lease", deleted: p, recovery: recovery, recovered: ok, extra: []string{
		fmt.Sprintf("old leader's Endpoints writes after resuming %d (%d succeeded)", attempts, succeeded),
		fmt.Sprintf("dual-writer interval %.3fs", interval.Seconds()),
		fmt.Sprintf("old leader stopped leading %s after resuming", since(old.FirstLogTime(stoppedLeadingLine), resumedAt))}})
	// A stale leader's write could also put a deleted pod back: every Endpoints must end up
	// listing exactly the live pods.
	s.waitEndpointsComplete(30 * time.Second)
	if attempts > 0 {
		t.Errorf("TWO LEADERS: the resumed old leader %s attempted %d Endpoints writes (%d succeeded) in the %.3f s after it woke up, after %s had taken the lock",
			leader, attempts, succeeded, interval.Seconds(), successor)
	}
}

// TestPlannedHandover: the leader is told to stop (SIGTERM, as the kubelet stops a static pod at
// each step of a rolling upgrade) while pods keep being deleted. Stock exits at once and leaves
// its lease to expire: nothing leads for about the lease duration. Patched stops its controllers,
// waits for their writes in flight, gives the lease up and exits; a standby leads at its next
// retry, long before the old lease would have expired. Counts what the old leader wrote after
// giving the lease up: its fence must have stopped everything.
func TestPlannedHandover(t *testing.T) {
	s := setUp(t)
	leader := s.waitLeader(time.Minute)
	old := s.kcm(leader)
	// Work in flight when the signal comes.
	for i := 0; i < 3; i++ {
		s.deletePod()
		time.Sleep(200 * time.Millisecond)
	}
	if err := syscall.Kill(old.Pid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	termAt := time.Now()
	p := s.deletePod()
	recovery, ok := s.waitRemoved(p, termAt, 90*time.Second)
	for time.Since(termAt) < leaseDuration+5*time.Second {
		s.deletePod()
		time.Sleep(500 * time.Millisecond)
	}
	waitExited(old, termAt.Add(30*time.Second))
	exited, exitErr := old.Exited()
	h := s.history()
	successor := h.successor()
	takeover := h.firstLockWriteBy(successor, termAt)
	release := h.releaseBy(leader, termAt)
	var afterRelease []write
	for _, w := range h.writes {
		if w.user == leader && !w.lock && !release.IsZero() && w.at.After(release) {
			afterRelease = append(afterRelease, w)
		}
	}
	s.check(outcome{scenario: "leader terminated (SIGTERM)", deleted: p, recovery: recovery, recovered: ok, extra: []string{
		fmt.Sprintf("lease released %s after SIGTERM", since(release, termAt)),
		fmt.Sprintf("successor's first lock write %s", since(takeover, termAt)),
		fmt.Sprintf("old leader's writes after the release %d", len(afterRelease)),
		fmt.Sprintf("old leader exited %t (%v)", exited, exitErr)}})
	s.waitEndpointsComplete(30 * time.Second)
	if release.IsZero() {
		t.Errorf("the terminated leader %s never gave its lease up: its successor %s had to wait for it to expire (first lock write %s after SIGTERM)",
			leader, successor, since(takeover, termAt))
	} else if takeover.IsZero() || takeover.Before(release) || takeover.Sub(termAt) >= leaseDuration {
		t.Errorf("after %s gave its lease up (%s after SIGTERM), no standby led before the old lease would have expired: successor %q, first lock write %s",
			leader, since(release, termAt), successor, since(takeover, termAt))
	}
	for _, w := range afterRelease {
		t.Errorf("TWO LEADERS: %s, which had given its lease up at %s, wrote %s %s/%s at %s (status ok %t)",
			leader, release.Format(time.StampMicro), w.verb, w.namespace, w.name, w.at.Format(time.StampMicro), w.ok)
	}
	if !exited || exitErr != nil {
		t.Errorf("the terminated leader %s exited %t with %v 30 s after SIGTERM, want a clean exit", leader, exited, exitErr)
	}
}

// compact compacts etcd at its current revision, physically, and returns the revision.
func (s *scenario) compact() int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	status, err := s.etcd.Status(ctx, s.etcdURL)
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.etcd.Compact(ctx, status.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		s.t.Fatalf("compacting etcd at revision %d: %v", status.Header.Revision, err)
	}
	return status.Header.Revision
}

// listCounts reads an apiserver's LIST counters.
func (s *scenario) listCounts(a *apiserver) listCounts {
	url := fmt.Sprintf("https://%s/metrics", a.addr)
	var counts listCounts
	var err error
	if counts.etcd, err = harness.MetricWithToken(url, testToken, "etcd_request_duration_seconds", map[string]string{"operation": "list"}); err != nil {
		s.t.Fatal(err)
	}
	if counts.client, err = harness.MetricWithToken(url, testToken, "apiserver_request_total", map[string]string{"verb": "LIST"}); err != nil {
		s.t.Fatal(err)
	}
	// No series until a LIST was answered 410.
	counts.gone, _ = harness.MetricWithToken(url, testToken, "apiserver_request_total", map[string]string{"verb": "LIST", "code": "410"})
	return counts
}

// waitExited waits until the component's process has ended, at the latest until deadline.
func waitExited(c *harness.Component, deadline time.Time) {
	_ = wait.PollImmediate(100*time.Millisecond, time.Until(deadline), func() (bool, error) {
		exited, _ := c.Exited()
		return exited, nil
	})
}

// since says how long after from t was, or "never" for a zero t.
func since(t, from time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return fmt.Sprintf("at +%.1fs", t.Sub(from).Seconds())
}
