package conformance

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/idc-lts/kube-1.17/test/harness"
	"github.com/idc-lts/kube-1.17/test/kubeadmnode"
)

// The conformance node: its own network namespace, run directory, cgroup and marker, so that it
// never touches test/e2e's (both hold the same machine lock: they share /var/log/pods).
const (
	nodeRunDir = "/run/idc-lts-conf"
	nodeIP     = "10.240.0.2"
	serviceNet = "10.96.0.0/12"
)

func nodeConfig(t *testing.T, ns *kubeadmnode.NetNS) kubeadmnode.Config {
	return kubeadmnode.Config{Name: "idc-lts-conf-node", Marker: "idc-lts-conf",
		Dir: filepath.Join(harness.OutputDir(t), "conformance", "node"), RunDir: nodeRunDir, Cgroup: "idc-lts-conf",
		Runtime: "idc-lts-conf-runc", NetNS: ns, NodeIP: nodeIP}
}

// TestConformanceNodeUp (M2 of docs/conformance-plan.md): the kubeadm node in a network namespace
// of its own comes up (its static control plane Running, both components leading), the test
// reaches its apiserver only by dialling into the namespace, nothing in the namespace is routed
// out, and the teardown leaves the host's links and routes as they were.
func TestConformanceNodeUp(t *testing.T) {
	kubeadmnode.ClaimMachine(t)
	hostBefore, err := kubeadmnode.HostNetwork()
	if err != nil {
		t.Fatal(err)
	}

	// A killed run's node first: its namespace file lives in its run directory.
	leftover := kubeadmnode.New(t, nodeConfig(t, &kubeadmnode.NetNS{Path: filepath.Join(nodeRunDir, "netns")}))
	leftover.CleanLeftovers(t)
	if err := os.MkdirAll(nodeRunDir, 0o700); err != nil {
		t.Fatal(err)
	}
	ns, err := kubeadmnode.CreateNetNS(filepath.Join(nodeRunDir, "netns"), nodeIP+"/24", serviceNet)
	if err != nil {
		t.Fatal(err)
	}
	node := kubeadmnode.New(t, nodeConfig(t, ns))
	t.Cleanup(func() {
		node.Teardown(t)
		if err := ns.Remove(); err != nil {
			t.Errorf("teardown: %v", err)
		}
		if after, err := kubeadmnode.HostNetwork(); err != nil || after != hostBefore {
			t.Errorf("teardown: the host's links or routes differ from before the run:\nbefore %s\nafter %s", hostBefore, after)
		}
	})
	node.KubeadmInit(t)
	node.RecordHostState(t)
	node.StartDockerd(t)
	node.LoadControlPlaneImages(t)
	node.StartKubelet(t)

	client := kubernetes.NewForConfigOrDie(node.RestConfig(t))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, c := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		name := c + "-" + node.Name
		err := kubeadmnode.WaitFor(ctx, time.Second, func() (bool, error) {
			pod, err := client.CoreV1().Pods("kube-system").Get(name, metav1.GetOptions{})
			return err == nil && pod.Status.Phase == corev1.PodRunning, err
		})
		if err != nil {
			t.Fatalf("static pod %s: %v\n%s", name, err, node.Kubelet.Tail(10))
		}
	}
	for _, lease := range []string{"kube-controller-manager", "kube-scheduler"} {
		err := kubeadmnode.WaitFor(ctx, time.Second, func() (bool, error) {
			ep, err := client.CoreV1().Endpoints("kube-system").Get(lease, metav1.GetOptions{})
			return err == nil && strings.Contains(ep.Annotations["control-plane.alpha.kubernetes.io/leader"], "holderIdentity"), err
		})
		if err != nil {
			t.Fatalf("%s never led: %v", lease, err)
		}
	}
	t.Logf("the node's control plane runs in %s at %s, reached only through the namespace", ns.Path, nodeIP)
	if out, _ := ns.Command("ip", "route", "get", "8.8.8.8").CombinedOutput(); !strings.Contains(string(out), "Network is unreachable") {
		t.Errorf("inside the node's namespace 8.8.8.8 is routed: %s", out)
	}
}
