package kubeadmnode

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNetNSHasNoRouteOut: inside the namespace the node's address and the Service CIDR are
// routed to the link that leads nowhere and nothing else is routed at all; the host's links and
// routes are as they were, during and after.
func TestNetNSHasNoRouteOut(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("creating a network namespace needs root")
	}
	hostBefore := hostNet(t)
	ns, err := CreateNetNS(filepath.Join(t.TempDir(), "netns"), "10.240.0.2/24", "10.96.0.0/12")
	if err != nil {
		t.Fatal(err)
	}
	removed := false
	defer func() {
		if !removed {
			_ = ns.Remove()
		}
	}()
	for dest, want := range map[string]string{
		"8.8.8.8":    "Network is unreachable",
		"10.244.0.5": "Network is unreachable",
		"10.96.0.10": "dev " + Link,
		"10.240.0.2": "dev lo",
	} {
		out, _ := ns.Command("ip", "route", "get", dest).CombinedOutput()
		if !strings.Contains(string(out), want) {
			t.Errorf("in the namespace, ip route get %s: %q, want %q", dest, strings.TrimSpace(string(out)), want)
		}
	}
	// A listener on the node's address, and a client dialled into the namespace reaching it;
	// the test's own namespace is never asked to route to the node's address.
	l, err := ns.Listen("tcp", "10.240.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan error, 1)
	go func() {
		conn, err := l.Accept()
		if err == nil {
			_, err = conn.Write([]byte("node"))
			conn.Close()
		}
		accepted <- err
	}()
	conn, err := ns.DialContext(context.Background(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatalf("dialling %s into the namespace: %v", l.Addr(), err)
	}
	reply, err := io.ReadAll(conn)
	conn.Close()
	if err != nil || string(reply) != "node" || <-accepted != nil {
		t.Errorf("through the namespace: %q, %v", reply, err)
	}
	if _, err := ns.DialContext(context.Background(), "tcp", "kubernetes.default:443"); err == nil {
		t.Errorf("a dial by name into the namespace was made; names resolve outside it")
	}
	if got := hostNet(t); got != hostBefore {
		t.Errorf("the host's links or routes changed while the namespace existed:\nbefore %s\nafter %s", hostBefore, got)
	}
	if err := ns.Remove(); err != nil {
		t.Fatal(err)
	}
	removed = true
	if _, err := os.Stat(ns.Path); !os.IsNotExist(err) {
		t.Errorf("%s is still there after Remove: %v", ns.Path, err)
	}
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), ns.Path) {
		t.Errorf("%s is still mounted after Remove", ns.Path)
	}
}

func hostNet(t *testing.T) string {
	t.Helper()
	state, err := HostNetwork()
	if err != nil {
		t.Fatal(err)
	}
	return state
}

// TestNodesOnASwitchReachEachOtherOnly: two namespaces plugged into a switch (CreateNetwork) reach
// each other's addresses, and an address behind the other (its pods'); nothing else is routed
// from either, the switch has no route, and the host's links and routes never change.
// RemoveNetwork leaves nothing mounted.
func TestNodesOnASwitchReachEachOtherOnly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("creating a network namespace needs root")
	}
	hostBefore := hostNet(t)
	dir := t.TempDir()
	switchFile := filepath.Join(dir, "switch")
	nodes := []NodeNet{
		{File: filepath.Join(dir, "a"), IP: "10.240.0.2", PodNet: "10.244.0.0/24"},
		{File: filepath.Join(dir, "b"), IP: "10.240.0.3", PodNet: "10.244.1.0/24"},
	}
	removed := false
	defer func() {
		if !removed {
			_ = RemoveNetwork(switchFile, nodes)
		}
	}()
	if err := CreateNetwork(switchFile, nodes, "10.96.0.0/12"); err != nil {
		t.Fatal(err)
	}
	a, b, sw := &NetNS{Path: nodes[0].File}, &NetNS{Path: nodes[1].File}, &NetNS{Path: switchFile}
	// b's "pod": an address of its pod CIDR on its loopback, as a CNI bridge would hold one.
	if out, err := b.Command("ip", "addr", "add", "10.244.1.5/32", "dev", "lo").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, target := range []string{"10.240.0.3:0", "10.244.1.5:0"} {
		l, err := b.Listen("tcp", target)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			if conn, err := l.Accept(); err == nil {
				_, _ = conn.Write([]byte("b"))
				conn.Close()
			}
		}()
		conn, err := a.DialContext(context.Background(), "tcp", l.Addr().String())
		if err != nil {
			t.Errorf("from a, dialling %s on b through the switch: %v", l.Addr(), err)
		} else if reply, _ := io.ReadAll(conn); string(reply) != "b" {
			t.Errorf("from a, %s answered %q", l.Addr(), reply)
		}
		l.Close()
	}
	for name, ns := range map[string]*NetNS{"a": a, "b": b, "the switch": sw} {
		if out, _ := ns.Command("ip", "route", "get", "8.8.8.8").CombinedOutput(); !strings.Contains(string(out), "Network is unreachable") {
			t.Errorf("in %s, 8.8.8.8 is routed: %s", name, out)
		}
	}
	if got := hostNet(t); got != hostBefore {
		t.Errorf("the host's links or routes changed while the namespaces existed:\nbefore %s\nafter %s", hostBefore, got)
	}
	if err := RemoveNetwork(switchFile, nodes); err != nil {
		t.Error(err)
	}
	removed = true
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), dir) {
		t.Errorf("a namespace under %s is still mounted after RemoveNetwork", dir)
	}
}
