// Package debpkg builds the kubelet's Debian package with build/deb.sh and installs it into a
// directory as dpkg installs it on a node: `dpkg --root` with a dpkg database of that directory's
// own, the package's maintainer scripts run against it (DPKG_ROOT). The package's tests and the
// kubeadm node's kubelet use it; nothing is installed on the machine itself.
package debpkg

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/idc-lts/kube-1.17/test/harness"
	"github.com/idc-lts/kube-1.17/test/tier"
)

// Build runs build/deb.sh for variant (stock or patched) and the machine's architecture into dir
// and returns the package's path.
func Build(t testing.TB, variant, dir string) string {
	t.Helper()
	harness.Binary(t, variant, "kubelet")
	out, err := Script(t, variant, runtime.GOARCH, dir)
	if err != nil {
		t.Fatalf("build/deb.sh %s: %v\n%s", variant, err, out)
	}
	return strings.TrimSpace(out)
}

// Script runs build/deb.sh with args and returns what it printed (stdout, then stderr).
func Script(t testing.TB, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(harness.RepoRoot(t), "build", "deb.sh"), args...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String() + stderr.String(), err
}

// Root is a directory that dpkg installs into, with its own dpkg database.
type Root string

// NewRoot makes dir a root dpkg can install into: the database dpkg reads and writes under
// var/lib/dpkg, and var/log for its log. It needs root (dpkg makes the files root's).
func NewRoot(t testing.TB, dir string) Root {
	t.Helper()
	if os.Geteuid() != 0 {
		tier.Missing(t, "run it as root", "dpkg installs files owned by root")
	}
	harness.Tool(t, "dpkg", "dpkg")
	for _, sub := range []string{"var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers", "var/log"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	status := filepath.Join(dir, "var/lib/dpkg/status")
	if _, err := os.Stat(status); os.IsNotExist(err) {
		if err := os.WriteFile(status, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return Root(dir)
}

// Path is a path inside the root.
func (r Root) Path(rel string) string { return filepath.Join(string(r), rel) }

// Install is `dpkg -i deb` on the root: the maintainer scripts run with DPKG_ROOT set to it
// (--force-script-chrootless: the root has no shell to chroot into), the dependencies (iptables,
// kubernetes-cni, ...) are a node's, not the root's (--force-depends), and dpkg logs into the root.
// It returns dpkg's output.
// The maintainer scripts run with a systemctl first on PATH that only records its calls: one
// would act on this machine's systemd, so a call is an error.
func (r Root) Install(deb string) (string, error) {
	stubs, err := os.MkdirTemp("", "debpkg-stubs")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(stubs)
	calls := filepath.Join(stubs, "systemctl.calls")
	stub := "#!/bin/sh\necho \"systemctl $*\" >> " + calls + "\n"
	if err := os.WriteFile(filepath.Join(stubs, "systemctl"), []byte(stub), 0o755); err != nil {
		return "", err
	}
	cmd := exec.Command("dpkg", "--root="+string(r), "--log="+r.Path("var/log/dpkg.log"),
		"--force-depends", "--force-script-chrootless", "-i", deb)
	cmd.Env = append(os.Environ(), "PATH="+stubs+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if called, _ := os.ReadFile(calls); len(called) > 0 {
		return string(out), fmt.Errorf("the maintainer scripts of %s called systemctl under dpkg --root, which acts on this machine: %s", filepath.Base(deb), strings.TrimSpace(string(called)))
	}
	return string(out), err
}

// Installed returns the version and status of package in the root's database ("" when dpkg
// does not know it).
func (r Root) Installed(pkg string) (version, status string, err error) {
	out, err := exec.Command("dpkg-query", "--admindir="+r.Path("var/lib/dpkg"), "--show",
		"--showformat=${Version}\t${Status}", pkg).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "no packages found") {
			return "", "", nil
		}
		return "", "", fmt.Errorf("dpkg-query %s: %v: %s", pkg, err, out)
	}
	fields := strings.SplitN(strings.TrimSpace(string(out)), "\t", 2)
	if len(fields) != 2 {
		return "", "", fmt.Errorf("dpkg-query %s printed %q", pkg, out)
	}
	return fields[0], fields[1], nil
}

// Version is the package version of a kubelet version, as build/deb.sh writes it: upstream's
// v1.17.3 is 1.17.3-00 (upstream's revision), ours v1.17.3-idc.N is 1.17.3-idc.N.
func Version(kubeletVersion string) string {
	v := strings.TrimPrefix(kubeletVersion, "v")
	if !strings.Contains(v, "-") {
		return v + "-00"
	}
	return v
}
