// Package security checks the dependency bumps of the security patches on the built binaries:
// which versions are linked (the binaries' own build information) and that the secure port's
// HTTP/2 server still works with them.
package security

import (
	"crypto/tls"
	"debug/buildinfo"
	"net/http"
	"strconv"
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
		if semver.Compare(versions[module], fixed) >= 0 {
			t.Errorf("stock already links %s %s >= %s: the test no longer shows the problem", module, versions[module], fixed)
		}
	}
}

// TestPatchedLinksFixedDependencies checks the build under test links the fixed versions and
// serves /healthz over HTTP/2 on its secure port with them.
func TestPatchedLinksFixedDependencies(t *testing.T) {
	variant := harness.VariantUnderTest()
	for _, component := range harness.Components {
		versions := linked(t, harness.Binary(t, variant, component))
		for module, fixed := range fixedIn {
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
