package kubeadmnode

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/idc-lts/kube-1.17/test/harness"
)

// kubeadmPhases are the steps of `kubeadm init` that write a master's files, in its order. The
// others need a running kubelet under systemd (kubelet-start, wait-control-plane) or a cluster
// (upload-config, mark-control-plane, bootstrap-token, addon); a kubelet started by the test
// stands in for the first two.
var kubeadmPhases = [][]string{
	{"certs", "all"},
	{"kubeconfig", "all"},
	{"etcd", "local"},
	{"control-plane", "all"},
}

// KubeadmInit writes the master's PKI, kubeconfigs and static-pod manifests with kubeadm
// v1.17.3's own phases, chrooted into the master's root (--rootfs), then moves the manifests'
// hostPath volumes into that root.
func (n *Node) KubeadmInit(t *testing.T) {
	n.writeKubeadmConfig(t, initConfiguration(n.IP, n.Name)+"---\n"+n.clusterConfiguration())
	for _, phase := range kubeadmPhases {
		if err := n.rootfsPhase(t, "kubeadm-"+strings.Join(phase, "-")+".log", phase...); err != nil {
			t.Fatalf("setup: %v", err)
		}
	}
	manifests, err := filepath.Glob(n.Path("etc/kubernetes/manifests/*.yaml"))
	if err != nil || len(manifests) != 4 {
		t.Fatalf("setup: kubeadm wrote %d manifests (%v), want 4", len(manifests), err)
	}
	for _, manifest := range manifests {
		if err := relocateHostPaths(manifest, n.Root); err != nil {
			t.Fatalf("setup: %v", err)
		}
	}
}

// KubeadmJoin gives the node what `kubeadm join` leaves a worker of master's cluster: the
// cluster's CA certificate and a kubelet.conf for the node's own identity (system:node:<Name>),
// written by kubeadm v1.17.3's kubeconfig phase with the master's CA, whose key the node then
// deletes again. It stands in for join's TLS bootstrap, which waits for a kubelet under systemd;
// what the kubelet ends up with is the same.
func (n *Node) KubeadmJoin(t *testing.T, master *Node) {
	n.writeKubeadmConfig(t, initConfiguration(master.IP, n.Name))
	pki := n.Path("etc/kubernetes/pki")
	for _, file := range []string{"ca.crt", "ca.key"} {
		copyFile(t, master.Path("etc/kubernetes/pki/"+file), filepath.Join(pki, file))
	}
	err := n.rootfsPhase(t, "kubeadm-join.log", "kubeconfig", "kubelet")
	if removeErr := os.Remove(filepath.Join(pki, "ca.key")); removeErr != nil {
		t.Fatalf("setup: removing the CA key from %s: %v", n.Name, removeErr)
	}
	if err != nil {
		t.Fatalf("setup: %v", err)
	}
}

// clusterConfiguration is kubeadm's ClusterConfiguration for the cluster, with the node's
// ControlPlaneEndpoint and its KubeadmConfig's documents after it.
func (n *Node) clusterConfiguration() string {
	config := `apiVersion: kubeadm.k8s.io/v1beta2
kind: ClusterConfiguration
kubernetesVersion: v1.17.3
networking:
  podSubnet: 10.244.0.0/16
`
	if n.ControlPlaneEndpoint != "" {
		config += "controlPlaneEndpoint: " + n.ControlPlaneEndpoint + "\n"
	}
	if n.KubeadmConfig != "" {
		config += "---\n" + n.KubeadmConfig
	}
	return config
}

