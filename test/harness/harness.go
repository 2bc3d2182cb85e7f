// Package harness runs the pieces of a control plane for the regression suites: the stock
// kube-apiserver and etcd that the pipeline built (through controller-runtime's envtest), and the
// components under test as separate processes.
package harness

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/idc-lts/kube-1.17/test/tier"
)

// VariantUnderTestEnv names the build whose fixes a suite checks: "patched" unless set, or e.g.
// "without-0004" (build/patch.sh --without) to prove that a suite fails without its patch.
const VariantUnderTestEnv = "VARIANT_UNDER_TEST"

// RepoRoot is the directory holding this repository's VERSION file.
func RepoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Dir(file)
	for {
		if _, err := os.Stat(filepath.Join(dir, "VERSION")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no VERSION file above %s", filepath.Dir(file))
		}
		dir = parent
	}
}

// VariantUnderTest is the build the suite expects to be fixed.
func VariantUnderTest() string {
	if v := os.Getenv(VariantUnderTestEnv); v != "" {
		return v
	}
	return "patched"
}

// OutputDir is where the pipeline writes everything it generates: $OUTPUT_DIR when set (as
// build/lib.sh honours it; relative to the repository), else _output in the repository.
func OutputDir(t testing.TB) string {
	dir := os.Getenv("OUTPUT_DIR")
	switch {
	case dir == "":
		return filepath.Join(RepoRoot(t), "_output")
	case filepath.IsAbs(dir):
		return dir
	}
	return filepath.Join(RepoRoot(t), dir)
}

// BinDir is where the pipeline puts a variant's binaries for the machine the tests run on:
// <OutputDir>/bin/<variant>/linux-<arch> (bin_dir in build/lib.sh).
func BinDir(t testing.TB, variant string) string {
	return filepath.Join(OutputDir(t), "bin", variant, "linux-"+runtime.GOARCH)
}

// Binary returns the path of a built binary in BinDir; a missing one fails the test under make
// and skips it otherwise (tier.Missing), naming the command that builds it.
func Binary(t testing.TB, variant, name string) string {
	t.Helper()
	path := filepath.Join(BinDir(t, variant), name)
	if info, err := os.Stat(path); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
		tier.Missing(t, fmt.Sprintf("run 'make build' (or build/build.sh %s %s)", variant, name), "no binary %s", path)
	}
	return path
}

// emptiedLogDirs holds the tests whose log directory LogDir has emptied.
var emptiedLogDirs sync.Map

// LogDir is where a test's process logs go: <OutputDir>/test-logs/<test name>, emptied by the test's
// first call.
func LogDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(OutputDir(t), "test-logs", strings.ReplaceAll(t.Name(), "/", "_"))
	if _, done := emptiedLogDirs.LoadOrStore(t, true); done {
		return dir
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

var assetsOnce sync.Once

// dyingWithTheTest writes, for each binary, a script of the same name that runs it with
// SIGKILL as its parent-death signal (setpriv), and returns their directory. envtest starts etcd
// and kube-apiserver without one, so a test process killed halfway (a timeout, ^C, a CI limit)
// left them running; through these they die with it, as the processes StartProcess starts do.
// Each script is renamed into place whole: another test process may be starting it meanwhile.
func dyingWithTheTest(outputDir, setpriv string, binaries ...string) (string, error) {
	dir := filepath.Join(outputDir, "envtest-bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	for _, binary := range binaries {
		script := fmt.Sprintf("#!/bin/sh\n# Written by test/harness: %s dies with the test process that envtest started it for.\nexec %s --pdeathsig KILL -- %s \"$@\"\n",
			filepath.Base(binary), quote(setpriv), quote(binary))
		if err := writeWhole(filepath.Join(dir, filepath.Base(binary)), []byte(script), 0o755); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// writeWhole writes a file under a temporary name and renames it into place.
func writeWhole(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// ControlPlane is a stock kube-apiserver with its etcd.
type ControlPlane struct {
	// URL is the apiserver's insecure (test-only) address, http://127.0.0.1:port.
	URL    string
	Config *rest.Config
	Client kubernetes.Interface
	// Kubeconfig is a kubeconfig file for the components under test.
	Kubeconfig string
}

// StartControlPlane starts the stock kube-apiserver and etcd from _output/bin/stock and stops
// them when the test ends. Extra flags are appended to envtest's defaults.
func StartControlPlane(t testing.TB, extraAPIServerFlags ...string) *ControlPlane {
	t.Helper()
	apiserver := Binary(t, "stock", "kube-apiserver")
	etcd := Binary(t, "stock", "etcd")
	// envtest finds its binaries through the environment. Every test uses the same stock ones,
	// so the process-wide setting is set once (t.Setenv would forbid parallel tests).
	setpriv := Tool(t, "setpriv", "util-linux")
	assetsOnce.Do(func() {
		dir, err := dyingWithTheTest(OutputDir(t), setpriv, apiserver, etcd)
		if err != nil {
			t.Fatal(err)
		}
		os.Setenv("KUBEBUILDER_ASSETS", dir)
	})
	env := &envtest.Environment{
		KubeAPIServerFlags: append(append([]string{}, envtest.DefaultKubeAPIServerFlags...), extraAPIServerFlags...),
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting kube-apiserver %s and etcd %s: %v", apiserver, etcd, err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Logf("stopping the control plane: %v", err)
		}
	})
	cfg.QPS, cfg.Burst = 1000, 2000
	url := cfg.Host
	if !strings.Contains(url, "://") {
		url = "http://" + url
	}
	return &ControlPlane{
		URL:        url,
		Config:     cfg,
		Client:     kubernetes.NewForConfigOrDie(cfg),
		Kubeconfig: WriteKubeconfig(t, url),
	}
}

// WriteKubeconfig writes a kubeconfig for an insecure (test-only) apiserver URL.
func WriteKubeconfig(t testing.TB, server string) string {
	t.Helper()
	config := clientcmdapi.NewConfig()
	config.Clusters["test"] = &clientcmdapi.Cluster{Server: server}
	config.AuthInfos["test"] = &clientcmdapi.AuthInfo{}
	config.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	config.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		t.Fatal(err)
	}
	return path
}
