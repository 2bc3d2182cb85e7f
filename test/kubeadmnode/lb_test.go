package kubeadmnode

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLoadBalancerLeavesOutAFailedAPIServer: haproxy as StartLoadBalancer configures it, in a
// namespace of its own, spreads new connections over two TLS backends that answer /healthz, and
// once one of them is gone (two failed checks, a second apart) sends every new connection to the
// other: no request fails after that.
func TestLoadBalancerLeavesOutAFailedAPIServer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("creating a network namespace needs root")
	}
	ns, err := CreateNetNS(filepath.Join(t.TempDir(), "netns"), "10.240.0.10/24")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ns.Remove(); err != nil {
			t.Error(err)
		}
	})
	backends := map[string]*httptest.Server{}
	var addrs [][2]string
	for _, name := range []string{"master-1", "master-2"} {
		l, err := ns.Listen("tcp", "10.240.0.10:0")
		if err != nil {
			t.Fatal(err)
		}
		name := name
		server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/healthz" {
				fmt.Fprint(w, "ok")
				return
			}
			fmt.Fprint(w, name)
		}))
		server.Config.ErrorLog = log.New(io.Discard, "", 0) // the checks' handshakes, closed at once
		server.Listener.Close()
		server.Listener = l
		server.StartTLS()
		t.Cleanup(server.Close)
		backends[name] = server
		addrs = append(addrs, [2]string{name, l.Addr().String()})
	}
	lb := StartLoadBalancer(t, ns, t.TempDir(), "10.240.0.10:6443", addrs)

	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return ns.DialContext(ctx, network, addr)
		},
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true},
		DisableKeepAlives: true, // one connection per request: the balancer chooses per connection
	}}
	answers := func(n int) (map[string]int, error) {
		seen := map[string]int{}
		for i := 0; i < n; i++ {
			resp, err := client.Get("https://" + lb.Addr + "/")
			if err != nil {
				return seen, fmt.Errorf("request %d through the load balancer: %v", i+1, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			seen[string(body)]++
		}
		return seen, nil
	}
	if seen, err := answers(10); err != nil || seen["master-1"] == 0 || seen["master-2"] == 0 {
		t.Fatalf("both backends up: answers %v (%v), want both to answer", seen, err)
	}
	backends["master-1"].Close()
	// Two failed checks a second apart; until then a connection may still go to master-1 and fail.
	deadline := time.Now().Add(10 * time.Second)
	for {
		seen, err := answers(10)
		if err == nil && seen["master-2"] == 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("master-1 gone for 10 s: answers %v (%v), want master-2's alone and no failure", seen, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if exited, err := lb.Process.Exited(); exited {
		t.Errorf("haproxy exited: %v\n%s", err, lb.Process.Tail(20))
	}
}
