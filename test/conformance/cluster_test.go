package conformance

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/idc-lts/kube-1.17/test/debpkg"
	"github.com/idc-lts/kube-1.17/test/harness"
	"github.com/idc-lts/kube-1.17/test/kubeadmnode"
)

// The conformance cluster's nodes: each its own network namespace, run directory and cgroup, so
// that none touches test/e2e's (both suites hold the same machine lock: they share the host's
// /var/log/pods, which the first node uses and the second hides behind its own).
type nodeSpec struct {
	name   string // not ending in "master": the 1.17 scheduler tests skip such nodes
	runDir string
	ip     string
	// podNet is the node's share of kubeadm's podSubnet (10.244.0.0/16), handed out by its CNI
	// bridge plugin; kube-proxy's clusterCIDR is the whole podSubnet.
	podNet string
}

// nodeSpecs are the cluster's nodes, the control plane's first; conformance needs two (a
// DaemonSet test asks for more than one schedulable node).
var nodeSpecs = []nodeSpec{
	{name: "idc-lts-conf-node", runDir: "/run/idc-lts-conf", ip: "10.240.0.2", podNet: "10.244.0.0/24"},
	{name: "idc-lts-conf-worker", runDir: "/run/idc-lts-conf-worker", ip: "10.240.0.3", podNet: "10.244.1.0/24"},
}

const (
	serviceNet = "10.96.0.0/12"
	clusterDNS = "10.96.0.10"
	// switchFile is the namespace that links the nodes' namespaces (and nothing else).
	switchFile = "/run/idc-lts-conf/switch"
)

// netNSFile is the file node's network namespace is bound to.
func (s nodeSpec) netNSFile() string { return filepath.Join(s.runDir, "netns") }

// cniPlugins are the CNI plugins v0.8.5 (make conformance-build) the node's network uses.
var cniPlugins = []string{"bridge", "host-local", "loopback", "portmap"}

// kubeProxyConfig is the KubeProxyConfiguration kubeadm deploys: iptables mode, and no conntrack
// sizing, which in a network namespace would write the machine-wide nf_conntrack hashsize
// (kind runs kube-proxy so too).
const kubeProxyConfig = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
conntrack:
  maxPerCore: 0
`

// nodeConfig is the conformance node i's. Its kubelet is kubeadm's (webhook authentication and
// authorization, cluster DNS at kubeadm's address) with a CNI network in the namespace: a bridge
// with the pods' gateway and no masquerading, and a resolv.conf naming an address where nothing
// answers, so that CoreDNS forwards nothing anywhere. Every node after the first keeps its pod
// logs to itself and logs into a directory of its own.
func nodeConfig(t *testing.T, i int) kubeadmnode.Config {
	spec := nodeSpecs[i]
	dir := filepath.Join(harness.OutputDir(t), "conformance", spec.name)
	root := filepath.Join(dir, "root")
	logDir := ""
	if i > 0 {
		logDir = filepath.Join(harness.LogDir(t), spec.name)
	}
	return kubeadmnode.Config{Name: spec.name, Marker: "idc-lts-conf",
		Dir: dir, RunDir: spec.runDir, Cgroup: spec.name, Runtime: "idc-lts-conf-runc",
		NetNS: &kubeadmnode.NetNS{Path: spec.netNSFile()}, NodeIP: spec.ip, KubeadmConfig: kubeProxyConfig,
		OwnPodLogs: i > 0, LogDir: logDir,
		KubeletArgs: []string{
			// The namespace is the node's own: the kubelet listens where a node's does, and keeps
			// the iptables chains kube-proxy's rules jump to.
			"--address=0.0.0.0", "--port=10250", "--healthz-port=10248",
			"--make-iptables-util-chains=true",
			"--anonymous-auth=false", "--authentication-token-webhook=true", "--authorization-mode=Webhook",
			"--client-ca-file=" + filepath.Join(root, "etc/kubernetes/pki/ca.crt"),
			"--network-plugin=cni",
			"--cni-bin-dir=" + filepath.Join(root, "opt/cni/bin"),
			"--cni-conf-dir=" + filepath.Join(root, "etc/cni/net.d"),
			"--cni-cache-dir=" + filepath.Join(root, "var/lib/cni/cache"),
			"--cluster-dns=" + clusterDNS, "--cluster-domain=cluster.local",
			"--resolv-conf=" + filepath.Join(root, "etc/resolv.conf"),
		}}
}

// cniConfig is the node's pod network: the bridge plugin (br_netfilter is per namespace, so
// kube-proxy's rules see bridged traffic) with host-local addresses kept in the node's root.
func cniConfig(root, podNet string) string {
	return fmt.Sprintf(`{
  "cniVersion": "0.3.1",
  "name": "idc-lts-conf",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "subnet": %q, "routes": [{"dst": "0.0.0.0/0"}],
              "dataDir": %q}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, podNet, filepath.Join(root, "var/lib/cni/networks"))
}

