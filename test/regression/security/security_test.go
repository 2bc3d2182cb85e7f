// Package security checks the dependency changes of the security patches on the built binaries:
// which modules and versions are linked (the binaries' own build information) and that the
// secure port's HTTP/2 server and the terminal-sized --help still work with them.
package security

import (
	"crypto/tls"
	"debug/buildinfo"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/semver"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/idc-lts/kube-1.17/test/harness"
)

// fixedIn is the first version of each module without the CVEs patches/SECURITY.md lists.
var fixedIn = map[string]string{
	"golang.org/x/net":    "v0.35.0",
	"golang.org/x/crypto": "v0.33.0",
	"golang.org/x/sys":    "v0.30.0",
	"golang.org/x/text":   "v0.22.0",
	// 0035; linked through the ScaleIO volume plugin (kube-controller-manager only).
	"github.com/sirupsen/logrus": "v1.8.3",
}

// dropped are modules the components no longer link at all, each with the patch that dropped it:
// govulncheck reports every advisory of a module whose packages a binary holds.
var dropped = map[string]string{
	// The Docker Engine's module, for its terminal helpers only (--help's width): 14 advisories,
	// none in those helpers. 0034 takes them from github.com/moby/term.
	"github.com/docker/docker": "0034",
}

func linked(t *testing.T, binary string) map[string]string {
	t.Helper()
	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	versions := map[string]string{}
	for _, dep := range info.Deps {
		m := dep
		if dep.Replace != nil {
			m = dep.Replace
		}
		versions[dep.Path] = m.Version
	}
	return versions
}

// TestStockLinksVulnerableDependencies shows what the bump fixes: stock links the old versions.
func TestStockLinksVulnerableDependencies(t *testing.T) {
	versions := linked(t, harness.Binary(t, "stock", "kube-controller-manager"))
	for module, fixed := range fixedIn {
		t.Logf("stock links %s %s (fixed in %s)", module, versions[module], fixed)
		if versions[module] == "" || semver.Compare(versions[module], fixed) >= 0 {
			t.Errorf("stock already links %s %s >= %s: the test no longer shows the problem", module, versions[module], fixed)
		}
	}
}

// TestPatchedLinksFixedDependencies checks the build under test links the fixed versions and
// serves /healthz over HTTP/2 on its secure port with them.
func TestPatchedLinksFixedDependencies(t *testing.T) {
	variant := harness.VariantUnderTest()
	for _, component := range harness.SuiteComponents {
		versions := linked(t, harness.Binary(t, variant, component))
		for module, fixed := range fixedIn {
			if versions[module] == "" && component != "kube-controller-manager" {
				continue // not linked at all (logrus: kube-scheduler)
			}
			t.Logf("%s %s links %s %s", variant, component, module, versions[module])
			if semver.Compare(versions[module], fixed) < 0 {
				t.Errorf("%s %s links %s %s, want %s or newer", variant, component, module, versions[module], fixed)
			}
		}
	}

	cp := harness.StartControlPlane(t)
	securePort := harness.FreePort(t)
	harness.StartComponent(t, cp, harness.ComponentOptions{Variant: variant, Args: []string{
		"--controllers=endpoint", "--leader-elect=false", "--secure-port=" + strconv.Itoa(securePort),
		"--bind-address=127.0.0.1", "--cert-dir=" + t.TempDir()}})
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		ForceAttemptHTTP2: true,
		// The component's self-signed serving certificate.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
	var proto string
	err := wait.PollImmediate(200*time.Millisecond, 30*time.Second, func() (bool, error) {
		resp, err := client.Get("https://127.0.0.1:" + strconv.Itoa(securePort) + "/healthz")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		proto = resp.Proto
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("secure port /healthz did not answer 200: %v", err)
	}
	t.Logf("%s secure port /healthz: 200 over %s", variant, proto)
	if proto != "HTTP/2.0" {
		t.Errorf("secure port spoke %s, want HTTP/2.0", proto)
	}
}

// TestStockLinksTheDockerEngine shows what 0034 changes: stock links github.com/docker/docker.
func TestStockLinksTheDockerEngine(t *testing.T) {
	for _, component := range harness.SuiteComponents {
		versions := linked(t, harness.Binary(t, "stock", component))
		for module := range dropped {
			if versions[module] == "" {
				t.Errorf("stock %s does not link %s: the test no longer shows the problem", component, module)
			}
		}
	}
}

// TestPatchedLinksNoDockerEngine checks that the build under test links none of the modules the
// series dropped, and that --help, which sizes itself to the terminal through the replacement,
// still prints.
func TestPatchedLinksNoDockerEngine(t *testing.T) {
	variant := harness.VariantUnderTest()
	for _, component := range harness.SuiteComponents {
		binary := harness.Binary(t, variant, component)
		versions := linked(t, binary)
		for module, patch := range dropped {
			if versions[module] != "" {
				t.Errorf("%s %s links %s %s, which patch %s drops", variant, component, module, versions[module], patch)
			}
		}
		out, err := exec.Command(binary, "--help").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--kubeconfig") {
			t.Errorf("%s %s --help: %v\n%s", variant, component, err, out)
		}
	}
}
