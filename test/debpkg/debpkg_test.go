package debpkg

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/idc-lts/kube-1.17/test/harness"
)

// upstreamUnit is kubelet.service as upstream's kubelet package of 1.17.3 installs it
// (kubernetes/release, cmd/kubepkg/templates/latest/deb/kubelet/lib/systemd/system/kubelet.service,
// blob 5938f615 at 11f0f146, February 2020): ours must be the same unit.
const upstreamUnit = `[Unit]
Description=kubelet: The Kubernetes Node Agent
Documentation=https://kubernetes.io/docs/home/

[Service]
ExecStart=/usr/bin/kubelet
Restart=always
StartLimitInterval=0
RestartSec=10

[Install]
WantedBy=multi-user.target
`

// built holds the package of each variant, built once for the package's tests under the output
// directory (builtIn), which the first build empties: a killed run's packages and dpkg roots
// (root's files) go with the next run, or with make clean.
var (
	built   = map[string]string{}
	builtIn string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if builtIn != "" {
		os.RemoveAll(builtIn)
	}
	os.Exit(code)
}

// pkg is the package of variant, built on first use.
func pkg(t *testing.T, variant string) string {
	t.Helper()
	if builtIn == "" {
		builtIn = filepath.Join(harness.OutputDir(t), "debpkg-test")
		if err := os.RemoveAll(builtIn); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(builtIn, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if built[variant] == "" {
		built[variant] = Build(t, variant, builtIn)
	}
	return built[variant]
}

// TestKubeletPackageLayout holds our package to upstream's layout: the same paths, modes and
// owner, the unit byte for byte, upstream's Depends, our version, and the kubelet the release
// scanned and described in its SBOM (the patched build's binary, byte for byte).
func TestKubeletPackageLayout(t *testing.T) {
	deb := pkg(t, "patched")
	version := harness.ReleaseVersion(t)
	if want := "kubelet_" + Version(version) + "_" + runtime.GOARCH + ".deb"; filepath.Base(deb) != want {
		t.Errorf("package file %s, want %s", filepath.Base(deb), want)
	}
	fields := map[string]string{
		"Package":      "kubelet",
		"Version":      Version(version),
		"Architecture": runtime.GOARCH,
		"Depends":      "iptables (>= 1.4.21), kubernetes-cni (>= 0.7.5), iproute2, socat, util-linux, mount, ebtables, ethtool, conntrack",
		"Section":      "misc",
		"Priority":     "optional",
	}
	for field, want := range fields {
		if got := dpkgDeb(t, "--field", deb, field); got != want {
			t.Errorf("%s: %s %q, want %q", filepath.Base(deb), field, got, want)
		}
	}

	// dpkg-deb --contents: mode, owner/group, size, date, time, path.
	wantEntries := map[string]string{
		"./":                                   "drwxr-xr-x root/root",
		"./lib/":                               "drwxr-xr-x root/root",
		"./lib/systemd/":                       "drwxr-xr-x root/root",
		"./lib/systemd/system/":                "drwxr-xr-x root/root",
		"./lib/systemd/system/kubelet.service": "-rw-r--r-- root/root",
		"./usr/":                               "drwxr-xr-x root/root",
		"./usr/bin/":                           "drwxr-xr-x root/root",
		"./usr/bin/kubelet":                    "-rwxr-xr-x root/root",
	}
	gotEntries := map[string]string{}
	for _, line := range strings.Split(dpkgDeb(t, "--contents", deb), "\n") {
		f := strings.Fields(line)
		if len(f) != 6 {
			t.Fatalf("dpkg-deb --contents: unexpected line %q", line)
		}
		gotEntries[f[5]] = f[0] + " " + f[1]
	}
	for path, want := range wantEntries {
		if got, ok := gotEntries[path]; !ok {
			t.Errorf("%s has no %s", filepath.Base(deb), path)
		} else if got != want {
			t.Errorf("%s: %s is %q, want %q", filepath.Base(deb), path, got, want)
		}
	}
	for path := range gotEntries {
		if _, ok := wantEntries[path]; !ok {
			t.Errorf("%s installs %s, which upstream's package does not", filepath.Base(deb), path)
		}
	}

	extracted := t.TempDir()
	dpkgDeb(t, "--extract", deb, extracted)
	if unit := readFile(t, filepath.Join(extracted, "lib/systemd/system/kubelet.service")); unit != upstreamUnit {
		t.Errorf("kubelet.service is not upstream's unit:\n%s", unit)
	}
	if got, want := sha256File(t, filepath.Join(extracted, "usr/bin/kubelet")), sha256File(t, harness.Binary(t, "patched", "kubelet")); got != want {
		t.Errorf("the packaged kubelet has sha256 %s, the patched build's %s", got, want)
	}
}

// TestKubeletPackageIsReproducible builds the package twice: byte-identical.
func TestKubeletPackageIsReproducible(t *testing.T) {
	first := pkg(t, "patched")
	second := Build(t, "patched", t.TempDir())
	if a, b := sha256File(t, first), sha256File(t, second); a != b {
		t.Errorf("two builds of %s differ: sha256 %s and %s", filepath.Base(first), a, b)
	} else {
		t.Logf("%s: sha256 %s, twice", filepath.Base(first), a)
	}
}

// TestKubeletPackageUpgradesAndRollsBack is the operator's dpkg -i on a node that runs upstream's
// package: ours replaces it in place, upstream's replaces ours again, and the node's own files
// (a static-pod manifest) stay through both.
func TestKubeletPackageUpgradesAndRollsBack(t *testing.T) {
	stock, ours := pkg(t, "stock"), pkg(t, "patched")
	root := NewRoot(t, filepath.Join(builtIn, "root"))
	manifest := root.Path("etc/kubernetes/manifests/kube-apiserver.yaml")

	steps := []struct {
		name, deb, kubeletVersion string
	}{
		{"upstream's package on a fresh node", stock, "v1.17.3"},
		{"ours over it (the upgrade)", ours, harness.ReleaseVersion(t)},
		{"upstream's again (the rollback)", stock, "v1.17.3"},
	}
	for i, step := range steps {
		out, err := root.Install(step.deb)
		if err != nil {
			t.Fatalf("%s: dpkg -i %s: %v\n%s", step.name, filepath.Base(step.deb), err, out)
		}
		version, status, err := root.Installed("kubelet")
		if err != nil {
			t.Fatal(err)
		}
		if version != Version(step.kubeletVersion) || status != "install ok installed" {
			t.Errorf("%s: dpkg has kubelet %s (%s), want %s (install ok installed)", step.name, version, status, Version(step.kubeletVersion))
		}
		printed, err := exec.Command(root.Path("usr/bin/kubelet"), "--version").CombinedOutput()
		if got := strings.TrimSpace(string(printed)); err != nil || got != "Kubernetes "+step.kubeletVersion {
			t.Errorf("%s: /usr/bin/kubelet --version printed %q (%v), want Kubernetes %s", step.name, got, err, step.kubeletVersion)
		}
		if unit := readFile(t, root.Path("lib/systemd/system/kubelet.service")); unit != upstreamUnit {
			t.Errorf("%s: kubelet.service is not upstream's unit:\n%s", step.name, unit)
		}
		// postinst's work in the root: the unit enabled (the static-pod directory is checked below).
		if link, err := os.Readlink(root.Path("etc/systemd/system/multi-user.target.wants/kubelet.service")); err != nil || link != "/lib/systemd/system/kubelet.service" {
			t.Errorf("%s: the unit is not enabled in the root: %q, %v", step.name, link, err)
		}
		if i == 0 {
			// The operator's node has its static pods; the packages must leave them.
			if err := os.WriteFile(manifest, []byte("kind: Pod\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		} else if got := readFile(t, manifest); got != "kind: Pod\n" {
			t.Errorf("%s: the node's %s became %q", step.name, manifest, got)
		}
		t.Logf("%s: kubelet %s installed", step.name, version)
	}
}

// TestDebScriptRefusesBadInput: an unknown variant or architecture is named, and nothing is written.
func TestDebScriptRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		variant, arch, want string
	}{
		{"without-0001", runtime.GOARCH, "no package for variant 'without-0001'"},
		{"patched", "s390x", "no package for architecture 's390x'"},
	} {
		out := filepath.Join(t.TempDir(), "packages")
		printed, err := Script(t, tc.variant, tc.arch, out)
		if err == nil || !strings.Contains(printed, tc.want) {
			t.Errorf("build/deb.sh %s %s: %v, printed %q; want a failure saying %q", tc.variant, tc.arch, err, printed, tc.want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("build/deb.sh %s %s failed but created %s", tc.variant, tc.arch, out)
		}
	}
}

func dpkgDeb(t *testing.T, args ...string) string {
	t.Helper()
	harness.Tool(t, "dpkg-deb", "dpkg")
	out, err := exec.Command("dpkg-deb", args...).Output()
	if err != nil {
		t.Fatalf("dpkg-deb %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
