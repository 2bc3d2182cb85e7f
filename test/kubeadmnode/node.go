// Package kubeadmnode runs one kubeadm v1.17.3 node the way a master runs it: kubeadm's own init
// phases write its PKI, kubeconfigs and static-pod manifests, and a real kubelet v1.17.3 runs them
// in a private Docker, from images this pipeline built. test/e2e drives docs/operations.md's
// upgrade procedure through such a node; the conformance run (docs/conformance-plan.md) will run
// upstream's conformance tests on one.
//
// A node's filesystem is Config.Dir/root (etc/kubernetes, var/lib/etcd, var/lib/kubelet,
// var/lib/docker); its container runtime is a private dockerd whose sockets live in
// Config.RunDir. The machine's own Docker daemon is never touched. Both paths are fixed per suite,
// so a run killed halfway is cleaned up by the next one.
package kubeadmnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/idc-lts/kube-1.17/test/debpkg"
	"github.com/idc-lts/kube-1.17/test/harness"
)

// Config is what tells one suite's node from another's.
type Config struct {
	// Name is the node's Node; its static pods are named <component>-Name.
	Name string
	// Marker is in the name of every pod of the suite and of its certs.d entries, so that a
	// killed run's pod logs and registry CAs are found and removed.
	Marker string
	// Dir holds the node's root filesystem and the suite's bookkeeping (_output/e2e).
	Dir string
	// RunDir holds the sockets and the dockerd's exec root: short, because a unix socket path
	// must fit in 108 bytes.
	RunDir string
	// Cgroup is the kubelet's --cgroup-root: every pod's processes live below it.
	Cgroup string
	// Runtime names the private dockerd's default OCI runtime (runc-oom-clamp).
	Runtime string
	// NetNS, when set, is the network namespace the node lives in (CreateNetNS): its dockerd and
	// kubelet start in it, and so every pod; NodeIP is then the node's address there. Without it
	// the node shares the host's network and its address (hostNetwork pods only).
	NetNS  *NetNS
	NodeIP string
	// KubeletArgs come after the kubelet's own flags, and win over them.
	KubeletArgs []string
	// KubeadmConfig holds more documents for kubeadm.yaml (a KubeProxyConfiguration, say).
	KubeadmConfig string
	// ControlPlaneEndpoint is kubeadm's controlPlaneEndpoint (a load balancer's host:port in front
	// of several masters): every kubeconfig kubeadm writes names it, and the apiservers'
	// certificates carry it. Empty: the node's own address.
	ControlPlaneEndpoint string
	// OwnPodLogs gives the node's dockerd and kubelet a mount namespace of their own in which
	// /var/log/pods and /var/log/containers are the node's (Root/var/log/...). A kubelet deletes
	// every pod log directory there whose pod it does not know, so a second node on the machine
	// needs it; the first may share the host's.
	OwnPodLogs bool
	// LogDir is where the node's daemons log; the test's log directory when empty.
	LogDir string
	// OwnHostname gives the node's dockerd, kubelet and commands a UTS namespace of their own
	// whose hostname is Name (bound to RunDir/uts). hostNetwork pods take their dockerd's
	// hostname, and a component's leader-election identity begins with it: several masters on
	// one machine need one each, or every master's instance has the machine's name.
	OwnHostname bool
}

const (
	// podLogDir is where kubelet v1.17.3 writes container logs; it has no flag to move it.
	podLogDir = "/var/log/pods"
	// containerLogDir holds the kubelet's symlinks to them.
	containerLogDir = "/var/log/containers"
)

// Node is one kubeadm node on this machine: its directories, its dockerd and its kubelet.
type Node struct {
	Config
	repo string
	// Root is the node's filesystem, what / is on a real master.
	Root string
	// IP is the node's address (NodeIP, else the host's): kubeadm's advertiseAddress and the
	// node IP.
	IP string
	// LogDir is where the node's daemons log (Config.LogDir or the test's log directory).
	LogDir string

	Dockerd     *harness.Process
	Kubelet     *harness.Process
	stopLogs    chan struct{}
	logsStopped chan struct{}
	// kubeletBinary is the kubelet a Debian package installed in Root (InstallKubeletPackage);
	// the stock build's when empty. kubeletStarts counts StartKubelet's calls (one log each).
	kubeletBinary string
	kubeletStarts int
	// pastKubelets are the kubelets RestartKubelet stopped, for their logs.
	pastKubelets []*harness.Process
}

