package harness

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Component is a kube-controller-manager or kube-scheduler under test.
type Component struct {
	*Process
	// BaseURL is the component's insecure serving address (http://127.0.0.1:port):
	// /healthz and /metrics.
	BaseURL string
}

// KubeAPIServer, KubeControllerManager and KubeScheduler are the components the release replaces.
const (
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
)

// Components are the components this fork replaces, in the order everything lists them
// (COMPONENTS in build/lib.sh; test/pipeline checks that the two agree): kubeadm's order, in which
// a master's kube-apiserver is swapped before the components that talk to it.
var Components = []string{KubeAPIServer, KubeControllerManager, KubeScheduler}

// SuiteComponents are the components the regression suites start from the build under test,
// always against the stock kube-apiserver (SUITE_COMPONENTS in build/lib.sh: what prove-patches
// builds of a series without a patch). Both elect a leader through a Lease; kube-apiserver 1.17
// elects none, and govulncheck (make vulncheck) judges what it links.
var SuiteComponents = []string{KubeControllerManager, KubeScheduler}

// ComponentOptions say what StartComponent runs; every field has a default.
type ComponentOptions struct {
	// Component is KubeControllerManager (the default) or KubeScheduler.
	Component string
	// Variant is the build: VariantUnderTest() unless set (e.g. "stock").
	Variant string
	// Name names the process and its log file; Component unless set (set it to tell several
	// instances apart).
	Name string
	// LogDir is where the log goes; LogDir(t) unless set.
	LogDir string
	// Args come after the defaults, so that they can override them.
	Args []string
	// Port is the insecure port of /healthz and /metrics; a free one unless set (set it when
	// something must know the address before the component starts).
	Port int
}

// StartComponent runs a component binary against the control plane, serving /healthz and
// /metrics on a free loopback port (1.17's insecure --port), and waits until it is healthy.
func StartComponent(t testing.TB, cp *ControlPlane, o ComponentOptions) *Component {
	t.Helper()
	if o.Component == "" {
		o.Component = KubeControllerManager
	}
	if o.Variant == "" {
		o.Variant = VariantUnderTest()
	}
	if o.Name == "" {
		o.Name = o.Component
	}
	if o.LogDir == "" {
		o.LogDir = LogDir(t)
	}
	port := o.Port
	if port == 0 {
		port = FreePort(t)
	}
	defaults := []string{
		"--kubeconfig=" + cp.Kubeconfig,
		"--address=127.0.0.1",
		fmt.Sprintf("--port=%d", port),
		// Several instances share the machine: no secure port to collide on.
		"--secure-port=0",
		"--v=2",
	}
	c := &Component{
		Process: StartProcess(t, o.LogDir, o.Name, Binary(t, o.Variant, o.Component), append(defaults, o.Args...)...),
		BaseURL: fmt.Sprintf("http://127.0.0.1:%d", port),
	}
	c.WaitHealthy(t, 60*time.Second)
	return c
}

// WaitHealthy waits until /healthz answers 200.
func (c *Component) WaitHealthy(t testing.TB, timeout time.Duration) {
	t.Helper()
	err := wait.PollImmediate(200*time.Millisecond, timeout, func() (bool, error) {
		if exited, err := c.Exited(); exited {
			return false, fmt.Errorf("%s exited: %v", c.Name, err)
		}
		resp, err := http.Get(c.BaseURL + "/healthz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("%s not healthy at %s/healthz: %v", c.Name, c.BaseURL, err)
	}
}

// EndpointQueue selects the endpoint controller's workqueue metrics (workqueue_depth,
// workqueue_adds_total, ...).
var EndpointQueue = map[string]string{"name": "endpoint"}

// Metric scrapes one metric from the component's /metrics (see Metric).
func (c *Component) Metric(name string, labels map[string]string) (float64, error) {
	return Metric(c.BaseURL+"/metrics", name, labels)
}
