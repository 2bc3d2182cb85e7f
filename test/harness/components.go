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

// StartComponent runs the named component binary of a variant against the control plane, serving
// /healthz and /metrics on a free loopback port (1.17's insecure --port). args come after the
// defaults, so a test can override them.
func StartComponent(t testing.TB, cp *ControlPlane, logDir, processName, variant, component string, args ...string) *Component {
	t.Helper()
	port := FreePort(t)
	defaults := []string{
		"--kubeconfig=" + cp.Kubeconfig,
		"--address=127.0.0.1",
		fmt.Sprintf("--port=%d", port),
		// Several instances share the machine: no secure port to collide on.
		"--secure-port=0",
		"--v=2",
	}
	c := &Component{
		Process: StartProcess(t, logDir, processName, Binary(t, variant, component), append(defaults, args...)...),
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

// Metric scrapes one metric from the component's /metrics (see Metric).
func (c *Component) Metric(name string, labels map[string]string) (float64, error) {
	return Metric(c.BaseURL+"/metrics", name, labels)
}
