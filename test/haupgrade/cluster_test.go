package haupgrade

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/idc-lts/kube-1.17/test/debpkg"
	"github.com/idc-lts/kube-1.17/test/harness"
	"github.com/idc-lts/kube-1.17/test/kubeadmnode"
)

// masterSpec is one master's place: its Node, run directory and address on the switch.
type masterSpec struct {
	name, runDir, ip string
}

// masters are the cluster's three masters, the one kubeadm init runs on first.
var masters = []masterSpec{
	{name: "idc-lts-ha-1", runDir: "/run/idc-lts-ha-1", ip: "10.240.0.2"},
	{name: "idc-lts-ha-2", runDir: "/run/idc-lts-ha-2", ip: "10.240.0.3"},
	{name: "idc-lts-ha-3", runDir: "/run/idc-lts-ha-3", ip: "10.240.0.4"},
}

const (
	// netDir holds the switch's and the load balancer's namespace files.
	netDir     = "/run/idc-lts-ha"
	switchFile = netDir + "/switch"
	lbFile     = netDir + "/lb"
	lbIP       = "10.240.0.10"
	// endpoint is the load balancer's address: kubeadm's controlPlaneEndpoint, which every
	// kubeconfig of the cluster names.
	endpoint = lbIP + ":6443"
)

func (s masterSpec) netNSFile() string { return filepath.Join(s.runDir, "netns") }

// nodeNets are the masters' places on the switch (no pod network: the workload is hostNetwork).
func nodeNets() []kubeadmnode.NodeNet {
	var nets []kubeadmnode.NodeNet
	for i, m := range masters {
		nets = append(nets, kubeadmnode.NodeNet{File: m.netNSFile(), IP: m.ip, PodNet: fmt.Sprintf("10.244.%d.0/24", i)})
	}
	return nets
}

// masterConfig is master i's: its own hostname (the components' leader identities begin with it),
// and after the first its own pod logs and log directory.
func masterConfig(t *testing.T, i int) kubeadmnode.Config {
	m := masters[i]
	return kubeadmnode.Config{Name: m.name, Marker: "idc-lts-ha",
		Dir: filepath.Join(harness.OutputDir(t), "ha-upgrade", m.name), RunDir: m.runDir, Cgroup: m.name, Runtime: "idc-lts-ha-runc",
		NetNS: &kubeadmnode.NetNS{Path: m.netNSFile()}, NodeIP: m.ip, ControlPlaneEndpoint: endpoint,
		OwnHostname: true, OwnPodLogs: i > 0, LogDir: filepath.Join(harness.LogDir(t), m.name)}
}

// cluster is the three masters and the load balancer in front of them.
type cluster struct {
	masters []*kubeadmnode.Node
	lbNS    *kubeadmnode.NetNS
	lb      *kubeadmnode.LoadBalancer
	// client reaches the apiservers through the load balancer, as an operator's kubectl does.
	client kubernetes.Interface
	config *rest.Config
}