// New describes the node of cfg; nothing is started. Teardown kills and removes what the
// node's paths, cgroup and marker name, so each must be set and the paths absolute.
func New(t *testing.T, cfg Config) *Node {
	for field, value := range map[string]string{"Name": cfg.Name, "Marker": cfg.Marker, "Cgroup": cfg.Cgroup, "Runtime": cfg.Runtime} {
		if strings.TrimSpace(value) == "" || strings.ContainsAny(value, "/ ") {
			t.Fatalf("kubeadmnode.Config.%s is %q: it must be a plain name", field, value)
		}
	}
	for field, value := range map[string]string{"Dir": cfg.Dir, "RunDir": cfg.RunDir} {
		if !filepath.IsAbs(value) || filepath.Clean(value) != value || value == "/" {
			t.Fatalf("kubeadmnode.Config.%s is %q: it must be an absolute, clean path below /", field, value)
		}
	}
	if (cfg.NetNS == nil) != (cfg.NodeIP == "") {
		t.Fatalf("kubeadmnode.Config: NetNS and NodeIP go together (NetNS %v, NodeIP %q)", cfg.NetNS, cfg.NodeIP)
	}
	n := &Node{Config: cfg, repo: harness.RepoRoot(t), Root: filepath.Join(cfg.Dir, "root"), LogDir: cfg.LogDir, IP: cfg.NodeIP}
	if n.LogDir == "" {
		n.LogDir = harness.LogDir(t)
	} else if err := os.MkdirAll(n.LogDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if n.IP == "" {
		ip, err := hostIP()
		if err != nil {
			t.Fatalf("setup: %v", err)
		}
		n.IP = ip
	}
	return n
}

// daemon starts a long-running process of the node, in its network namespace if it has one, and
// with OwnPodLogs in the mount namespace of the node's dockerd, which the dockerd starts in.
// unshare, sh and nsenter all execute the next in place: the process started is the daemon, with
// its parent-death signal.
func (n *Node) daemon(t *testing.T, name, binary string, args ...string) *harness.Process {
	enter, err := n.namespaces()
	if err != nil {
		t.Fatalf("setup: %v", err)
	}
	if n.OwnPodLogs && n.Dockerd != nil {
		enter = append(enter, fmt.Sprintf("--mount=/proc/%d/ns/mnt", n.Dockerd.Pid()))
	}
	if len(enter) > 0 {
		args = append(append(enter, "--", binary), args...)
		binary = "nsenter"
	}
	if n.OwnPodLogs && n.Dockerd == nil {
		// The node's log directories over the host's, seen only in the new mount namespace
		// (private: nothing mounted there reaches the host).
		bind := "set -o errexit"
		for _, dir := range []string{podLogDir, containerLogDir} {
			bind += fmt.Sprintf("; mkdir -p %[1]q %[2]q; mount --bind %[2]q %[1]q", dir, n.Path(dir))
		}
		args = append([]string{"--mount", "--propagation=private", "--", "sh", "-c", bind + `; exec "$@"`, "sh", binary}, args...)
		binary = "unshare"
	}
	return harness.StartDaemon(t, n.LogDir, name, binary, args...)
}

// namespaces are nsenter's options that enter the node's network namespace if it has one and its
// UTS namespace (OwnHostname), which they create the first time.
func (n *Node) namespaces() ([]string, error) {
	var enter []string
	if n.NetNS != nil {
		enter = append(enter, "--net="+n.NetNS.Path)
	}
	if n.OwnHostname {
		if err := n.createUTSNS(); err != nil {
			return nil, err
		}
		enter = append(enter, "--uts="+n.utsPath())
	}
	return enter, nil
}

// utsPath is the file the node's UTS namespace is bound to: under RunDir, which Teardown
// unmounts and removes.
func (n *Node) utsPath() string { return filepath.Join(n.RunDir, "uts") }

// createUTSNS creates the node's UTS namespace with Name as its hostname, unless it exists.
func (n *Node) createUTSNS() error {
	path := n.utsPath()
	if points, err := mountPointsUnder(path); err != nil || len(points) > 0 {
		return err
	}
	if err := os.MkdirAll(n.RunDir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(path, nil, 0o444); err != nil {
		return fmt.Errorf("UTS namespace file: %v", err)
	}
	if out, err := exec.Command("unshare", "--uts="+path, "hostname", n.Name).CombinedOutput(); err != nil {
		_ = unix.Unmount(path, unix.MNT_DETACH)
		return fmt.Errorf("unshare --uts=%s hostname %s: %v: %s", path, n.Name, err, out)
	}
	return nil
}

// podLogDirs are where the node's kubelet writes pod logs, as the host sees them.
func (n *Node) podLogDirs() []string {
	if n.OwnPodLogs {
		return []string{n.Path(podLogDir), n.Path(containerLogDir)}
	}
	return []string{podLogDir, containerLogDir}
}

// RestConfig is a client configuration for the node's apiserver as its admin, dialling into the
// node's namespace when it has one.
func (n *Node) RestConfig(t *testing.T) *rest.Config {
	config, err := clientcmd.BuildConfigFromFlags("", n.Path("etc/kubernetes/admin.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if n.NetNS != nil {
		config.Dial = n.NetNS.DialContext
	}
	return config
}

// Path is p under the node's root.
func (n *Node) Path(p string) string { return filepath.Join(n.Root, p) }

// DockerSocket is the private dockerd's socket.
func (n *Node) DockerSocket() string { return "unix://" + filepath.Join(n.RunDir, "docker.sock") }

// Docker runs the docker CLI against the private dockerd.
func (n *Node) Docker(args ...string) (string, error) {
	out, err := exec.Command("docker", append([]string{"-H", n.DockerSocket()}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("docker %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// StartDockerd starts the private container runtime and waits for it to answer. Default bridge
// settings on purpose: with --bridge=none a dockerd deletes the host's docker0. The control
// plane is hostNetwork and needs no container network; --iptables, --ip-masq and --ip-forward
// off keep the host's firewall and forwarding as they are.
func (n *Node) StartDockerd(t *testing.T) {
	clamp := harness.Binary(t, "e2e", "runc-oom-clamp")
	config := n.Path("etc/docker/daemon.json")
	if err := os.MkdirAll(filepath.Dir(config), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(n.RunDir, 0o700); err != nil {
		t.Fatal(err)
	}
	n.Dockerd = n.daemon(t, "dockerd", "dockerd",
		"--config-file="+config,
		"--data-root="+n.Path("var/lib/docker"),
		"--exec-root="+filepath.Join(n.RunDir, "docker"),
		"--pidfile="+filepath.Join(n.RunDir, "dockerd.pid"),
		"--host="+n.DockerSocket(),
		"--iptables=false", "--ip-masq=false", "--ip-forward=false",
		"--storage-driver=vfs",
		"--exec-opt=native.cgroupdriver=cgroupfs",
		"--cgroup-parent=/"+n.Cgroup+"/docker",
		"--add-runtime="+n.Runtime+"="+clamp,
		"--default-runtime="+n.Runtime,
	)
	err := wait.PollImmediate(500*time.Millisecond, 60*time.Second, func() (bool, error) {
		if exited, err := n.Dockerd.Exited(); exited {
			return false, fmt.Errorf("dockerd exited: %v\n%s", err, n.Dockerd.Tail(20))
		}
		_, err := n.Docker("version")
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("setup: private dockerd did not answer on %s: %v", n.DockerSocket(), err)
	}
}

// LoadImages loads docker archives into the private dockerd.
func (n *Node) LoadImages(t *testing.T, archives ...string) {
	for _, archive := range archives {
		if _, err := os.Stat(archive); err != nil {
			t.Fatalf("setup: image archive %s: %v (run 'make test-e2e', which builds it)", archive, err)
		}
		if out, err := n.Docker("load", "--quiet", "--input", archive); err != nil {
			t.Fatalf("setup: loading %s: %v", archive, err)
		} else {
			t.Logf("loaded %s", strings.TrimSpace(out))
		}
	}
}

// LoadControlPlaneImages loads the images the node's static pods and sandboxes run
// (ClaimMachine checked they are built).
func (n *Node) LoadControlPlaneImages(t *testing.T) {
	var archives []string
	for _, name := range controlPlaneImages {
		archives = append(archives, archive(t, name))
	}
	n.LoadImages(t, archives...)
}

// LoadSandboxImage loads the pause image alone: all that a worker, which runs no control plane,
// needs of them.
func (n *Node) LoadSandboxImage(t *testing.T) {
	n.LoadImages(t, archive(t, "pause"))
}

// certsDir is where a dockerd run by root reads a registry's CA (certs.d/HOST:PORT/ca.crt),
// whatever its --config-file says; the test's entries carry the node's Marker so that a killed
// run's are found and removed.
const certsDir = "/etc/docker/certs.d"

// TrustRegistry lets the master pull from the registry as an operator's master would: its CA in
// the container runtime's certs.d, its credentials in the kubelet's config.json (the first
// place kubelet v1.17 looks, --root-dir/config.json), which the kubelet hands to dockershim.
func (n *Node) TrustRegistry(t *testing.T, r *harness.Registry) {
	ca, err := os.ReadFile(r.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	if !Exists(certsDir) {
		if err := os.MkdirAll(certsDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(certsDir, "."+n.Marker+"-created"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(certsDir, r.Host)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{"ca.crt": ca, n.Marker: nil} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	config, err := os.ReadFile(filepath.Join(r.DockerConfig, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(n.Path("var/lib/kubelet"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.Path("var/lib/kubelet/config.json"), config, 0o600); err != nil {
		t.Fatal(err)
	}
}

// untrustRegistries removes the certs.d entries this test (or a killed run of it) made, and
// certs.d itself if the test created it and nothing else is in it.
func (n *Node) untrustRegistries() error {
	markers, _ := filepath.Glob(filepath.Join(certsDir, "*", n.Marker))
	for _, marker := range markers {
		if err := os.RemoveAll(filepath.Dir(marker)); err != nil {
			return err
		}
	}
	created := filepath.Join(certsDir, "."+n.Marker+"-created")
	if Exists(created) {
		if err := os.Remove(created); err != nil {
			return err
		}
		_ = os.Remove(certsDir) // fails, and stays, if something else is in it
	}
	return nil
}

// InstallKubeletPackage installs a kubelet Debian package (build/deb.sh) into the node's root as
// `dpkg -i` does on a node (test/debpkg: the node's own dpkg database, the package's scripts run
// against the root), and returns dpkg's output, which it also keeps in the node's log directory.
// StartKubelet then runs the package's /usr/bin/kubelet; a kubelet already running keeps running
// until RestartKubelet.
func (n *Node) InstallKubeletPackage(t *testing.T, deb string) (string, error) {
	out, err := debpkg.NewRoot(t, n.Root).Install(deb)
	_ = os.WriteFile(filepath.Join(n.LogDir, "dpkg-"+filepath.Base(deb)+".log"), []byte(out), 0o644)
	if err != nil {
		return out, fmt.Errorf("dpkg -i %s on %s: %v", filepath.Base(deb), n.Name, err)
	}
	n.kubeletBinary = n.Path("usr/bin/kubelet")
	return out, nil
}

// RestartKubelet stops the node's kubelet and starts its binary again, as the package's scripts
// do on an upgrade (prerm stops the unit, postinst starts it): the pods' containers keep running
// in the container runtime.
func (n *Node) RestartKubelet(t *testing.T) {
	n.stopKubelet()
	if n.Kubelet != nil {
		n.pastKubelets = append(n.pastKubelets, n.Kubelet)
	}
	n.StartKubelet(t)
}

// stopKubelet stops the kubelet and, first, the copying of its pod logs (a last copy included).
func (n *Node) stopKubelet() {
	if n.stopLogs != nil {
		close(n.stopLogs)
		<-n.logsStopped
		n.stopLogs = nil
	}
	if n.Kubelet != nil {
		n.Kubelet.Stop()
	}
}

// KubeletLogLines returns the lines holding substr of every kubelet the node ran, in order.
func (n *Node) KubeletLogLines(substr string) []string {
	var lines []string
	for _, k := range append(append([]*harness.Process(nil), n.pastKubelets...), n.Kubelet) {
		if k != nil {
			lines = append(lines, k.LogLines(substr)...)
		}
	}
	return lines
}

// StartKubelet runs kubelet v1.17.3 (the installed package's when there is one, else the stock
// build) as kubeadm's systemd drop-in would (kubeconfig, static pod path), pointed at the private
// dockerd, and with every path it would write under the master's root. It registers its Node with
// the apiserver it hosts, so the static pods have mirror pods.
func (n *Node) StartKubelet(t *testing.T) {
	if err := createCgroups(n.cgroups(t, false)); err != nil {
		t.Fatalf("setup: cgroup root: %v", err)
	}
	for _, dir := range []string{"var/lib/kubelet", "var/lib/dockershim", "usr/libexec/kubernetes/kubelet-plugins/volume/exec", "etc/kubernetes/manifests"} {
		if err := os.MkdirAll(n.Path(dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	binary := n.kubeletBinary
	if binary == "" {
		binary = harness.Binary(t, "stock", "kubelet")
	}
	n.kubeletStarts++
	logName := "kubelet"
	if n.kubeletStarts > 1 {
		logName = fmt.Sprintf("kubelet-%d", n.kubeletStarts)
	}
	n.Kubelet = n.daemon(t, logName, binary, append([]string{
		"--kubeconfig=" + n.Path("etc/kubernetes/kubelet.conf"),
		"--pod-manifest-path=" + n.Path("etc/kubernetes/manifests"),
		"--root-dir=" + n.Path("var/lib/kubelet"),
		"--cert-dir=" + n.Path("var/lib/kubelet/pki"),
		"--hostname-override=" + n.Name,
		"--node-ip=" + n.IP,
		"--container-runtime=docker",
		"--docker-endpoint=" + n.DockerSocket(),
		// cAdvisor reads the runtime through its own flag; the default is the host's dockerd.
		"--docker=" + n.DockerSocket(),
		// The default, /var/run/dockershim.sock, would replace a host kubelet's socket.
		"--container-runtime-endpoint=unix://" + filepath.Join(n.RunDir, "dockershim.sock"),
		"--experimental-dockershim-root-directory=" + n.Path("var/lib/dockershim"),
		"--pod-infra-container-image=k8s.gcr.io/pause:3.1",
		"--cgroup-driver=cgroupfs",
		"--cgroup-root=/" + n.Cgroup,
		"--volume-plugin-dir=" + n.Path("usr/libexec/kubernetes/kubelet-plugins/volume/exec"),
		"--seccomp-profile-root=" + n.Path("var/lib/kubelet/seccomp"),
		// The host's firewall, OOM settings and disk are not the test's to change. The device
		// manager's directory is /var/lib/kubelet/device-plugins whatever --root-dir says, and it
		// deletes the files it finds there.
		"--make-iptables-util-chains=false",
		"--feature-gates=DevicePlugins=false",
		"--oom-score-adj=0",
		"--fail-swap-on=false",
		"--image-gc-high-threshold=100",
		"--image-gc-low-threshold=99",
		"--eviction-hard=memory.available<1Mi,nodefs.available<1%,imagefs.available<1%",
		// Loopback and free ports: 1.17's defaults serve anyone who reaches 10250 (anonymous,
		// AlwaysAllow), and the machine may serve 10250 itself.
		"--address=127.0.0.1",
		fmt.Sprintf("--port=%d", harness.FreePort(t)),
		fmt.Sprintf("--healthz-port=%d", harness.FreePort(t)),
		"--read-only-port=0",
		"--v=2",
	}, n.KubeletArgs...)...)
	n.stopLogs, n.logsStopped = make(chan struct{}), make(chan struct{})
	go n.keepPodLogs(n.stopLogs, n.logsStopped)
}

// cgroups are the node's cgroup directories: the kubelet's --cgroup-root in every v1 hierarchy,
// and with unified also the v2 one, where runc creates it (to remove, not to create).
func (n *Node) cgroups(t *testing.T, unified bool) []string {
	dirs, err := cgroupDirs(n.Cgroup, unified)
	if err != nil {
		t.Fatalf("cgroups: %v", err)
	}
	return dirs
}

// hostIP returns the IPv4 address of the interface that holds the default route: kubeadm's
// advertiseAddress must not be a loopback address (the apiserver's own Endpoints reject it).
func hostIP() (string, error) {
	data, err := os.ReadFile("/proc/net/route")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n")[1:] {
		fields := strings.Fields(line)
		if len(fields) < 2 || fields[1] != "00000000" {
			continue
		}
		iface, err := net.InterfaceByName(fields[0])
		if err != nil {
			return "", err
		}
		addrs, err := iface.Addrs()
		if err != nil {
			return "", err
		}
		for _, addr := range addrs {
			if ipNet, ok := addr.(*net.IPNet); ok && ipNet.IP.To4() != nil {
				return ipNet.IP.String(), nil
			}
		}
	}
	return "", errors.New("no IPv4 address on the default route's interface")
}

// hostState is what the test changes on the host outside its directories, recorded before it
// changes anything, in _output/e2e/host-state.json so that a killed run's successor restores it.
type hostState struct {
	ProcFiles        map[string]string `json:"procFiles"`
	PodLogDirExisted bool              `json:"podLogDirExisted"`
	LogDirExisted    bool              `json:"containerLogDirExisted"`
	// PodLogs are the entries of the pod log directories before the run: what is new there is
	// the run's (the machine lock keeps every other node of ours away).
	PodLogs []string `json:"podLogs"`
	// Absent are the host paths a node's iptables or pods may create that were not there.
	Absent []string `json:"absent"`
}

// createdHostPaths are paths outside the node's root that a node may create: iptables' lock
// (taken by every iptables -w, whatever the network namespace), and an empty directory a hostPath
// volume names (dockerd creates a bind mount's missing source).
var createdHostPaths = []string{"/run/xtables.lock", "/lib/modules"}

// podLogEntries lists the pod log directories' entries as paths.
func podLogEntries() []string {
	all := []string{} // recorded as [], where a state file of before the field has none
	for _, dir := range []string{podLogDir, containerLogDir} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			all = append(all, filepath.Join(dir, e.Name()))
		}
	}
	return all
}

func (n *Node) stateFile() string { return filepath.Join(n.Dir, "host-state.json") }

// RecordHostState writes down, before the node changes anything, what it changes on the host
// outside its directories (hostState), for Teardown or a killed run's successor to put back.
func (n *Node) RecordHostState(t *testing.T) {
	state := hostState{ProcFiles: readProcFiles(kubeletChangedProcFiles()), PodLogDirExisted: Exists(podLogDir), LogDirExisted: Exists(containerLogDir),
		PodLogs: podLogEntries()}
	for _, path := range createdHostPaths {
		if !Exists(path) {
			state.Absent = append(state.Absent, path)
		}
	}
	data, err := json.MarshalIndent(state, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(n.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.stateFile(), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Exists reports whether path exists.
func Exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Teardown stops everything the test (or a killed earlier run) started, in order: the kubelet,
// the containers, dockerd; then whatever survived, the mounts, the cgroups, the host's kernel
// parameters and pod logs; then the directories. It keeps the logs and reports what it found.
func (n *Node) Teardown(t *testing.T) {
	var problems []string
	note := func(format string, args ...interface{}) { problems = append(problems, fmt.Sprintf(format, args...)) }

	n.stopKubelet()
	if n.Dockerd != nil {
		if exited, _ := n.Dockerd.Exited(); !exited {
			n.saveContainerLogs(t)
			// The kubelet's pod logs are symlinks into dockerd's data root.
			n.copyPodLogs()
			if out, err := n.Docker("ps", "--all", "--quiet"); err == nil && strings.TrimSpace(out) != "" {
				if _, err := n.Docker(append([]string{"rm", "--force", "--volumes"}, strings.Fields(out)...)...); err != nil {
					note("removing containers: %v", err)
				}
			}
		}
		n.Dockerd.Stop()
	}
	if n.NetNS != nil {
		if killed, err := n.NetNS.KillProcesses(); err != nil {
			note("killing the processes in %s: %v", n.NetNS.Path, err)
		} else if killed > 0 {
			t.Logf("killed %d processes left in %s", killed, n.NetNS.Path)
		}
	}
	cgroups := n.cgroups(t, true)
	if killed, err := killProcessTrees([]string{n.Root, n.RunDir}, cgroups); err != nil {
		note("killing leftover processes: %v", err)
	} else if killed > 0 && (n.Kubelet != nil || n.Dockerd != nil) {
		note("%d processes outlived an orderly stop and were killed", killed)
	} else if killed > 0 {
		t.Logf("killed %d processes left by an earlier run", killed)
	}
	if points, err := unmountUnder(n.Root, n.RunDir); err != nil {
		note("%v", err)
	} else if len(points) > 0 {
		t.Logf("unmounted %d mounts: %s", len(points), strings.Join(points, ", "))
	}
	if err := removeCgroups(cgroups); err != nil {
		note("%v", err)
	}
	if err := n.restoreHostState(t.Logf); err != nil {
		note("%v", err)
	}
	if err := n.untrustRegistries(); err != nil {
		note("removing the registry's CA from %s: %v", certsDir, err)
	}
	for _, dir := range []string{n.Root, n.RunDir} {
		if err := os.RemoveAll(dir); err != nil {
			note("removing %s: %v", dir, err)
		}
	}
	_ = os.Remove(n.Dir) // when empty: nothing recorded is left to restore
	if points, _ := mountPointsUnder(n.Root, n.RunDir); len(points) > 0 {
		note("mounts left: %v", points)
	}
	if len(problems) > 0 {
		t.Errorf("teardown: %s", strings.Join(problems, "; "))
	}
}

// restoreHostState puts back the /proc files the kubelet changed and removes this test's pod logs (and the log
// directories if the kubelet created them), then forgets the recorded state.
func (n *Node) restoreHostState(logf func(format string, args ...interface{})) error {
	data, err := os.ReadFile(n.stateFile())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var state hostState
	if err := json.Unmarshal(data, &state); err != nil {
		return fmt.Errorf("%s: %v", n.stateFile(), err)
	}
	var errs []error
	if changed, err := restoreProcFiles(state.ProcFiles); err != nil {
		errs = append(errs, err)
	} else if len(changed) > 0 {
		logf("restored what the kubelet changed: %s", strings.Join(changed, ", "))
	}
	before := map[string]bool{}
	for _, path := range state.PodLogs {
		before[path] = true
	}
	for _, path := range podLogEntries() {
		if n.OwnPodLogs {
			break // the node's pod logs are in its root; the host's are another node's
		}
		if strings.Contains(filepath.Base(path), n.Marker) || (state.PodLogs != nil && !before[path]) {
			if err := os.RemoveAll(path); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, path := range state.Absent {
		// Only what the run made: an empty directory or an empty lock file.
		if info, err := os.Stat(path); err == nil && (info.IsDir() || info.Size() == 0) {
			if err := os.Remove(path); err != nil {
				errs = append(errs, fmt.Errorf("removing %s, which the node created: %v", path, err))
			} else {
				logf("removed %s, which was not there before the run", path)
			}
		}
	}
	for dir, existed := range map[string]bool{podLogDir: state.PodLogDirExisted, containerLogDir: state.LogDirExisted} {
		if entries, err := os.ReadDir(dir); err == nil && !existed && len(entries) == 0 {
			if err := os.Remove(dir); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) == 0 {
		errs = append(errs, os.Remove(n.stateFile()))
	}
	return errors.Join(errs...)
}

// saveContainerLogs lists the private dockerd's containers and images into the log directory.
func (n *Node) saveContainerLogs(t *testing.T) {
	for name, args := range map[string][]string{
		"docker-ps.txt":     {"ps", "--all", "--no-trunc"},
		"docker-images.txt": {"image", "ls", "--no-trunc"},
	} {
		out, err := n.Docker(args...)
		if err != nil {
			out = err.Error()
		}
		_ = os.WriteFile(filepath.Join(n.LogDir, name), []byte(out), 0o644)
	}
}

// keepPodLogs copies the pod logs every few seconds until stop is closed, then closes stopped:
// the kubelet removes a replaced static pod's logs with the pod, and the test keeps every
// container's.
func (n *Node) keepPodLogs(stop <-chan struct{}, stopped chan<- struct{}) {
	defer close(stopped)
	ticker := time.NewTicker(3 * time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ticker.C:
			n.copyPodLogs()
		}
	}
}

// copyPodLogs keeps the kubelet's container logs of this test's pods, every restart included.
func (n *Node) copyPodLogs() {
	logDir := n.podLogDirs()[0]
	entries, _ := os.ReadDir(logDir)
	for _, e := range entries {
		if !n.OwnPodLogs && !strings.Contains(e.Name(), n.Marker) {
			continue
		}
		_ = filepath.Walk(filepath.Join(logDir, e.Name()), func(path string, info os.FileInfo, err error) error {
			if err != nil || info.IsDir() {
				return nil
			}
			rel, _ := filepath.Rel(logDir, path)
			// A static pod keeps its UID when its manifest comes back (a rollback), and its
			// first container's log is 0.log again: the container ID tells the two apart.
			if target, err := os.Readlink(path); err == nil {
				if id := filepath.Base(target); len(id) >= 12 {
					rel = strings.TrimSuffix(rel, ".log") + "." + id[:12] + ".log"
				}
			}
			dest := filepath.Join(n.LogDir, "pods", rel)
			data, err := os.ReadFile(path)
			if err == nil && os.MkdirAll(filepath.Dir(dest), 0o755) == nil {
				_ = os.WriteFile(dest, data, 0o644)
			}
			return nil
		})
	}
}

// CleanLeftovers removes what a killed earlier run left: its processes, mounts, cgroups, the
// host's kernel parameters and pod logs as they were before it, its directories.
func (n *Node) CleanLeftovers(t *testing.T) {
	left := Exists(n.Dir) || Exists(n.RunDir)
	for _, dir := range n.cgroups(t, true) {
		left = left || Exists(dir)
	}
	if !left {
		return
	}
	t.Logf("cleaning up after an earlier run in %s and %s", n.Dir, n.RunDir)
	n.Teardown(t)
	if err := os.RemoveAll(n.Dir); err != nil {
		t.Fatal(err)
	}
}

// RunsKubelet reports whether the Node named name reports kubelet version (its kubelet's first
// status update after a restart says it) and is Ready; the error says what it still lacks.
func RunsKubelet(client kubernetes.Interface, name, version string) (bool, error) {
	node, err := client.CoreV1().Nodes().Get(name, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	if v := node.Status.NodeInfo.KubeletVersion; v != version {
		return false, fmt.Errorf("Node %s reports kubelet %s, want %s", name, v, version)
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue, fmt.Errorf("Node %s is not Ready: %s %s", name, c.Reason, c.Message)
		}
	}
	return false, fmt.Errorf("Node %s has no Ready condition", name)
}

// WaitFor polls cond every interval until it holds, failing the step with its last error.
func WaitFor(ctx context.Context, interval time.Duration, cond func() (bool, error)) error {
	var last error
	err := wait.PollImmediateUntil(interval, func() (bool, error) {
		ok, err := cond()
		last = err
		return ok, nil
	}, ctx.Done())
	if err != nil && last != nil {
		return fmt.Errorf("%v (last: %v)", err, last)
	}
	return err
}
