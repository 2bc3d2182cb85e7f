package ha

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/idc-lts/kube-1.17/test/fixture"
	"github.com/idc-lts/kube-1.17/test/harness"
)

const (
	// writesAfterBackup is how far behind the live etcd the backup is when it is restored, as in
	// the measurement that found stock blind: a data-directory backup 300 writes back.
	writesAfterBackup = 300
	// restoreLeaseDuration and restoreRenewDeadline are the leader-election timings the
	// instances run with here instead of upstream's 15 s and 10 s. The restore keeps every
	// apiserver away for as long as an apiserver takes to start, 5 s on an idle machine and over
	// 10 s on a loaded one (CI, 2026-12-01): with upstream's renew deadline the leader then gave
	// up its lease and exited for that, not for the restore. 25 s is out of the restore's reach;
	// what the restore does to the watches does not depend on it.
	restoreLeaseDuration = 30 * time.Second
	restoreRenewDeadline = 25 * time.Second
	// restoreRecoveryBound is how long, from the apiservers' return, the build under test may
	// take to see again: each instance notices at its next read of the lock (one retry period,
	// 2 s) and exits; the kubelet's restart (here the test's, at once), a fresh list, then the
	// lease as restored names the leader of the backup's time, which the restarted instances
	// wait out (restoreLeaseDuration) before one leads. About 32 s; the bound leaves room.
	restoreRecoveryBound = 60 * time.Second
	// blindFor is how long stock is watched after the restore to call it blind: nearly twice the
	// time the build under test needs.
	blindFor = 60 * time.Second
	// schedulers is how many kube-scheduler instances run beside the kube-controller-manager ones.
	schedulers = 2
	// retryPeriod is upstream's leader-election retry period, which the instances run with: how
	// often each reads the lock.
	retryPeriod = 2 * time.Second
	// storageWentBackLine begins the line an instance logs when it notices the restore
	// (leaderelectionconfig.StorageWentBackLine, patch 0041).
	storageWentBackLine = "etcd went back in time"
	// schedulerNode is the Node the pods the scheduler places go to (the fixtures' pods name it too).
	schedulerNode = "node-1"
)

// TestEtcdRestore: etcd is restored from a data-directory backup taken 300 pod writes earlier,
// under three kube-controller-manager and two kube-scheduler instances that keep running, as an
// operator restores a master's etcd (apiservers stopped, etcd restored, apiservers started). While
// the apiservers are away the instances' connections are refused (downForRestore): kubeadm points
// each master's components at its own apiserver, which refuses once stopped, and the 1.17
// reflector then retries its watch from the resourceVersion it had. Every watch so resumes from a
// resourceVersion the restored etcd has not reached, and waits for it in silence. The build under
// test must see again within restoreRecoveryBound: a pod deleted after the restore leaves its
// Endpoints, and a pod created after it is scheduled. The test restarts each instance that
// exits, as the kubelet restarts a static pod.
func TestEtcdRestore(t *testing.T) {
	r := restoreEtcd(t, harness.VariantUnderTest(), restoreRecoveryBound)
	r.s.check(r.outcome)
	if !r.scheduled {
		t.Errorf("the pod created after the restore was not scheduled within %v, want it scheduled: kube-scheduler stayed blind", restoreRecoveryBound)
	}
	if all := instances + schedulers; len(r.exited) < all {
		t.Errorf("%d of the %d instances exited (%v): the others go on with watches that wait for a resourceVersion etcd has not reached", len(r.exited), all, r.exited)
	}
	for _, name := range r.notNoticed {
		t.Errorf("%s exited without the line %q: exited for another reason", name, storageWentBackLine)
	}
}

