// Package e2e runs a single-master kubeadm v1.17.3 control plane the way a master runs it: a real
// kubelet v1.17.3 starts kubeadm's static pods (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler) in Docker, from images this pipeline built, and the test drives docs/operations.md's
// upgrade procedure (cpswap apply, a failed apply, cpswap rollback) through it.
//
// The master's filesystem is _output/e2e/root (etc/kubernetes, var/lib/etcd, var/lib/kubelet,
// var/lib/docker); the container runtime is a private dockerd whose sockets live in /run/idc-lts-e2e.
// The machine's own Docker daemon is never touched. Both paths are fixed, so a run killed halfway
// is cleaned up by the next one.
package e2e

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

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/idc-lts/kube-1.17/test/harness"
)

const (
	// nodeName is the master's Node; every pod log and object of the test carries this prefix.
	nodeName = "idc-lts-e2e-master"
	// runDir holds the sockets and the dockerd's exec root: short, because a unix socket path
	// must fit in 108 bytes.
	runDir = "/run/idc-lts-e2e"
	// cgroupName is the kubelet's --cgroup-root: every pod's processes live below it.
	cgroupName = "idc-lts-e2e"
	// podLogDir is where kubelet v1.17.3 writes container logs; it has no flag to move it.
	podLogDir = "/var/log/pods"
	// containerLogDir holds the kubelet's symlinks to them.
	containerLogDir = "/var/log/containers"
	// runtimeName is the private dockerd's default OCI runtime (runc-oom-clamp).
	runtimeName = "idc-lts-e2e-runc"
)

// master is one kubeadm master on this machine: its directories, its dockerd and its kubelet.
type master struct {
	repo   string
	dir    string // _output/e2e: root plus the test's bookkeeping
	root   string // the master's filesystem, what / is on a real master
	logDir string
	ip     string // the host's address: kubeadm's advertiseAddress and the node IP

	dockerd     *harness.Process
	kubelet     *harness.Process
	stopLogs    chan struct{}
	logsStopped chan struct{}
}

func newMaster(t *testing.T) *master {
	repo := harness.RepoRoot(t)
	dir := filepath.Join(harness.OutputDir(t), "e2e")
	m := &master{repo: repo, dir: dir, root: filepath.Join(dir, "root"), logDir: harness.LogDir(t)}
	ip, err := hostIP()
	if err != nil {
		t.Fatalf("setup: %v", err)
	}
	m.ip = ip
	return m
}

func (m *master) path(p string) string { return filepath.Join(m.root, p) }

func (m *master) dockerSocket() string { return "unix://" + filepath.Join(runDir, "docker.sock") }

