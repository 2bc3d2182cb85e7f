package ha

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/idc-lts/kube-1.17/test/harness"
)

// instances is how many kube-controller-manager instances run: one per master.
const instances = 3

// cluster is an HA control plane on one machine: one etcd, two stock kube-apiservers on it, a
// load balancer in front of them, and kube-controller-manager instances of the build under test
// that reach the apiservers only through the load balancer, each as its own user (so the
// apiservers' audit logs say which instance wrote what).
type cluster struct {
	t       *testing.T
	dir     string
	logDir  string
	variant string

	etcdURL    string
	etcd       *clientv3.Client
	etcdProc   *harness.Process
	etcdArgs   []string
	etcdDir    string
	etcdStarts int
	apiservers []*apiserver
	lb         *loadBalancer
	// client reaches the apiservers through a frontend of its own that no fault touches.
	client kubernetes.Interface
	kcms   []*harness.Component
}

// apiserver is one stock kube-apiserver; its audit log records every write to Endpoints and
// Leases.
type apiserver struct {
	name     string
	addr     string
	args     []string
	auditLog string
	proc     *harness.Process
}

const testToken = "ha-test-token"

func startCluster(t *testing.T, variant string) *cluster {
	c := &cluster{t: t, dir: t.TempDir(), logDir: harness.LogDir(t), variant: variant}
	c.startEtcd()
	tokens := []string{testToken + ",ha-test,ha-test,system:masters"}
	for i := 0; i < instances; i++ {
		for _, name := range []string{kcmName(i), schedulerName(i)} {
			tokens = append(tokens, fmt.Sprintf("%s,%s,%s,system:masters", name+"-token", name, name))
		}
	}
	c.writeFile("tokens.csv", strings.Join(tokens, "\n")+"\n")
	c.writeFile("audit-policy.yaml", auditPolicy)
	var backends []string
	for _, name := range []string{"apiserver-a", "apiserver-b"} {
		a := c.newAPIServer(name)
		c.apiservers = append(c.apiservers, a)
		backends = append(backends, a.addr)
	}
	for _, a := range c.apiservers {
		c.startAPIServer(a)
	}
	c.lb = newLoadBalancer(t, backends...)
	c.client = kubernetes.NewForConfigOrDie(c.restConfig(c.lb.frontend("test"), testToken))
	return c
}

func kcmName(i int) string { return fmt.Sprintf("kcm-%d", i) }

func schedulerName(i int) string { return fmt.Sprintf("scheduler-%d", i) }

// auditPolicy records, with the request body, every write to Endpoints and Leases: who wrote
// which object when, and which addresses an Endpoints write carried.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Request
  verbs: ["create", "update", "patch", "delete"]
  resources:
  - group: ""
    resources: ["endpoints"]
  - group: "coordination.k8s.io"
    resources: ["leases"]