// startCluster cleans up after a killed run and brings the cluster up (each master trusting and
// reaching registry, if given): the switch, each master's
// namespace and the load balancer's; haproxy; the first master by kubeadm's init phases, then
// its kubeadm-config uploaded; each other master by kubeadm's control-plane join phases around
// its kubelet's start. Every kubelet is upstream's Debian package. Its cleanup tears all of it
// down and fails the test if the host's links, routes, mounts or top-level cgroups differ from before.
func startCluster(t *testing.T, registry *harness.Registry) *cluster {
	harness.Binary(t, "stock", "kubectl")
	cleanLeftovers(t)
	// After the leftovers of a killed run are gone: the host as this run finds it.
	hostBefore, err := kubeadmnode.TakeHostSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{}
	t.Cleanup(func() {
		for i := len(c.masters) - 1; i >= 0; i-- {
			c.masters[i].Teardown(t)
		}
		if c.lb != nil {
			c.lb.Process.Stop()
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
	if c.lbNS, err = createNetworks(); err != nil {
		t.Fatal(err)
	}
	for i := range masters {
		c.masters = append(c.masters, kubeadmnode.New(t, masterConfig(t, i)))
	}
	var backends [][2]string
	for _, m := range masters {
		backends = append(backends, [2]string{m.name, m.ip + ":6443"})
	}
	c.lb = kubeadmnode.StartLoadBalancer(t, c.lbNS, harness.LogDir(t), endpoint, backends)

	first := c.masters[0]
	first.KubeadmInit(t)
	for _, m := range c.masters {
		m.RecordHostState(t) // before any kubelet runs
	}
	upstreamPackage := debpkg.Build(t, "stock", t.TempDir())
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	startKubelet := func(m *kubeadmnode.Node) {
		m.StartDockerd(t)
		m.LoadControlPlaneImages(t)
		if registry != nil {
			// The registry, a loopback address of the host, carried into the master's namespace
			// under the same address.
			m.TrustRegistry(t, registry)
			if err := m.NetNS.Forward(registry.Host, stop); err != nil {
				t.Fatal(err)
			}
		}
		if out, err := m.InstallKubeletPackage(t, upstreamPackage); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		m.StartKubelet(t)
	}
	startKubelet(first)
	c.config = first.RestConfig(t)
	c.config.Dial = c.lbNS.DialContext // the load balancer's own address, from its namespace
	c.client = kubernetes.NewForConfigOrDie(c.config)
	if err := c.waitControlPlane(first); err != nil {
		t.Fatalf("setup: the first master's control plane: %v\n%s", err, first.Kubelet.Tail(20))
	}
	// What kubeadm init does next on a real master, and the joins read: the cluster's
	// configuration (kubeadm-config, the kubelets' config) and cluster-info, with the RBAC that
	// lets nodes read them.
	first.KubeadmPhase(t, "upload-config", "all")
	first.KubeadmPhase(t, "bootstrap-token")
	for _, m := range c.masters[1:] {
		m.PrepareControlPlaneJoin(t, first)
		startKubelet(m)
		m.JoinEtcd(t)
		if err := c.waitControlPlane(m); err != nil {
			t.Fatalf("setup: %s's control plane: %v\n%s", m.Name, err, m.Kubelet.Tail(20))
		}
	}
	return c
}

// components are a master's static pods.
var components = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// waitControlPlane waits up to 5 minutes until m's Node is Ready and its four mirror pods run
// and are ready.
func (c *cluster) waitControlPlane(m *kubeadmnode.Node) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return kubeadmnode.WaitFor(ctx, time.Second, func() (bool, error) {
		node, err := c.client.CoreV1().Nodes().Get(m.Name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("node %s: %v", m.Name, err)
		}
		if !ready(node.Status.Conditions) {
			return false, fmt.Errorf("node %s is not Ready", m.Name)
		}
		for _, component := range components {
			name := component + "-" + m.Name
			pod, err := c.client.CoreV1().Pods("kube-system").Get(name, metav1.GetOptions{})
			if err != nil {
				return false, fmt.Errorf("mirror pod %s: %v", name, err)
			}
			if pod.Status.Phase != corev1.PodRunning || len(pod.Status.ContainerStatuses) != 1 || !pod.Status.ContainerStatuses[0].Ready {
				return false, fmt.Errorf("mirror pod %s is %s, not ready", name, pod.Status.Phase)
			}
		}
		return true, nil
	})
}

func ready(conditions []corev1.NodeCondition) bool {
	for _, c := range conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// etcdMembers are the names of the cluster's etcd members, sorted, as the first master's etcd
// lists them (its healthcheck client's certificate, dialled into its namespace).
func (c *cluster) etcdMembers(ctx context.Context) ([]string, error) {
	first := c.masters[0]
	tlsInfo := transport.TLSInfo{TrustedCAFile: first.Path("etc/kubernetes/pki/etcd/ca.crt"),
		CertFile: first.Path("etc/kubernetes/pki/etcd/healthcheck-client.crt"), KeyFile: first.Path("etc/kubernetes/pki/etcd/healthcheck-client.key")}
	tlsConfig, err := tlsInfo.ClientConfig()
	if err != nil {
		return nil, err
	}
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{"https://" + first.IP + ":2379"}, TLS: tlsConfig,
		DialTimeout: 10 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return first.NetNS.DialContext(ctx, "tcp", addr)
		})}})
	if err != nil {
		return nil, err
	}
	defer client.Close()
	list, err := client.MemberList(ctx)
	if err != nil {
		return nil, fmt.Errorf("etcd member list: %v", err)
	}
	var names []string
	for _, m := range list.Members {
		names = append(names, m.Name)
	}
	sort.Strings(names)
	return names, nil
}