// initConfiguration is kubeadm's InitConfiguration for node name, its API endpoint advertise.
func initConfiguration(advertise, name string) string {
	return fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta2
kind: InitConfiguration
localAPIEndpoint:
  advertiseAddress: %s
  bindPort: 6443
nodeRegistration:
  name: %s
  criSocket: /var/run/dockershim.sock
`, advertise, name)
}

// writeKubeadmConfig writes config as the node's /kubeadm.yaml.
func (n *Node) writeKubeadmConfig(t *testing.T, config string) {
	if err := os.MkdirAll(n.Root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.Path("kubeadm.yaml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
}

// rootfsPhase runs `kubeadm init phase <phase>` with the node's /kubeadm.yaml, chrooted into its
// root (--rootfs), its output in logName in the node's log directory.
func (n *Node) rootfsPhase(t *testing.T, logName string, phase ...string) error {
	args := append(append([]string{"init", "phase"}, phase...), "--config=/kubeadm.yaml", "--rootfs="+n.Root)
	out, err := exec.Command(harness.Binary(t, "stock", "kubeadm"), args...).CombinedOutput()
	_ = os.WriteFile(filepath.Join(n.LogDir, logName), out, 0o644)
	if err != nil {
		return fmt.Errorf("kubeadm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// relocateHostPaths points every hostPath volume of a static-pod manifest into root, so that the
// pods read this test's PKI, kubeconfigs and etcd data and the kubelet creates nothing in the
// host's /etc or /usr. The paths inside the containers, and so every flag, stay kubeadm's.
// kubeadm writes its manifests with sigs.k8s.io/yaml from a v1.Pod, so writing the edited Pod
// back the same way changes only the paths.
func relocateHostPaths(manifest, root string) error {
	data, err := os.ReadFile(manifest)
	if err != nil {
		return err
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(data, &pod); err != nil {
		return fmt.Errorf("%s: %v", manifest, err)
	}
	for _, volume := range pod.Spec.Volumes {
		if volume.HostPath != nil {
			volume.HostPath.Path = filepath.Join(root, volume.HostPath.Path)
		}
	}
	out, err := yaml.Marshal(&pod)
	if err != nil {
		return err
	}
	return os.WriteFile(manifest, out, 0o600)
}

// KubeadmPhase runs `kubeadm init phase <phase>` against the running node (mark-control-plane,
// addon kube-proxy, ...) with the node's kubeadm.yaml, as its admin, from inside its network
// namespace when it has one.
func (n *Node) KubeadmPhase(t *testing.T, phase ...string) {
	args := append(append([]string{"init", "phase"}, phase...),
		"--config="+n.Path("kubeadm.yaml"), "--kubeconfig="+n.Path("etc/kubernetes/admin.conf"))
	out, err := n.command(t, harness.Binary(t, "stock", "kubeadm"), args...).CombinedOutput()
	_ = os.WriteFile(filepath.Join(n.LogDir, "kubeadm-"+strings.Join(phase, "-")+".log"), out, 0o644)
	if err != nil {
		t.Fatalf("kubeadm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// Kubectl runs stock kubectl v1.17.3 as the node's admin, from inside its network namespace
// when it has one.
func (n *Node) Kubectl(t *testing.T, args ...string) (string, error) {
	args = append([]string{"--kubeconfig=" + n.Path("etc/kubernetes/admin.conf")}, args...)
	out, err := n.command(t, harness.Binary(t, "stock", "kubectl"), args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args[1:], " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// Command is a command run where the node's daemons run: in its network namespace if it has one,
// and with its hostname (OwnHostname). nsenter executes it in place, so it is the process the
// caller started.
func (n *Node) Command(binary string, args ...string) (*exec.Cmd, error) {
	enter, err := n.namespaces()
	if err != nil || len(enter) == 0 {
		return exec.Command(binary, args...), err
	}
	return exec.Command("nsenter", append(append(enter, "--", binary), args...)...), nil
}

// command is Command for the node's own steps; a namespace that cannot be entered fails the test.
func (n *Node) command(t *testing.T, binary string, args ...string) *exec.Cmd {
	cmd, err := n.Command(binary, args...)
	if err != nil {
		t.Fatalf("%s: %v", filepath.Base(binary), err)
	}
	return cmd
}