// TestStockIsBlindAfterAnEtcdRestore: the same restore under stock instances. Nothing tells them:
// for blindFor after the apiservers are back, neither the deleted pod leaves its Endpoints nor the
// new pod is scheduled, and no instance exits. (If this fails, stock is no longer blind here and
// TestEtcdRestore proves nothing.)
func TestStockIsBlindAfterAnEtcdRestore(t *testing.T) {
	r := restoreEtcd(t, "stock", blindFor)
	r.s.figures(&r.outcome)
	if r.recovered {
		t.Errorf("stock removed the pod deleted after the restore from its Endpoints %.1f s after the restore: not blind", r.recovery.Seconds())
	}
	if r.scheduled {
		t.Errorf("stock scheduled the pod created after the restore: not blind")
	}
	if len(r.exited) > 0 {
		t.Errorf("stock instances exited after the restore: %v", r.exited)
	}
}

// restored is what restoreEtcd measured.
type restored struct {
	s *scenario
	outcome
	// scheduled: the pod created after the restore was bound within the bound.
	scheduled bool
	// exited are the instances that exited after the restore (and were started again), each once,
	// in order; notNoticed those of them whose exit did not log storageWentBackLine.
	exited, notNoticed []string
}

// restoreEtcd runs the restore under instances of variant and watches for bound after the
// apiservers are back.
func restoreEtcd(t *testing.T, variant string, bound time.Duration) restored {
	s := setUpVariant(t, variant, restoreLeaseArgs()...)
	started := s.startSchedulers()
	s.createNode()
	s.waitScheduled(s.createUnscheduledPod("before-backup"), 60*time.Second)

	churn := s.createChurnPod()
	backup := s.backupEtcd()
	// Writes the instances watch, as a live cluster's pods change: their watches move past the
	// backup's revision.
	for i := 0; i < writesAfterBackup; i++ {
		patch := fmt.Sprintf(`{"metadata":{"labels":{"churn":"%d"}}}`, i)
		if _, err := s.client.CoreV1().Pods(namespace).Patch(churn, types.StrategicMergePatchType, []byte(patch)); err != nil {
			t.Fatalf("write %d after the backup: %v", i, err)
		}
	}
	// Backups are older than a few seconds: by the restore, every instance has read the lock
	// since the backup's point (each reads it every retry period).
	time.Sleep(3 * retryPeriod)
	away := s.restoreEtcd(backup)
	restoredAt := time.Now()

	p := s.deletePod()
	newPod := s.createUnscheduledPod("after-restore")
	t.Logf("etcd restored %d writes back; apiservers back; deleted pod %s, created pod %s", writesAfterBackup, p.name, newPod)

	running := map[string]*harness.Component{}
	for i, k := range s.kcms {
		running[kcmName(i)] = k
	}
	for i, sc := range started {
		running[schedulerName(i)] = sc
	}
	r := restored{s: s, outcome: outcome{scenario: "etcd restored " + fmt.Sprint(writesAfterBackup) + " writes back", deleted: p,
		extra: []string{fmt.Sprintf("no apiserver for %.1fs", away.Seconds())}}}
	var firstExit time.Time
	restarts := 0
	for time.Since(restoredAt) < bound && !(r.recovered && r.scheduled && len(r.exited) >= len(running)) {
		for name, c := range running {
			if exited, _ := c.Exited(); !exited {
				continue
			}
			if firstExit.IsZero() {
				firstExit = time.Now()
			}
			if !slices.Contains(r.exited, name) {
				r.exited = append(r.exited, name)
			}
			if c.FirstLogLine(storageWentBackLine) == "" {
				r.notNoticed = append(r.notNoticed, name)
			}
			// As the kubelet restarts a static pod's container.
			restarts++
			running[name] = s.startInstance(name, restarts)
		}
		if !r.recovered {
			if ep, err := s.client.CoreV1().Endpoints(namespace).Get(p.service, metav1.GetOptions{}); err == nil && !fixture.HasIP(ep, p.ip) {
				r.recovered, r.recovery = true, time.Since(restoredAt)
			}
		}
		if !r.scheduled {
			if pod, err := s.client.CoreV1().Pods(namespace).Get(newPod, metav1.GetOptions{}); err == nil && pod.Spec.NodeName != "" {
				r.scheduled = true
				r.extra = append(r.extra, fmt.Sprintf("new pod scheduled %.1fs after the restore", time.Since(restoredAt).Seconds()))
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !r.recovered {
		r.recovery = bound
	}
	if !r.scheduled {
		r.extra = append(r.extra, fmt.Sprintf("new pod not scheduled within %v", bound))
	}
	r.extra = append(r.extra, fmt.Sprintf("instances exited %d (%s), the first %s after the restore", len(r.exited), strings.Join(r.exited, " "), since(firstExit, restoredAt)))
	return r
}

// startSchedulers starts the kube-scheduler instances of the variant and returns them.
func (s *scenario) startSchedulers() []*harness.Component {
	var out []*harness.Component
	for i := 0; i < schedulers; i++ {
		out = append(out, s.startInstance(schedulerName(i), 0))
	}
	return out
}

// restoreLeaseArgs are the flags that give an instance the restore's leader-election timings.
func restoreLeaseArgs() []string {
	return []string{"--leader-elect-lease-duration=" + restoreLeaseDuration.String(),
		"--leader-elect-renew-deadline=" + restoreRenewDeadline.String()}
}

// startInstance starts the kube-controller-manager or kube-scheduler instance called name, with
// the restore's leader-election timings; a restart (n > 0) gets a log file of its own.
func (s *scenario) startInstance(name string, n int) *harness.Component {
	o := harness.ComponentOptions{Variant: s.variant, Name: name, LogDir: s.logDir,
		Args: append([]string{"--controllers=endpoint", "--leader-elect=true"}, restoreLeaseArgs()...)}
	if strings.HasPrefix(name, "scheduler-") {
		o.Component, o.Args = harness.KubeScheduler, append([]string{"--leader-elect=true"}, restoreLeaseArgs()...)
	}
	if n > 0 {
		o.Name = fmt.Sprintf("%s-restart-%d", name, n)
	}
	kubeconfig := s.writeKubeconfig(name, s.lb.frontend(name), name+"-token")
	return harness.StartComponent(s.t, &harness.ControlPlane{Kubeconfig: kubeconfig}, o)
}

// createNode creates the Node the fixtures' pods name, Ready and untainted, with room for pods.
func (s *scenario) createNode() {
	node, err := s.client.CoreV1().Nodes().Create(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: schedulerNode}})
	if err != nil {
		s.t.Fatal(err)
	}
	// The apiserver taints a new Node not-ready (admission plugin TaintNodesByCondition) until
	// the node lifecycle controller, which does not run here, sees it Ready.
	node.Spec.Taints = nil
	if node, err = s.client.CoreV1().Nodes().Update(node); err != nil {
		s.t.Fatal(err)
	}
	capacity := v1.ResourceList{
		v1.ResourceCPU:    resource.MustParse("4"),
		v1.ResourceMemory: resource.MustParse("8Gi"),
		v1.ResourcePods:   resource.MustParse("300"),
	}
	node.Status = v1.NodeStatus{
		Capacity: capacity, Allocatable: capacity,
		Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
	}
	if _, err := s.client.CoreV1().Nodes().UpdateStatus(node); err != nil {
		s.t.Fatal(err)
	}
}

// createUnscheduledPod creates a pod for the scheduler to place and returns its name.
func (s *scenario) createUnscheduledPod(name string) string {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "k8s.gcr.io/pause:3.1"}}},
	}
	if _, err := s.client.CoreV1().Pods(namespace).Create(pod); err != nil {
		s.t.Fatal(err)
	}
	return name
}

