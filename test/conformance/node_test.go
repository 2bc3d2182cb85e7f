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

// TestConformanceNodeUp (M2 and M3 of docs/conformance-plan.md): the one-node cluster the
// conformance tests run on comes up in a network namespace of its own, and what they rely on
// works there: nothing is routed out, a pod resolves a Service's name through CoreDNS, and a pod
// reaches another through a ClusterIP that kube-proxy programs, seen under its own address (no
// masquerading between pods). The teardown leaves the host's links and routes as they were.
func TestConformanceNodeUp(t *testing.T) {
	kubeadmnode.ClaimMachine(t)
	c := startCluster(t, nil)
	t.Logf("the cluster runs in %s at %s, reached only through the namespace", c.ns.Path, nodeIP)
	if out, _ := c.ns.Command("ip", "route", "get", "8.8.8.8").CombinedOutput(); !strings.Contains(string(out), "Network is unreachable") {
		t.Errorf("inside the node's namespace 8.8.8.8 is routed: %s", out)
	}

	lookup, _ := c.runPod(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "dns-check"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: busyboxImage,
			Command: []string{"nslookup", "kubernetes.default.svc.cluster.local"}}}}}, 2*time.Minute)
	if !strings.Contains(lookup, "10.96.0.1") {
		t.Errorf("CoreDNS did not resolve kubernetes.default.svc.cluster.local to 10.96.0.1:\n%s", lookup)
	}

	clusterIP := c.startServer(t)
	seen, clientIP := c.runPod(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "service-check"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: agnhostImage,
			Command: []string{"curl", "-sS", "--max-time", "10", fmt.Sprintf("http://%s:8080/clientip", clusterIP)}}}}}, 2*time.Minute)
	if seen = strings.TrimSpace(seen); clientIP == "" || !strings.HasPrefix(seen, clientIP+":") {
		t.Errorf("through ClusterIP %s the server saw %q, not the client pod's own address %s", clusterIP, seen, clientIP)
	} else {
		t.Logf("pod %s reached a pod through ClusterIP %s and was seen as %s", clientIP, clusterIP, seen)
	}
}

// startServer runs agnhost netexec behind a Service and returns the Service's ClusterIP once the
// server is ready.
func (c *cluster) startServer(t *testing.T) string {
	labels := map[string]string{"app": "netexec"}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "netexec", Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: agnhostImage,
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