// cluster is the cluster the conformance tests run on.
type cluster struct {
	// node is the control plane's, nodes all of them (node first).
	node   *kubeadmnode.Node
	nodes  []*kubeadmnode.Node
	ns     *kubeadmnode.NetNS
	client kubernetes.Interface
	// work holds what the test runs write besides their logs.
	work string
}

// startCluster cleans up after a killed run and brings the nodes up, each in a network namespace
// of its own, linked by a switch that leads nowhere else: on the first a static control plane by
// kubeadm's init phases, the second joined to it; CNI, kube-proxy and CoreDNS by kubeadm's addon
// phases, the control-plane taint removed. Its cleanup tears it all down and fails the test if
// the host's links, routes, mounts or top-level cgroups differ from before. The first node
// trusts ours's registry, if given. The caller has claimed the machine (kubeadmnode.ClaimMachine).
func startCluster(t *testing.T, ours *ourRelease) *cluster {
	images := conformanceImages(t)
	for _, plugin := range cniPlugins {
		harness.Binary(t, "conformance", plugin)
	}
	harness.Binary(t, "stock", "kubectl")

	cleanLeftovers(t)
	// After the leftovers of a killed run are gone: the host as this run finds it.
	hostBefore, err := kubeadmnode.TakeHostSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	var nodes []*kubeadmnode.Node
	t.Cleanup(func() {
		// The worker first: its kubelet's changes to the host's kernel parameters were
		// recorded after the first node's, which puts back what was there before either.
		for i := len(nodes) - 1; i >= 0; i-- {
			nodes[i].Teardown(t)
		}
		if err := removeNetworks(); err != nil {
			t.Errorf("teardown: %v", err)
		}
		if after, err := kubeadmnode.TakeHostSnapshot(); err != nil {
			t.Errorf("teardown: %v", err)
		} else if changes := hostBefore.Changes(after); len(changes) > 0 {
			t.Errorf("teardown: the host's links, routes, mounts or cgroups differ from before the run:\n%s", strings.Join(changes, "\n"))
		}
	})
	if err := createNetworks(); err != nil {
		t.Fatal(err)
	}
	for i := range nodeSpecs {
		nodes = append(nodes, kubeadmnode.New(t, nodeConfig(t, i)))
	}
	master := nodes[0]
	master.KubeadmInit(t)
	for i, node := range nodes {
		if i > 0 {
			node.KubeadmJoin(t, master)
		}
		// Before any kubelet runs: each node records the host as it was.
		node.RecordHostState(t)
	}
	for i, node := range nodes {
		writeNodeFiles(t, node, nodeSpecs[i])
		node.StartDockerd(t)
		if i == 0 {
			node.LoadControlPlaneImages(t)
		} else {
			node.LoadSandboxImage(t)
		}
		node.LoadImages(t, images...)
	}
	if ours != nil {
		master.TrustRegistry(t, ours.registry)
	}
	// Each node's kubelet comes from upstream's package layout at 1.17.3-00 (build/deb.sh stock),
	// as on our users' nodes; ours replaces it for the ours run (swapKubelets).
	upstreamPackage := debpkg.Build(t, "stock", t.TempDir())
	for _, node := range nodes {
		if out, err := node.InstallKubeletPackage(t, upstreamPackage); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		node.StartKubelet(t)
	}

	c := &cluster{node: master, nodes: nodes, ns: master.NetNS, client: kubernetes.NewForConfigOrDie(master.RestConfig(t))}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c.waitControlPlane(ctx, t)
	c.deployAddons(ctx, t)
	return c
}

// nodeNets are the nodes' places on the switch.
func nodeNets() []kubeadmnode.NodeNet {
	var nets []kubeadmnode.NodeNet
	for _, spec := range nodeSpecs {
		nets = append(nets, kubeadmnode.NodeNet{File: spec.netNSFile(), IP: spec.ip, PodNet: spec.podNet})
	}
	return nets
}

