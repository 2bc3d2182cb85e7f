package kubeadmnode

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idc-lts/kube-1.17/test/harness"
)

// A master joins the first one's control plane with kubeadm v1.17.3's own join phases, run in the
// node's namespaces and chrooted into its root (--rootfs), in two steps around its kubelet's start:
// what `kubeadm join --control-plane` does but for the TLS bootstrap and the kubelet's start, which
// wait for a kubelet under systemd (a deviation the report names, as the conformance worker's).

// sharedPKI are the files kubeadm's HA guide copies from the first master to each other one
// ("manual certificate distribution"): the cluster's CAs and the service-account key pair.
// kubeadm makes every other certificate of the joining master from these.
var sharedPKI = []string{"ca.crt", "ca.key", "sa.key", "sa.pub", "front-proxy-ca.crt", "front-proxy-ca.key",
	"etcd/ca.crt", "etcd/ca.key"}

// heldManifests are the joining master's static pods that wait for its etcd member: started at
// once, its apiserver would find no local etcd and restart until one runs.
var heldManifests = []string{"kube-apiserver.yaml", "kube-controller-manager.yaml", "kube-scheduler.yaml"}

// PrepareControlPlaneJoin makes the node a master of first's cluster up to its kubelet's start:
// the shared PKI copied from first, then `kubeadm join phase control-plane-prepare all`
// (certificates, kubeconfigs and the control plane's manifests, the cluster's configuration read
// from first's kubeadm-config ConfigMap, which first's `init phase upload-config kubeadm` wrote,
// through a discovery file holding first's admin.conf); the manifests' hostPaths are moved into
// the root and held back for JoinEtcd, and its kubelet.conf is written as KubeadmJoin writes a
// worker's. The node's kubelet starts next, then JoinEtcd.
func (n *Node) PrepareControlPlaneJoin(t *testing.T, first *Node) {
	for _, file := range sharedPKI {
		copyFile(t, first.Path("etc/kubernetes/pki/"+file), n.Path("etc/kubernetes/pki/"+file))
	}
	copyFile(t, first.Path("etc/kubernetes/admin.conf"), n.Path("etc/kubernetes/discovery.conf"))
	n.writeKubeadmConfig(t, initConfiguration(n.IP, n.Name)+"---\n"+n.clusterConfiguration())
	join := fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta2
kind: JoinConfiguration
discovery:
  file:
    kubeConfigPath: /etc/kubernetes/discovery.conf
nodeRegistration:
  name: %s
  criSocket: /var/run/dockershim.sock
controlPlane:
  localAPIEndpoint:
    advertiseAddress: %s
    bindPort: 6443
`, n.Name, n.IP)
	if err := os.WriteFile(n.Path("kubeadm-join.yaml"), []byte(join), 0o644); err != nil {
		t.Fatal(err)
	}
	n.joinPhase(t, "control-plane-prepare", "all")
	held := n.Path("etc/kubernetes/held")
	if err := os.MkdirAll(held, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, manifest := range heldManifests {
		path := n.Path("etc/kubernetes/manifests/" + manifest)
		if err := relocateHostPaths(path, n.Root); err != nil {
			t.Fatalf("setup: %v", err)
		}
		if err := os.Rename(path, filepath.Join(held, manifest)); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.rootfsPhase(t, "kubeadm-kubeconfig-kubelet.log", "kubeconfig", "kubelet"); err != nil {
		t.Fatalf("setup: %v", err)
	}
}

// JoinEtcd ends the join once the node's kubelet runs: `kubeadm join phase control-plane-join
// etcd` adds the node's member to the cluster's etcd and writes its manifest, which the kubelet
// starts at once (kubeadm waits for the member), its data and certificates under the root through
// kubeadm's own kustomize patch; then the held manifests go back, and kubeadm's update-status and
// mark-control-plane phases record the new master.
func (n *Node) JoinEtcd(t *testing.T) {
	patch := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: etcd
  namespace: kube-system
spec:
  volumes:
  - name: etcd-data
    hostPath:
      path: %s
      type: DirectoryOrCreate
  - name: etcd-certs
    hostPath:
      path: %s
      type: DirectoryOrCreate
`, n.Path("var/lib/etcd"), n.Path("etc/kubernetes/pki/etcd"))
	if err := os.MkdirAll(n.Path("kustomize"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.Path("kustomize/etcd.yaml"), []byte(patch), 0o644); err != nil {
		t.Fatal(err)
	}
	n.joinPhase(t, "control-plane-join", "etcd", "--experimental-kustomize=/kustomize")
	for _, manifest := range heldManifests {
		if err := os.Rename(n.Path("etc/kubernetes/held/"+manifest), n.Path("etc/kubernetes/manifests/"+manifest)); err != nil {
			t.Fatal(err)
		}
	}
	n.joinPhase(t, "control-plane-join", "update-status")
	n.joinPhase(t, "control-plane-join", "mark-control-plane")
}

// joinPhase runs `kubeadm join phase <phase>` with the node's /kubeadm-join.yaml, in its
// namespaces and chrooted into its root, its output in the node's log directory, named after the
// phase (its words before the first flag).
func (n *Node) joinPhase(t *testing.T, phase ...string) {
	args := append(append([]string{"join", "phase"}, phase...), "--config=/kubeadm-join.yaml", "--rootfs="+n.Root, "--v=1")
	out, err := n.command(t, harness.Binary(t, "stock", "kubeadm"), args...).CombinedOutput()
	var words []string
	for _, word := range phase {
		if strings.HasPrefix(word, "-") {
			break
		}
		words = append(words, word)
	}
	_ = os.WriteFile(filepath.Join(n.LogDir, "kubeadm-join-"+strings.Join(words, "-")+".log"), out, 0o644)
	if err != nil {
		t.Fatalf("setup of %s: kubeadm %s: %v\n%s", n.Name, strings.Join(args, " "), err, out)
	}
}

// copyFile copies src to dst (0600, its directory made).
func copyFile(t *testing.T, src, dst string) {
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("setup: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
