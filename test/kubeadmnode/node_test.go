package kubeadmnode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOwnHostnameIsTheNodeName: with OwnHostname the node's commands see its Name as the hostname
// (the first creates the UTS namespace, the next enters the same one), the host keeps its own,
// and the namespace is one mount under RunDir, which Teardown unmounts.
func TestOwnHostnameIsTheNodeName(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("creating a UTS namespace needs root")
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{Config: Config{Name: "idc-lts-uts-test", RunDir: filepath.Join(t.TempDir(), "run"), OwnHostname: true}}
	t.Cleanup(func() { _, _ = unmountUnder(n.RunDir) })
	for i := 1; i <= 2; i++ {
		cmd, err := n.Command("hostname")
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != n.Name {
			t.Errorf("command %d: hostname %q (%v), want %q", i, got, err, n.Name)
		}
	}
	if now, _ := os.Hostname(); now != host {
		t.Errorf("the host's hostname is %q now, was %q", now, host)
	}
	points, err := unmountUnder(n.RunDir)
	if err != nil || len(points) != 1 || points[0] != n.utsPath() {
		t.Errorf("mounts under RunDir: %v (%v), want %s alone", points, err, n.utsPath())
	}
}
