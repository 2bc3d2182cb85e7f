package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// KubeadmManifests writes the control-plane static-pod manifests of a kubeadm v1.17.3 master
// (`kubeadm init phase control-plane all`, with the kubeadm the pipeline built) under a fresh
// root and returns its manifests directory, <root>/etc/kubernetes/manifests.
func KubeadmManifests(t testing.TB) string {
	t.Helper()
	kubeadm := Binary(t, "stock", "kubeadm")
	root := t.TempDir()
	config := "apiVersion: kubeadm.k8s.io/v1beta2\nkind: ClusterConfiguration\nkubernetesVersion: v1.17.3\nnetworking:\n  podSubnet: 10.244.0.0/16\n"
	if err := os.WriteFile(filepath.Join(root, "kubeadm.yaml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(kubeadm, "init", "phase", "control-plane", "all", "--config", "/kubeadm.yaml", "--rootfs", root).CombinedOutput()
	if err != nil {
		t.Fatalf("kubeadm: %v\n%s", err, out)
	}
	return filepath.Join(root, "etc/kubernetes/manifests")
}