// createNetworks creates each node's run directory, network namespace and the switch between
// them (kubeadmnode.CreateNetwork), the Service CIDR routed on each node's link.
func createNetworks() error {
	for _, spec := range nodeSpecs {
		if err := os.MkdirAll(spec.runDir, 0o700); err != nil {
			return err
		}
	}
	return kubeadmnode.CreateNetwork(switchFile, nodeNets(), serviceNet)
}

// removeNetworks removes the nodes' namespaces and the switch (each node's teardown has killed
// what ran in its namespace).
func removeNetworks() error {
	errs := []error{kubeadmnode.RemoveNetwork(switchFile, nodeNets())}
	for _, spec := range nodeSpecs {
		// A node's teardown removes its run directory; one that failed before the nodes existed
		// leaves it empty.
		if err := os.Remove(spec.runDir); err != nil && !os.IsNotExist(err) && !errors.Is(err, syscall.ENOTEMPTY) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// cleanLeftovers tears down what a killed run left: the nodes (the worker first), every process
// still in their network namespaces (whose files live in their run directories), then the
// namespaces and the switch.
func cleanLeftovers(t *testing.T) {
	for i := len(nodeSpecs) - 1; i >= 0; i-- {
		kubeadmnode.New(t, nodeConfig(t, i)).CleanLeftovers(t)
	}
	if err := removeNetworks(); err != nil {
		t.Fatal(err)
	}
}

// TestConformanceClean (make conformance-clean) removes what a killed conformance run left, as
// the next run would first.
func TestConformanceClean(t *testing.T) {
	kubeadmnode.ClaimMachine(t)
	cleanLeftovers(t)
}

// conformanceImages are make conformance-images' archives (images.txt lists what it built).
func conformanceImages(t *testing.T) []string {
	dir := filepath.Join(harness.OutputDir(t), "images", "conformance")
	list, err := os.ReadFile(filepath.Join(dir, "images.txt"))
	if err != nil {
		t.Fatalf("no conformance images: %v (run 'make conformance-images')", err)
	}
	archives, err := filepath.Glob(filepath.Join(dir, "*.docker.tar"))
	if err != nil || len(archives) == 0 || len(archives) != len(strings.Split(strings.TrimSpace(string(list)), "\n")) {
		t.Fatalf("%s lists other images than the %d archives there (run 'make conformance-images')", dir, len(archives))
	}
	return archives
}

// writeNodeFiles writes what the kubelet reads at start besides kubeadm's files: the CNI plugins
// and network, and the resolv.conf that it gives CoreDNS (a nameserver that does not answer).
func writeNodeFiles(t *testing.T, node *kubeadmnode.Node, spec nodeSpec) {
	files := map[string]string{
		"etc/cni/net.d/10-idc-lts-conf.conflist": cniConfig(node.Root, spec.podNet),
		"etc/resolv.conf":                        "nameserver " + spec.ip + "\n",
	}
	for _, plugin := range cniPlugins {
		data, err := os.ReadFile(harness.Binary(t, "conformance", plugin))
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Join("opt/cni/bin", plugin)] = string(data)
	}
	for path, content := range files {
		if err := os.MkdirAll(filepath.Dir(node.Path(path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(node.Path(path), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// waitControlPlane waits for the static pods to run and both components to lead.
func (c *cluster) waitControlPlane(ctx context.Context, t *testing.T) {
	for _, component := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
		name := component + "-" + c.node.Name
		err := kubeadmnode.WaitFor(ctx, time.Second, func() (bool, error) {
			pod, err := c.client.CoreV1().Pods("kube-system").Get(name, metav1.GetOptions{})
			return err == nil && pod.Status.Phase == corev1.PodRunning, err
		})
		if err != nil {
			t.Fatalf("static pod %s: %v\n%s", name, err, c.node.Kubelet.Tail(10))
		}
	}
	for _, lease := range []string{"kube-controller-manager", "kube-scheduler"} {
		err := kubeadmnode.WaitFor(ctx, time.Second, func() (bool, error) {
			ep, err := c.client.CoreV1().Endpoints("kube-system").Get(lease, metav1.GetOptions{})
			return err == nil && strings.Contains(ep.Annotations["control-plane.alpha.kubernetes.io/leader"], "holderIdentity"), err
		})
		if err != nil {
			t.Fatalf("%s never led: %v", lease, err)
		}
	}
}

// holdPods is a quota that admits no new pod in kube-system while it exists.
const holdPods = "idc-lts-conf-hold"

// deployAddons runs kubeadm's addon phases as kubeadm init runs them, and leaves the control
// plane's node untainted, as kubeadm's docs say to for pods to run there: the conformance tests
// want two schedulable nodes. kube-proxy's DaemonSet mounts
// the host's /lib/modules, which dockerd would create on this machine: its pods are held back by
// a quota until that volume points into the node's root.
func (c *cluster) deployAddons(ctx context.Context, t *testing.T) {
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: holdPods},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}}
	if _, err := c.client.CoreV1().ResourceQuotas("kube-system").Create(quota); err != nil {
		t.Fatal(err)
	}
	c.node.KubeadmPhase(t, "addon", "kube-proxy")
	ds, err := c.client.AppsV1().DaemonSets("kube-system").Get("kube-proxy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := relocateHostPath(ds, "/lib/modules", c.node.Path("lib/modules")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.AppsV1().DaemonSets("kube-system").Update(ds); err != nil {
		t.Fatal(err)
	}
	if err := c.client.CoreV1().ResourceQuotas("kube-system").Delete(holdPods, nil); err != nil {
		t.Fatal(err)
	}
	// kubeadm's mark-control-plane phase (its label, and no taint: kubeadm's docs untaint a
	// master to schedule pods on it); the phase itself reads only /etc/kubernetes/admin.conf.
	if _, err := c.node.Kubectl(t, "label", "node", c.node.Name, "node-role.kubernetes.io/master="); err != nil {
		t.Fatal(err)
	}
	c.node.KubeadmPhase(t, "addon", "coredns")

	err = kubeadmnode.WaitFor(ctx, 2*time.Second, func() (bool, error) {
		for _, n := range c.nodes {
			node, err := c.client.CoreV1().Nodes().Get(n.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			ready := false
			for _, cond := range node.Status.Conditions {
				ready = ready || (cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue)
			}
			if !ready {
				return false, fmt.Errorf("node %s not ready", n.Name)
			}
		}
		proxy, err := c.client.AppsV1().DaemonSets("kube-system").Get("kube-proxy", metav1.GetOptions{})
		if err != nil || proxy.Status.NumberReady != int32(len(c.nodes)) {
			return false, fmt.Errorf("kube-proxy not ready (%v)", err)
		}
		dns, err := c.client.AppsV1().Deployments("kube-system").Get("coredns", metav1.GetOptions{})
		if err != nil || dns.Status.ReadyReplicas != *dns.Spec.Replicas {
			return false, fmt.Errorf("coredns not ready (%v)", err)
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("addons: %v\n%s", err, c.kubeletTails(20))
	}
}

// kubeletTails are the last n lines of each node's kubelet log.
func (c *cluster) kubeletTails(n int) string {
	var b strings.Builder
	for _, node := range c.nodes {
		fmt.Fprintf(&b, "%s's kubelet:\n%s\n", node.Name, node.Kubelet.Tail(n))
	}
	return b.String()
}

// relocateHostPath points the DaemonSet's hostPath volume of path at to.
func relocateHostPath(ds *appsv1.DaemonSet, path, to string) error {
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if v.HostPath != nil && v.HostPath.Path == path {
			v.HostPath.Path = to
			return os.MkdirAll(to, 0o755)
		}
	}
	return fmt.Errorf("DaemonSet %s has no hostPath volume %s", ds.Name, path)
}

// runPod runs a pod to completion in namespace "default" and returns its log and address; it
// fails the test if the pod does not succeed within the timeout.
func (c *cluster) runPod(t *testing.T, pod *corev1.Pod, timeout time.Duration) (log, ip string) {
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	if _, err := c.client.CoreV1().Pods("default").Create(pod); err != nil {
		t.Fatal(err)
	}
	defer c.client.CoreV1().Pods("default").Delete(pod.Name, metav1.NewDeleteOptions(0))
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var phase corev1.PodPhase
	err := kubeadmnode.WaitFor(ctx, time.Second, func() (bool, error) {
		p, err := c.client.CoreV1().Pods("default").Get(pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		phase, ip = p.Status.Phase, p.Status.PodIP
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
	})
	log = c.podLog(t, pod.Name)
	if err != nil || phase != corev1.PodSucceeded {
		t.Fatalf("pod %s: %s %v; its log:\n%s", pod.Name, phase, err, log)
	}
	return log, ip
}

// podLog reads a pod's log through the apiserver (and so the kubelet's authorization).
func (c *cluster) podLog(t *testing.T, name string) string {
	stream, err := c.client.CoreV1().Pods("default").GetLogs(name, &corev1.PodLogOptions{}).Stream()
	if err != nil {
		return err.Error()
	}
	defer stream.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, bufio.NewReader(stream))
	return b.String()
}