- level: None
`

func (c *cluster) writeFile(name, content string) string {
	path := filepath.Join(c.dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		c.t.Fatal(err)
	}
	return path
}

func (c *cluster) startEtcd() {
	clientPort, peerPort := harness.FreePort(c.t), harness.FreePort(c.t)
	c.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peer := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	c.etcdDir = filepath.Join(c.dir, "etcd")
	c.etcdArgs = []string{"--data-dir=" + c.etcdDir,
		"--listen-client-urls=" + c.etcdURL, "--advertise-client-urls=" + c.etcdURL,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=default=" + peer}
	c.runEtcd()
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{c.etcdURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { client.Close() })
	c.etcd = client
	c.waitEtcd()
}

// runEtcd starts (or starts again) the etcd process on its data directory.
func (c *cluster) runEtcd() {
	name := "etcd"
	if c.etcdStarts > 0 {
		name = fmt.Sprintf("etcd-restarted-%d", c.etcdStarts)
	}
	c.etcdStarts++
	c.etcdProc = harness.StartProcess(c.t, c.logDir, name, harness.Binary(c.t, "stock", "etcd"), c.etcdArgs...)
}

// waitEtcd waits until etcd answers.
func (c *cluster) waitEtcd() {
	client := c.etcd
	if err := wait.PollImmediate(200*time.Millisecond, 30*time.Second, func() (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := client.Status(ctx, c.etcdURL)
		return err == nil, nil
	}); err != nil {
		c.t.Fatalf("etcd at %s not up: %v", c.etcdURL, err)
	}
}

func (c *cluster) newAPIServer(name string) *apiserver {
	port := harness.FreePort(c.t)
	a := &apiserver{name: name, addr: fmt.Sprintf("127.0.0.1:%d", port), auditLog: filepath.Join(c.logDir, name+"-audit.log")}
	a.args = []string{
		"--etcd-servers=" + c.etcdURL,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--insecure-port=0",
		"--advertise-address=127.0.0.1",
		// A self-signed serving certificate; clients skip verification (test only).
		"--cert-dir=" + filepath.Join(c.dir, name),
		"--token-auth-file=" + filepath.Join(c.dir, "tokens.csv"),
		"--authorization-mode=AlwaysAllow",
		"--service-cluster-ip-range=10.0.0.0/24",
		// Pods are created without service accounts, as envtest does.
		"--disable-admission-plugins=ServiceAccount",
		// Both apiservers advertise loopback, which the kubernetes Service may not list.
		"--endpoint-reconciler-type=none",
		"--audit-policy-file=" + filepath.Join(c.dir, "audit-policy.yaml"),
		"--audit-log-path=" + a.auditLog,
		"--audit-log-format=json",
	}
	return a
}

// startAPIServer starts (or starts again) an apiserver and waits until it is ready.
func (c *cluster) startAPIServer(a *apiserver) {
	name := a.name
	if a.proc != nil {
		name = fmt.Sprintf("%s-restarted-%d", a.name, time.Now().Unix())
	}
	a.proc = harness.StartProcess(c.t, c.logDir, name, harness.Binary(c.t, "stock", "kube-apiserver"), a.args...)
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer client.CloseIdleConnections()
	if err := wait.PollImmediate(250*time.Millisecond, 60*time.Second, func() (bool, error) {
		if exited, err := a.proc.Exited(); exited {
			return false, fmt.Errorf("exited: %v", err)
		}
		req, _ := http.NewRequest(http.MethodGet, "https://"+a.addr+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}); err != nil {
		c.t.Fatalf("%s not ready at %s: %v\n%s", a.name, a.addr, err, a.proc.Tail(15))
	}
}

// restConfig is a client configuration for a server address with a token.
func (c *cluster) restConfig(addr, token string) *rest.Config {
	return &rest.Config{
		Host:            "https://" + addr,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS:             100, Burst: 200,
	}
}

// startKubeControllerManagers starts the instances, each through its own frontend, runs the
// endpoints controller only, and waits until one of them leads.
func (c *cluster) startKubeControllerManagers(extraArgs ...string) {
	for i := 0; i < instances; i++ {
		kubeconfig := c.writeKubeconfig(kcmName(i), c.lb.frontend(kcmName(i)), kcmName(i)+"-token")
		args := append([]string{"--controllers=endpoint", "--leader-elect=true"}, extraArgs...)
		c.kcms = append(c.kcms, harness.StartComponent(c.t, &harness.ControlPlane{Kubeconfig: kubeconfig},
			harness.ComponentOptions{Variant: c.variant, Name: kcmName(i), LogDir: c.logDir, Args: args}))
	}
}

// endpointControllers counts the instances that run an endpoint controller, and so its informers:
// the leader, and with patch 0018 every instance standing by. The others export no endpoint queue.
func (c *cluster) endpointControllers() int {
	n := 0
	for _, k := range c.kcms {
		if _, err := k.Metric("workqueue_adds_total", harness.EndpointQueue); err == nil {
			n++
		}
	}
	return n
}

func (c *cluster) writeKubeconfig(user, addr, token string) string {
	config := clientcmdapi.NewConfig()
	config.Clusters["ha"] = &clientcmdapi.Cluster{Server: "https://" + addr, InsecureSkipTLSVerify: true}
	config.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	config.Contexts["ha"] = &clientcmdapi.Context{Cluster: "ha", AuthInfo: user}
	config.CurrentContext = "ha"
	path := filepath.Join(c.dir, user+".kubeconfig")
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		c.t.Fatal(err)
	}
	return path
}

// kcm returns the instance running as user.
func (c *cluster) kcm(user string) *harness.Component {
	for i, k := range c.kcms {
		if kcmName(i) == user {
			return k
		}
	}
	c.t.Fatalf("no instance %q", user)
	return nil
}
