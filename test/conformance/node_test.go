package conformance

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/idc-lts/kube-1.17/test/kubeadmnode"
)

// Images of the conformance tests (make conformance-images) the node check runs.
const (
	busyboxImage = "docker.io/library/busybox:1.29"
	agnhostImage = "gcr.io/kubernetes-e2e-test-images/agnhost:2.8"
)

// TestConformanceNodeUp (M2 and M3 of docs/conformance-plan.md, and issue #47's second node):
// the cluster the conformance tests run on comes up, each node in a network namespace of its
// own, and what they rely on works there: nothing is routed out of any node, a pod on each node
// resolves a Service's name through CoreDNS, a pod on the worker reaches one on the control
// plane's node through a ClusterIP that kube-proxy programs, seen under its own address (no
// masquerading between pods), and a pod's log outlives the other kubelet's container garbage
// collection (which deletes the log directories of pods it does not know). The teardown leaves
// the host's links and routes as they were.
func TestConformanceNodeUp(t *testing.T) {
	kubeadmnode.ClaimMachine(t)
	c := startCluster(t, nil)
	master, worker := c.nodes[0], c.nodes[len(c.nodes)-1]
	for _, node := range c.nodes {
		t.Logf("node %s runs in %s at %s, reached only through the namespace", node.Name, node.NetNS.Path, node.IP)
		if out, _ := node.NetNS.Command("ip", "route", "get", "8.8.8.8").CombinedOutput(); !strings.Contains(string(out), "Network is unreachable") {
			t.Errorf("inside %s's namespace 8.8.8.8 is routed: %s", node.Name, out)
		}
	}
	// A kubelet collects containers every minute; the pod's log must still be there after one.
	keeper := c.startLogKeeper(t, master.Name)

	for _, node := range c.nodes {
		lookup, _ := c.runPod(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "dns-check-" + node.Name},
			Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "c", Image: busyboxImage,
				Command: []string{"nslookup", "kubernetes.default.svc.cluster.local"}}}}}, 2*time.Minute)
		if !strings.Contains(lookup, "10.96.0.1") {
			t.Errorf("on %s, CoreDNS did not resolve kubernetes.default.svc.cluster.local to 10.96.0.1:\n%s", node.Name, lookup)
		}
	}

	clusterIP := c.startServer(t, master.Name)
	seen, clientIP := c.runPod(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "service-check"},
		Spec: corev1.PodSpec{NodeName: worker.Name, Containers: []corev1.Container{{Name: "c", Image: agnhostImage,
			Command: []string{"curl", "-sS", "--max-time", "10", fmt.Sprintf("http://%s:8080/clientip", clusterIP)}}}}}, 2*time.Minute)
	if seen = strings.TrimSpace(seen); clientIP == "" || !strings.HasPrefix(seen, clientIP+":") {
		t.Errorf("through ClusterIP %s the server on %s saw %q, not the client pod's own address %s on %s", clusterIP, master.Name, seen, clientIP, worker.Name)
	} else {
		t.Logf("pod %s on %s reached a pod on %s through ClusterIP %s and was seen as %s", clientIP, worker.Name, master.Name, clusterIP, seen)
	}

	if wait := time.Until(keeper.started.Add(70 * time.Second)); wait > 0 {
		time.Sleep(wait)
	}
	if log := c.podLog(t, keeper.name); !strings.Contains(log, keeper.line) {
		t.Errorf("%.0f s after it started, pod %s on %s has lost its log (a kubelet deleted it?): %q", time.Since(keeper.started).Seconds(), keeper.name, master.Name, log)
	}
}

// logKeeper is a pod that wrote one line to its log and sleeps.
type logKeeper struct {
	name, line string
	started    time.Time
}

// startLogKeeper runs a logKeeper on node and waits until it runs.
func (c *cluster) startLogKeeper(t *testing.T, node string) logKeeper {
	k := logKeeper{name: "log-keeper", line: "kept since the start"}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: k.name},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: busyboxImage,
			Command: []string{"sh", "-c", "echo " + k.line + "; exec sleep 3600"}}}}}
	if _, err := c.client.CoreV1().Pods("default").Create(pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.client.CoreV1().Pods("default").Delete(k.name, metav1.NewDeleteOptions(0)) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := kubeadmnode.WaitFor(ctx, time.Second, func() (bool, error) {
		p, err := c.client.CoreV1().Pods("default").Get(k.name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	})
	if err != nil {
		t.Fatalf("pod %s never ran: %v", k.name, err)
	}
	k.started = time.Now()
	return k
}

// startServer runs agnhost netexec on node behind a Service and returns the Service's ClusterIP
// once the server is ready.
func (c *cluster) startServer(t *testing.T, node string) string {
	labels := map[string]string{"app": "netexec"}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "netexec", Labels: labels},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: agnhostImage,
			Args:           []string{"netexec", "--http-port=8080"},
			ReadinessProbe: &corev1.Probe{Handler: corev1.Handler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt(8080)}}}}}}}
	if _, err := c.client.CoreV1().Pods("default").Create(pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.client.CoreV1().Pods("default").Delete(pod.Name, metav1.NewDeleteOptions(0)) })
	svc, err := c.client.CoreV1().Services("default").Create(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "netexec"},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 8080}}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = kubeadmnode.WaitFor(ctx, time.Second, func() (bool, error) {
		ep, err := c.client.CoreV1().Endpoints("default").Get(svc.Name, metav1.GetOptions{})
		return err == nil && len(ep.Subsets) == 1 && len(ep.Subsets[0].Addresses) == 1, err
	})
	if err != nil {
		t.Fatalf("the netexec Service never had its pod ready: %v", err)
	}
	return svc.Spec.ClusterIP
}