// createNetworks creates the masters' run directories and namespaces on the switch
// (kubeadmnode.CreateNetwork), and the load balancer's namespace plugged into it.
func createNetworks() (*kubeadmnode.NetNS, error) {
	for _, dir := range []string{netDir, masters[0].runDir, masters[1].runDir, masters[2].runDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	}
	if err := kubeadmnode.CreateNetwork(switchFile, nodeNets()); err != nil {
		return nil, err
	}
	lb, err := kubeadmnode.CreateNetNS(lbFile, lbIP+"/24")
	if err != nil {
		return nil, err
	}
	return lb, lb.PlugInto(&kubeadmnode.NetNS{Path: switchFile}, "portlb")
}

// removeNetworks kills what still runs in the load balancer's namespace (haproxy), then removes
// it, the masters' namespaces and the switch, and the empty run directories.
func removeNetworks() error {
	lb := &kubeadmnode.NetNS{Path: lbFile}
	var errs []error
	if _, err := lb.KillProcesses(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, lb.Remove(), kubeadmnode.RemoveNetwork(switchFile, nodeNets()))
	for _, dir := range []string{masters[0].runDir, masters[1].runDir, masters[2].runDir, netDir} {
		if err := os.Remove(dir); err != nil && !os.IsNotExist(err) && !errors.Is(err, syscall.ENOTEMPTY) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// cleanLeftovers tears down what a killed run left: the masters (the last first), then the
// namespaces and the switch.
func cleanLeftovers(t *testing.T) {
	for i := len(masters) - 1; i >= 0; i-- {
		kubeadmnode.New(t, masterConfig(t, i)).CleanLeftovers(t)
	}
	if err := removeNetworks(); err != nil {
		t.Fatal(err)
	}
}

// TestHAClusterClean (make ha-cluster-clean) removes what a killed run left, as the next run
// would first.
func TestHAClusterClean(t *testing.T) {
	kubeadmnode.ClaimMachine(t)
	cleanLeftovers(t)
}

// TestHAClusterUp: the three masters run, each its four static pods ready; each apiserver is in
// default/kubernetes; etcd has three members; each elected component leads from one master and
// its identity begins with that master's hostname.
func TestHAClusterUp(t *testing.T) {
	kubeadmnode.ClaimMachine(t)
	c := startCluster(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// Each apiserver adds itself to default/kubernetes within its endpoint reconciler's 10 s.
	var addresses []string
	err := kubeadmnode.WaitFor(ctx, time.Second, func() (bool, error) {
		endpoints, err := c.client.CoreV1().Endpoints("default").Get("kubernetes", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		addresses = nil
		for _, subset := range endpoints.Subsets {
			for _, a := range subset.Addresses {
				addresses = append(addresses, a.IP)
			}
		}
		return len(addresses) == len(masters), fmt.Errorf("default/kubernetes lists %d apiservers (%v), want %d", len(addresses), addresses, len(masters))
	})
	if err != nil {
		t.Error(err)
	}
	t.Logf("default/kubernetes lists %v", addresses)
	members, err := c.etcdMembers(ctx)
	if err != nil {
		t.Error(err)
	}
	t.Logf("etcd members: %v", members)
	if want := []string{masters[0].name, masters[1].name, masters[2].name}; strings.Join(members, " ") != strings.Join(want, " ") {
		t.Errorf("etcd members %v, want %v", members, want)
	}
	for _, lock := range []string{"kube-controller-manager", "kube-scheduler"} {
		err := kubeadmnode.WaitFor(ctx, time.Second, func() (bool, error) {
			lease, err := c.client.CoordinationV1().Leases("kube-system").Get(lock, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if lease.Spec.HolderIdentity == nil {
				return false, fmt.Errorf("the Lease %s has no holder", lock)
			}
			for _, m := range masters {
				if strings.HasPrefix(*lease.Spec.HolderIdentity, m.name+"_") {
					t.Logf("%s leads from %s (%s)", lock, m.name, *lease.Spec.HolderIdentity)
					return true, nil
				}
			}
			return false, fmt.Errorf("the Lease %s is held by %q, which names no master's hostname", lock, *lease.Spec.HolderIdentity)
		})
		if err != nil {
			t.Error(err)
		}
	}
	// What the roll's observer asks each instance: one leader per component, on the master its
	// Lease names.
	clients, err := metricsClients(c.config, c.masters)
	if err != nil {
		t.Fatal(err)
	}
	for _, component := range elected {
		var leaders []string
		for _, m := range clients {
			if leads(ctx, m.client, metricsPorts[component], component) {
				leaders = append(leaders, m.master)
			}
		}
		t.Logf("%s: leader_election_master_status 1 on %v", component, leaders)
		if len(leaders) != 1 {
			t.Errorf("%s: %d instances report leading (%v), want 1", component, len(leaders), leaders)
		}
	}
}