// docker runs the docker CLI against the private dockerd.
func (m *master) docker(args ...string) (string, error) {
	out, err := exec.Command("docker", append([]string{"-H", m.dockerSocket()}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("docker %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// startDockerd starts the private container runtime and waits for it to answer. Default bridge
// settings on purpose: with --bridge=none a dockerd deletes the host's docker0. The control
// plane is hostNetwork and needs no container network; --iptables, --ip-masq and --ip-forward
// off keep the host's firewall and forwarding as they are.
func (m *master) startDockerd(t *testing.T) {
	clamp := harness.Binary(t, "e2e", "runc-oom-clamp")
	config := m.path("etc/docker/daemon.json")
	if err := os.MkdirAll(filepath.Dir(config), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(runDir, 0o700); err != nil {
		t.Fatal(err)
	}
	m.dockerd = harness.StartDaemon(t, m.logDir, "dockerd", "dockerd",
		"--config-file="+config,
		"--data-root="+m.path("var/lib/docker"),
		"--exec-root="+filepath.Join(runDir, "docker"),
		"--pidfile="+filepath.Join(runDir, "dockerd.pid"),
		"--host="+m.dockerSocket(),
		"--iptables=false", "--ip-masq=false", "--ip-forward=false",
		"--storage-driver=vfs",
		"--exec-opt=native.cgroupdriver=cgroupfs",
		"--cgroup-parent=/"+cgroupName+"/docker",
		"--add-runtime="+runtimeName+"="+clamp,
		"--default-runtime="+runtimeName,
	)
	err := wait.PollImmediate(500*time.Millisecond, 60*time.Second, func() (bool, error) {
		if exited, err := m.dockerd.Exited(); exited {
			return false, fmt.Errorf("dockerd exited: %v\n%s", err, m.dockerd.Tail(20))
		}
		_, err := m.docker("version")
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("setup: private dockerd did not answer on %s: %v", m.dockerSocket(), err)
	}
}

// loadImages loads docker archives into the private dockerd.
func (m *master) loadImages(t *testing.T, archives ...string) {
	for _, archive := range archives {
		if _, err := os.Stat(archive); err != nil {
			t.Fatalf("setup: image archive %s: %v (run 'make test-e2e', which builds it)", archive, err)
		}
		if out, err := m.docker("load", "--quiet", "--input", archive); err != nil {
			t.Fatalf("setup: loading %s: %v", archive, err)
		} else {
			t.Logf("loaded %s", strings.TrimSpace(out))
		}
	}
}

// certsDir is where a dockerd run by root reads a registry's CA (certs.d/HOST:PORT/ca.crt),
// whatever its --config-file says; the test's entries carry certsMarker so that a killed run's
// are found and removed.
const (
	certsDir    = "/etc/docker/certs.d"
	certsMarker = "idc-lts-e2e"
)

// trustRegistry lets the master pull from the registry as an operator's master would: its CA in
// the container runtime's certs.d, its credentials in the kubelet's config.json (the first
// place kubelet v1.17 looks, --root-dir/config.json), which the kubelet hands to dockershim.
func (m *master) trustRegistry(t *testing.T, r *harness.Registry) {
	ca, err := os.ReadFile(r.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	if !exists(certsDir) {
		if err := os.MkdirAll(certsDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(certsDir, "."+certsMarker+"-created"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(certsDir, r.Host)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{"ca.crt": ca, certsMarker: nil} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	config, err := os.ReadFile(filepath.Join(r.DockerConfig, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(m.path("var/lib/kubelet"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(m.path("var/lib/kubelet/config.json"), config, 0o600); err != nil {
		t.Fatal(err)
	}
}

// untrustRegistries removes the certs.d entries this test (or a killed run of it) made, and
// certs.d itself if the test created it and nothing else is in it.
func untrustRegistries() error {
	markers, _ := filepath.Glob(filepath.Join(certsDir, "*", certsMarker))
	for _, marker := range markers {
		if err := os.RemoveAll(filepath.Dir(marker)); err != nil {
			return err
		}
	}
	created := filepath.Join(certsDir, "."+certsMarker+"-created")
	if exists(created) {
		if err := os.Remove(created); err != nil {
			return err
		}
		_ = os.Remove(certsDir) // fails, and stays, if something else is in it
	}
	return nil
}

// startKubelet runs kubelet v1.17.3 as kubeadm's systemd drop-in would (kubeconfig, static pod
// path), pointed at the private dockerd, and with every path it would write under the master's
// root. It registers its Node with the apiserver it hosts, so the static pods have mirror pods.
func (m *master) startKubelet(t *testing.T) {
	if err := createCgroups(m.cgroups(t)); err != nil {
		t.Fatalf("setup: cgroup root: %v", err)
	}
	for _, dir := range []string{"var/lib/kubelet", "var/lib/dockershim", "usr/libexec/kubernetes/kubelet-plugins/volume/exec"} {
		if err := os.MkdirAll(m.path(dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	m.kubelet = harness.StartDaemon(t, m.logDir, "kubelet", harness.Binary(t, "stock", "kubelet"),
		"--kubeconfig="+m.path("etc/kubernetes/kubelet.conf"),
		"--pod-manifest-path="+m.path("etc/kubernetes/manifests"),
		"--root-dir="+m.path("var/lib/kubelet"),
		"--cert-dir="+m.path("var/lib/kubelet/pki"),
		"--hostname-override="+nodeName,
		"--node-ip="+m.ip,
		"--container-runtime=docker",
		"--docker-endpoint="+m.dockerSocket(),
		// cAdvisor reads the runtime through its own flag; the default is the host's dockerd.
		"--docker="+m.dockerSocket(),
		// The default, /var/run/dockershim.sock, would replace a host kubelet's socket.
		"--container-runtime-endpoint=unix://"+filepath.Join(runDir, "dockershim.sock"),
		"--experimental-dockershim-root-directory="+m.path("var/lib/dockershim"),
		"--pod-infra-container-image=k8s.gcr.io/pause:3.1",
		"--cgroup-driver=cgroupfs",
		"--cgroup-root=/"+cgroupName,
		"--volume-plugin-dir="+m.path("usr/libexec/kubernetes/kubelet-plugins/volume/exec"),
		"--seccomp-profile-root="+m.path("var/lib/kubelet/seccomp"),
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
	)
	m.stopLogs, m.logsStopped = make(chan struct{}), make(chan struct{})
	go m.keepPodLogs(m.stopLogs, m.logsStopped)
}

func (m *master) cgroups(t *testing.T) []string {
	dirs, err := cgroupDirs(cgroupName)
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
}

func (m *master) stateFile() string { return filepath.Join(m.dir, "host-state.json") }

func (m *master) recordHostState(t *testing.T) {
	state := hostState{ProcFiles: readProcFiles(kubeletChangedProcFiles()), PodLogDirExisted: exists(podLogDir), LogDirExisted: exists(containerLogDir)}
	data, err := json.MarshalIndent(state, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(m.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(m.stateFile(), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// teardown stops everything the test (or a killed earlier run) started, in order: the kubelet,
// the containers, dockerd; then whatever survived, the mounts, the cgroups, the host's kernel
// parameters and pod logs; then the directories. It keeps the logs and reports what it found.
func (m *master) teardown(t *testing.T) {
	var problems []string
	note := func(format string, args ...interface{}) { problems = append(problems, fmt.Sprintf(format, args...)) }

	if m.stopLogs != nil {
		close(m.stopLogs)
		<-m.logsStopped
		m.stopLogs = nil
	}
	if m.kubelet != nil {
		m.kubelet.Stop()
	}
	if m.dockerd != nil {
		if exited, _ := m.dockerd.Exited(); !exited {
			m.saveContainerLogs(t)
			// The kubelet's pod logs are symlinks into dockerd's data root.
			m.copyPodLogs()
			if out, err := m.docker("ps", "--all", "--quiet"); err == nil && strings.TrimSpace(out) != "" {
				if _, err := m.docker(append([]string{"rm", "--force", "--volumes"}, strings.Fields(out)...)...); err != nil {
					note("removing containers: %v", err)
				}
			}
		}
		m.dockerd.Stop()
	}
	cgroups := m.cgroups(t)
	if n, err := killProcessTrees([]string{m.root, runDir}, cgroups); err != nil {
		note("killing leftover processes: %v", err)
	} else if n > 0 && (m.kubelet != nil || m.dockerd != nil) {
		note("%d processes outlived an orderly stop and were killed", n)
	} else if n > 0 {
		t.Logf("killed %d processes left by an earlier run", n)
	}
	if points, err := unmountUnder(m.root, runDir); err != nil {
		note("%v", err)
	} else if len(points) > 0 {
		t.Logf("unmounted %d mounts: %s", len(points), strings.Join(points, ", "))
	}
	if err := removeCgroups(cgroups); err != nil {
		note("%v", err)
	}
	if err := m.restoreHostState(t.Logf); err != nil {
		note("%v", err)
	}
	if err := untrustRegistries(); err != nil {
		note("removing the registry's CA from %s: %v", certsDir, err)
	}
	for _, dir := range []string{m.root, runDir} {
		if err := os.RemoveAll(dir); err != nil {
			note("removing %s: %v", dir, err)
		}
	}
	_ = os.Remove(m.dir) // when empty: nothing recorded is left to restore
	if points, _ := mountPointsUnder(m.root, runDir); len(points) > 0 {
		note("mounts left: %v", points)
	}
	if len(problems) > 0 {
		t.Errorf("teardown: %s", strings.Join(problems, "; "))
	}
}

// restoreHostState puts back the /proc files the kubelet changed and removes this test's pod logs (and the log
// directories if the kubelet created them), then forgets the recorded state.
func (m *master) restoreHostState(logf func(format string, args ...interface{})) error {
	data, err := os.ReadFile(m.stateFile())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var state hostState
	if err := json.Unmarshal(data, &state); err != nil {
		return fmt.Errorf("%s: %v", m.stateFile(), err)
	}
	var errs []error
	if changed, err := restoreProcFiles(state.ProcFiles); err != nil {
		errs = append(errs, err)
	} else if len(changed) > 0 {
		logf("restored what the kubelet changed: %s", strings.Join(changed, ", "))
	}
	for _, dir := range []string{podLogDir, containerLogDir} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.Contains(e.Name(), "idc-lts-e2e") {
				if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
					errs = append(errs, err)
				}
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
		errs = append(errs, os.Remove(m.stateFile()))
	}
	return errors.Join(errs...)
}

// saveContainerLogs lists the private dockerd's containers and images into the log directory.
func (m *master) saveContainerLogs(t *testing.T) {
	for name, args := range map[string][]string{
		"docker-ps.txt":     {"ps", "--all", "--no-trunc"},
		"docker-images.txt": {"image", "ls", "--no-trunc"},
	} {
		out, err := m.docker(args...)
		if err != nil {
			out = err.Error()
		}
		_ = os.WriteFile(filepath.Join(m.logDir, name), []byte(out), 0o644)
	}
}

// keepPodLogs copies the pod logs every few seconds until stop is closed, then closes stopped:
// the kubelet removes a replaced static pod's logs with the pod, and the test keeps every
// container's.
func (m *master) keepPodLogs(stop <-chan struct{}, stopped chan<- struct{}) {
	defer close(stopped)
	ticker := time.NewTicker(3 * time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ticker.C:
			m.copyPodLogs()
		}
	}
}

// copyPodLogs keeps the kubelet's container logs of this test's pods, every restart included.
func (m *master) copyPodLogs() {
	entries, _ := os.ReadDir(podLogDir)
	for _, e := range entries {
		if !strings.Contains(e.Name(), "idc-lts-e2e") {
			continue
		}
		_ = filepath.Walk(filepath.Join(podLogDir, e.Name()), func(path string, info os.FileInfo, err error) error {
			if err != nil || info.IsDir() {
				return nil
			}
			rel, _ := filepath.Rel(podLogDir, path)
			// A static pod keeps its UID when its manifest comes back (a rollback), and its
			// first container's log is 0.log again: the container ID tells the two apart.
			if target, err := os.Readlink(path); err == nil {
				if id := filepath.Base(target); len(id) >= 12 {
					rel = strings.TrimSuffix(rel, ".log") + "." + id[:12] + ".log"
				}
			}
			dest := filepath.Join(m.logDir, "pods", rel)
			data, err := os.ReadFile(path)
			if err == nil && os.MkdirAll(filepath.Dir(dest), 0o755) == nil {
				_ = os.WriteFile(dest, data, 0o644)
			}
			return nil
		})
	}
}

// cleanLeftovers removes what a killed earlier run left: its processes, mounts, cgroups, the
// host's kernel parameters and pod logs as they were before it, its directories.
func (m *master) cleanLeftovers(t *testing.T) {
	if !exists(m.dir) && !exists(runDir) {
		return
	}
	t.Logf("cleaning up after an earlier run in %s and %s", m.dir, runDir)
	m.teardown(t)
	if err := os.RemoveAll(m.dir); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond every interval until it holds, failing the step with its last error.
func waitFor(ctx context.Context, interval time.Duration, cond func() (bool, error)) error {
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
