package kubeadmnode

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/idc-lts/kube-1.17/test/harness"
)

// LoadBalancer is Debian's haproxy in a network namespace of its own in front of the masters'
// apiservers, set up as kubeadm's HA guide sets it up: TCP passed through to each apiserver that
// answers /healthz over TLS, checked every second; a backend that fails two checks in a row
// gets no new connection. Watches stay open for an hour.
type LoadBalancer struct {
	// Addr is the address every kubeconfig of the cluster names (controlPlaneEndpoint).
	Addr    string
	Process *harness.Process
}

// haproxyConfig is the configuration for a load balancer at bind over backends (name -> host:port).
func haproxyConfig(bind string, backends [][2]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `global
  log stdout format raw local0 info
  maxconn 4096

defaults
  mode tcp
  log global
  option tcplog
  timeout connect 5s
  timeout client 1h
  timeout server 1h
  timeout tunnel 1h

frontend apiserver
  bind %s
  default_backend apiservers

backend apiservers
  option httpchk GET /healthz
  http-check expect status 200
  balance roundrobin
`, bind)
	for _, backend := range backends {
		fmt.Fprintf(&b, "  server %s %s check check-ssl verify none inter 1s fall 2 rise 2\n", backend[0], backend[1])
	}
	return b.String()
}

// StartLoadBalancer runs haproxy in ns, listening on bind (an address of ns) and forwarding to
// backends (name -> host:port, reachable from ns), with its configuration and log in logDir. It
// runs in the foreground (-db) with the test's parent-death signal; the test's cleanup stops it.
func StartLoadBalancer(t *testing.T, ns *NetNS, logDir, bind string, backends [][2]string) *LoadBalancer {
	t.Helper()
	if err := literalIP(bind); err != nil {
		t.Fatalf("load balancer: %v", err)
	}
	for _, backend := range backends {
		if _, _, err := net.SplitHostPort(backend[1]); err != nil || strings.ContainsAny(backend[0], " \t\n") {
			t.Fatalf("load balancer: backend %q at %q: a name without spaces and a host:port, please", backend[0], backend[1])
		}
	}
	haproxy := harness.Tool(t, "haproxy", "haproxy")
	config := filepath.Join(logDir, "haproxy.cfg")
	if err := os.WriteFile(config, []byte(haproxyConfig(bind, backends)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(haproxy, "-c", "-f", config).CombinedOutput(); err != nil {
		t.Fatalf("load balancer: haproxy -c -f %s: %v\n%s", config, err, out)
	}
	lb := &LoadBalancer{Addr: bind,
		Process: harness.StartDaemon(t, logDir, "haproxy", "nsenter", "--net="+ns.Path, "--", haproxy, "-db", "-f", config)}
	t.Cleanup(lb.Process.Stop)
	err := wait.PollImmediate(100*time.Millisecond, 10*time.Second, func() (bool, error) {
		if exited, err := lb.Process.Exited(); exited {
			return false, fmt.Errorf("haproxy exited: %v\n%s", err, lb.Process.Tail(20))
		}
		conn, err := ns.DialContext(context.Background(), "tcp", bind)
		if err == nil {
			conn.Close()
		}
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("load balancer: nothing listens on %s in %s: %v", bind, ns.Path, err)
	}
	return lb
}