// createChurnPod creates a pod, bound to the node and in no Service, for the scenario to change.
func (s *scenario) createChurnPod() string {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "churn"},
		Spec:       v1.PodSpec{NodeName: schedulerNode, Containers: []v1.Container{{Name: "c", Image: "k8s.gcr.io/pause:3.1"}}},
	}
	if _, err := s.client.CoreV1().Pods(namespace).Create(pod); err != nil {
		s.t.Fatal(err)
	}
	return pod.Name
}

// waitScheduled waits until the pod is bound to a node.
func (s *scenario) waitScheduled(name string, timeout time.Duration) {
	if err := wait.PollImmediate(200*time.Millisecond, timeout, func() (bool, error) {
		pod, err := s.client.CoreV1().Pods(namespace).Get(name, metav1.GetOptions{})
		return err == nil && pod.Spec.NodeName != "", nil
	}); err != nil {
		s.t.Fatalf("pod %s not scheduled within %v", name, timeout)
	}
}

// backupEtcd copies etcd's data directory and returns the copy. etcd is frozen (SIGSTOP) while
// the copy is made, so the copy is what a crash at that instant would leave, which etcd recovers
// from; the apiservers and the instances notice nothing more than a slow request. (Stopping etcd
// instead makes each apiserver's watch cache start over some seconds later, which restarts
// the instances' watches at a moment of its choosing.)
func (s *scenario) backupEtcd() string {
	if err := syscall.Kill(s.etcdProc.Pid(), syscall.SIGSTOP); err != nil {
		s.t.Fatal(err)
	}
	backup := filepath.Join(s.dir, "etcd-backup")
	out, err := exec.Command("cp", "-a", s.etcdDir, backup).CombinedOutput()
	if err := syscall.Kill(s.etcdProc.Pid(), syscall.SIGCONT); err != nil {
		s.t.Fatal(err)
	}
	if err != nil {
		s.t.Fatalf("copying %s: %v\n%s", s.etcdDir, err, out)
	}
	return backup
}

// restoreEtcd restores the backup as kubeadm's and etcd's guides have it: the apiservers stopped,
// etcd stopped, its data directory replaced by the backup, etcd started, the apiservers started.
// The components keep running. Meanwhile the load balancer refuses the instances' connections
// and resets those they had, as a stopped local apiserver does: an apiserver going away by itself
// leaves a moment in which a connection is accepted and then dropped, on which stock's reflector
// relists at resourceVersion 0 and catches the restored state by luck (as it did here through a
// load balancer that stays up and drops what it cannot forward; patch 0006 never relists at 0).
//
// It returns how long the instances could reach no apiserver. Apiserver A, to which the load
// balancer sends them, starts first and the frontends open with it; B starts after. A leader that
// reaches no apiserver for restoreRenewDeadline gives its lease up and exits for that reason: the
// test fails then, naming the time, instead of counting that exit as the restore noticed.
func (s *scenario) restoreEtcd(backup string) time.Duration {
	downAt := time.Now()
	s.lb.down()
	for _, a := range s.apiservers {
		a.proc.Stop()
	}
	s.etcdProc.Stop()
	if out, err := exec.Command("rm", "-rf", s.etcdDir).CombinedOutput(); err != nil {
		s.t.Fatalf("removing %s: %v\n%s", s.etcdDir, err, out)
	}
	if out, err := exec.Command("cp", "-a", backup, s.etcdDir).CombinedOutput(); err != nil {
		s.t.Fatalf("restoring %s: %v\n%s", backup, err, out)
	}
	s.runEtcd()
	s.waitEtcd()
	s.startAPIServer(s.apiservers[0])
	s.lb.up()
	away := time.Since(downAt)
	for _, a := range s.apiservers[1:] {
		s.startAPIServer(a)
	}
	if away >= restoreRenewDeadline {
		s.t.Fatalf("the instances reached no apiserver for %.1f s, longer than the renew deadline (%v): their leaders gave up their leases for that, not for the restore", away.Seconds(), restoreRenewDeadline)
	}
	return away
}
