package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/idc-lts/kube-1.17/pkg/diagnose"
	"github.com/idc-lts/kube-1.17/test/debpkg"
	"github.com/idc-lts/kube-1.17/test/harness"
	"github.com/idc-lts/kube-1.17/test/kubeadmnode"
)

// components are the three the release replaces, in docs/operations.md's order; elected are
// those of them that elect a leader (kube-apiserver elects none).
var (
	components = harness.Components
	elected    = harness.SuiteComponents
)

// TestKubeadmMaster is the operator's procedure on one kubeadm master run by a real kubelet.
func TestKubeadmMaster(t *testing.T) {
	kubeadmnode.ClaimMachine(t)
	// The operator's path: the release is cut for their registry, published and signed there, and
	// the kubelet pulls it by digest (the README's make release, make publish, cpswap apply).
	registry, release, verifyKey := harness.PublishedRelease(t, "e2e-key-password")
	tmp := t.TempDir()
	releaseImages := map[string]string{} // REGISTRY/component:version@digest, as the release's manifests name them
	for _, c := range components {
		digest, err := os.ReadFile(filepath.Join(release, "images", c+".digest"))
		if err != nil {
			t.Fatal(err)
		}
		releaseImages[c] = fmt.Sprintf("%s/idc-lts/%s:%s@%s", registry.Host, c, filepath.Base(release), strings.TrimSpace(string(digest)))
	}
	m := kubeadmnode.New(t, kubeadmnode.Config{Name: "idc-lts-e2e-master", Marker: "idc-lts-e2e",
		Dir: filepath.Join(harness.OutputDir(t), "e2e"), RunDir: "/run/idc-lts-e2e", Cgroup: "idc-lts-e2e", Runtime: "idc-lts-e2e-runc"})
	m.CleanLeftovers(t)
	s := &steps{t: t, logDir: m.LogDir}
	defer s.report()
	t.Cleanup(func() {
		bridgeBefore := kubeadmnode.Exists("/sys/class/net/docker0")
		m.Teardown(t)
		if bridgeBefore && !kubeadmnode.Exists("/sys/class/net/docker0") {
			t.Errorf("teardown: the host's docker0 is gone")
		}
	})

	// The node's kubelet comes from a Debian package, as on our users' nodes: upstream's layout and
	// version (1.17.3-00) around the stock kubelet first; the release's package replaces it below.
	upstreamPackage := debpkg.Build(t, "stock", filepath.Join(tmp, "packages"))
	ourPackage := filepath.Join(release, "packages", fmt.Sprintf("kubelet_%s_%s.deb", debpkg.Version(filepath.Base(release)), runtime.GOARCH))
	s.run("setup: kubeadm phases, private dockerd, images, upstream's kubelet package (dpkg -i), kubelet", 5*time.Minute, func(ctx context.Context) error {
		m.KubeadmInit(t)
		m.RecordHostState(t)
		m.StartDockerd(t)
		m.LoadControlPlaneImages(t)
		m.TrustRegistry(t, registry)
		if out, err := m.InstallKubeletPackage(t, upstreamPackage); err != nil {
			return fmt.Errorf("%v\n%s", err, out)
		}
		m.StartKubelet(t)
		return nil
	})
	s.logImageSizes(m)

	client := kubernetes.NewForConfigOrDie(m.RestConfig(t))
	hostname, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	onThisHost := func(holder string) bool { return strings.HasPrefix(holder, hostname+"_") }

	stockImage := func(c string) string { return "k8s.gcr.io/" + c + ":v1.17.3" }
	s.run("stock control plane up: 4 static pods Running, both components lead through endpointsleases", 5*time.Minute, func(ctx context.Context) error {
		for _, c := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
			image := "k8s.gcr.io/etcd:3.4.3-0"
			if c != "etcd" {
				image = stockImage(c)
			}
			if err := waitMirrorPod(ctx, client, m.Name, c, image); err != nil {
				return fmt.Errorf("%v\n%s", err, m.Kubelet.Tail(10))
			}
		}
		return waitLeaders(ctx, client, onThisHost)
	})

	s.run("a headless Service with 3 pods run by the kubelet, scheduled by the stock scheduler", 2*time.Minute, func(ctx context.Context) error {
		return createHeadlessService(ctx, client, 3)
	})

	cpswap := harness.Binary(t, "e2e", "cpswap")
	manifest := func(c string) string { return m.Path("etc/kubernetes/manifests/" + c + ".yaml") }
	backupDir := m.Path("var/lib/cpswap/backups")
	if err := os.MkdirAll(backupDir, 0o700); err != nil {
		t.Fatal(err)
	}
	original := map[string][]byte{}
	for _, c := range components {
		if original[c], err = os.ReadFile(manifest(c)); err != nil {
			t.Fatal(err)
		}
	}
	// docs/operations.md's command, with the master's paths under the test's root.
	apply := func(ctx context.Context, c, image, timeout string, extra ...string) (int, string) {
		return runLogged(ctx, m.LogDir, "cpswap-apply-"+c, cpswap, append([]string{"apply", "--manifest", manifest(c), "--image", image,
			"--profile", "leases", "--backup-dir", backupDir, "--kubeconfig", m.Path("etc/kubernetes/admin.conf"), "--timeout", timeout,
			"--node-name", m.Name}, extra...)...)
	}

	s.run("apply with a digest the registry does not have: cpswap rolls back by itself, stock runs and leads again", 4*time.Minute, func(ctx context.Context) error {
		c := "kube-controller-manager"
		// The kube-scheduler's index under the kube-controller-manager's name: no such manifest.
		missing := strings.SplitN(releaseImages[c], "@", 2)[0] + "@" + strings.SplitN(releaseImages["kube-scheduler"], "@", 2)[1]
		code, out := apply(ctx, c, missing, "60s")
		if code != 3 {
			return fmt.Errorf("cpswap exit code %d, want 3 (changed, then rolled back):\n%s", code, out)
		}
		if have, _ := os.ReadFile(manifest(c)); !bytes.Equal(have, original[c]) {
			return fmt.Errorf("%s is not byte for byte what it was after the rollback", manifest(c))
		}
		if err := waitMirrorPod(ctx, client, m.Name, c, stockImage(c)); err != nil {
			return err
		}
		_, err := waitRenewedBy(ctx, client, harness.EndpointsLock, c, onThisHost)
		return err
	})

	// docs/operations.md's three blocks, pasted as they are, from the release directory: the
	// master's paths under the test's root, the test's registry, and its Node's name, through the
	// variables the blocks read.
	blocks := harness.OperatorBlocks(t)
	if out, err := exec.Command("cp", verifyKey, filepath.Join(release, "cosign.pub")).CombinedOutput(); err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	blockEnv := []string{
		"MANIFESTS=" + m.Path("etc/kubernetes/manifests"), "KUBECONFIG=" + m.Path("etc/kubernetes/admin.conf"),
		"BACKUP_DIR=" + backupDir, "NODE_NAME=" + m.Name, "REGISTRY=" + registry.Host + "/idc-lts", "CA=" + registry.CAFile,
		"PATH=" + filepath.Dir(harness.Binary(t, "stock", "kubectl")) + ":" + os.Getenv("PATH"),
	}
	paste := func(ctx context.Context, name, block string) (int, string) {
		cmd := exec.CommandContext(ctx, "bash", "-c", block)
		cmd.Dir, cmd.Env = release, append(os.Environ(), blockEnv...)
		out, err := cmd.CombinedOutput()
		commands++
		_ = os.WriteFile(filepath.Join(m.LogDir, fmt.Sprintf("%02d-%s.log", commands, name)), []byte(block+"\n"+string(out)), 0o644)
		if err != nil && cmd.ProcessState == nil {
			return -1, err.Error()
		}
		return cmd.ProcessState.ExitCode(), string(out)
	}

	// cpswap diagnose, as docs/operations.md runs it before the first master and after the last.
	diagnoseMaster := func(ctx context.Context, name string) (int, *diagnose.Report, error) {
		var stdout, stderr bytes.Buffer
		args := []string{"diagnose", "--kubeconfig", m.Path("etc/kubernetes/admin.conf"), "--window", "20s", "--output", "json"}
		cmd := exec.CommandContext(ctx, cpswap, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		commands++
		_ = os.WriteFile(filepath.Join(m.LogDir, fmt.Sprintf("%02d-%s.log", commands, name)),
			[]byte(cpswap+" "+strings.Join(args, " ")+"\n\n"+stdout.String()+stderr.String()), 0o644)
		if cmd.ProcessState == nil {
			return -1, nil, err
		}
		var r diagnose.Report
		if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
			return cmd.ProcessState.ExitCode(), nil, fmt.Errorf("cpswap diagnose's JSON: %v\n%s%s", err, stdout.String(), stderr.String())
		}
		return cmd.ProcessState.ExitCode(), &r, nil
	}
	// checkInstances: the three components on this master, ours or not, each with the digest the kubelet runs.
	checkInstances := func(r *diagnose.Report, ours bool) error {
		if len(r.Instances) != len(components) {
			return fmt.Errorf("cpswap diagnose found %d control-plane pods, want %d: %+v", len(r.Instances), len(components), r.Instances)
		}
		for _, in := range r.Instances {
			if in.Ours != ours || in.Node != m.Name || !strings.Contains(in.ImageID, "sha256:") {
				return fmt.Errorf("cpswap diagnose: %+v, want ours=%t on %s with the digest it runs", in, ours, m.Name)
			}
		}
		return nil
	}

	s.run("cpswap diagnose before the swap (read-only, 20 s): the three stock components and the digests they run, the locks' Endpoints writes observed (exit 6)", 2*time.Minute, func(ctx context.Context) error {
		if _, err := os.Stat(filepath.Join(release, "cpswap-diagnose.yaml")); err != nil {
			return fmt.Errorf("the release lacks the RBAC of cpswap diagnose: %v", err)
		}
		code, r, err := diagnoseMaster(ctx, "diagnose-before")
		if err != nil {
			return err
		}
		if code != diagnose.ExitObserved {
			return fmt.Errorf("cpswap diagnose exit code %d, want %d (observed)", code, diagnose.ExitObserved)
		}
		if err := checkInstances(r, false); err != nil {
			return err
		}
		le := r.Finding(diagnose.FindingLeaderElection)
		for _, c := range elected {
			if rate := le.Figures[c+"_endpoints_writes_per_minute"]; le.Severity != diagnose.Observed || rate < 20 {
				return fmt.Errorf("cpswap diagnose: %s %v with %v Endpoints writes/min by %s, want observed at about 30 (a renewal every 2 s)", le.ID, le.Severity, rate, c)
			}
		}
		return nil
	})

	s.run("docs/operations.md's before block, as written: the two locks endpointsleases, cpswap status and a plan for each of the three (signatures verified), the Leases", 2*time.Minute, func(ctx context.Context) error {
		code, out := paste(ctx, "operations-before", blocks[0])
		if code != 0 {
			return fmt.Errorf("the before block: exit code %d, want 0:\n%s", code, out)
		}
		for _, c := range components {
			if !strings.Contains(out, releaseImages[c]) {
				return fmt.Errorf("the before block did not plan %s's image %s:\n%s", c, releaseImages[c], out)
			}
		}
		for _, c := range elected {
			if !strings.Contains(out, c+": lock endpointsleases") {
				return fmt.Errorf("the before block did not check %s's lock:\n%s", c, out)
			}
		}
		for _, c := range components {
			if have, _ := os.ReadFile(manifest(c)); !bytes.Equal(have, original[c]) {
				return fmt.Errorf("the before block changed %s", manifest(c))
			}
		}
		return nil
	})

	s.run("docs/operations.md's apply block, as written: the three components by digest with --verify-key (--profile leases for the two that elect a leader); the kubelet pulls and runs each digest, the apiserver serves our version, each Lease is renewed by the new instance, Endpoints writes stop", 10*time.Minute, func(ctx context.Context) error {
		before := map[string]harness.LockRecord{}
		for _, c := range elected {
			var err error
			if before[c], err = harness.LeaseLock(ctx, client, c); err != nil {
				return err
			}
		}
		code, out := paste(ctx, "operations-apply", blocks[1])
		if code != 0 {
			return fmt.Errorf("the apply block: exit code %d, want 0:\n%s", code, out)
		}
		for _, c := range components {
			image := releaseImages[c]
			if !strings.Contains(out, "the kubelet runs "+strings.SplitN(image, "@", 2)[1]) {
				return fmt.Errorf("cpswap did not check the digest the kubelet runs for %s:\n%s", c, out)
			}
			if err := waitMirrorPod(ctx, client, m.Name, c, image); err != nil {
				return err
			}
			if err := runsImage(ctx, client, m, c, image); err != nil {
				return err
			}
			if c == harness.KubeAPIServer {
				if err := servesVersion(ctx, client, filepath.Base(release)); err != nil {
					return err
				}
				continue
			}
			holder := before[c].Holder
			if _, err := waitRenewedBy(ctx, client, harness.LeaseLock, c, func(h string) bool { return onThisHost(h) && h != holder }); err != nil {
				return err
			}
			// Three retry periods (2 s) and more: a leases-only leader never writes the Endpoints.
			if err := unwritten(ctx, client, harness.EndpointsLock, c, 10*time.Second); err != nil {
				return err
			}
		}
		return nil
	})

	s.run("cpswap diagnose after the swap: the three ours, every finding ok (exit 0)", 2*time.Minute, func(ctx context.Context) error {
		code, r, err := diagnoseMaster(ctx, "diagnose-after")
		if err != nil {
			return err
		}
		if code != 0 {
			return fmt.Errorf("cpswap diagnose exit code %d, want 0: %+v", code, r.Findings)
		}
		return checkInstances(r, true)
	})

	// docs/operations.md's node procedure, on this node: drain, the package installed (dpkg -i,
	// whose scripts restart the kubelet), the Node Ready and reporting the package's kubelet,
	// uncordon; then pods run on it again. The drain deletes the Service's pods (bare pods:
	// --force); the step creates them again and waits for them in the Endpoints.
	node := func(ctx context.Context, deb, version string) error {
		if _, err := os.Stat(deb); err != nil {
			return fmt.Errorf("the package: %v", err)
		}
		// The control plane's containers, which the kubelet's restart must leave running.
		staticPods := func() (string, error) {
			return m.Docker("ps", "--quiet", "--no-trunc", "--filter", "label=io.kubernetes.pod.namespace=kube-system")
		}
		before, err := staticPods()
		if err != nil || strings.TrimSpace(before) == "" {
			return fmt.Errorf("the control plane's containers before the drain: %q, %v", before, err)
		}
		if out, err := m.Kubectl(t, "drain", m.Name, "--ignore-daemonsets", "--delete-local-data", "--force", "--timeout=2m", "--request-timeout=30s"); err != nil {
			return fmt.Errorf("%v\n%s", err, out)
		}
		if out, err := m.InstallKubeletPackage(t, deb); err != nil {
			return fmt.Errorf("%v\n%s", err, out)
		}
		m.RestartKubelet(t)
		if err := kubeadmnode.WaitFor(ctx, time.Second, func() (bool, error) { return kubeadmnode.RunsKubelet(client, m.Name, version) }); err != nil {
			return fmt.Errorf("%v\n%s", err, m.Kubelet.Tail(10))
		}
		if out, err := m.Kubectl(t, "uncordon", m.Name, "--request-timeout=30s"); err != nil {
			return fmt.Errorf("%v\n%s", err, out)
		}
		if after, err := staticPods(); err != nil || after != before {
			return fmt.Errorf("the control plane's containers changed across the kubelet's restart (%v):\nbefore:\n%s\nafter:\n%s", err, before, after)
		}
		return createPods(ctx, client, 3)
	}
	s.run("the node's kubelet from the release's package under our control plane (docs/operations.md's node procedure): drained, dpkg -i "+filepath.Base(ourPackage)+
		", restarted, Ready with "+filepath.Base(release)+", uncordoned; the control plane's containers untouched, 3 new pods ready in the Endpoints", 6*time.Minute, func(ctx context.Context) error {
		return node(ctx, ourPackage, filepath.Base(release))
	})
	s.run("and back to upstream's package the same way: Ready with v1.17.3, pods run again", 6*time.Minute, func(ctx context.Context) error {
		return node(ctx, upstreamPackage, "v1.17.3")
	})

	// A planned restart of each patched component (a flag changed: the kubelet stops the pod with
	// SIGTERM and starts the new one): the old instance releases its Lease (patch 0028), so the new
	// one leads as soon as it starts instead of waiting for the lease to expire.
	for _, c := range elected {
		c := c
		s.run("planned restart of the patched "+c+" (cpswap apply --flag=--v=2): the old instance releases its Lease, the new one takes it at once", 5*time.Minute, func(ctx context.Context) error {
			before, err := harness.LeaseLock(ctx, client, c)
			if err != nil {
				return err
			}
			stop, err := watchHandover(ctx, client, c, before.Holder)
			if err != nil {
				return err
			}
			code, out := apply(ctx, c, releaseImages[c], "3m", "--flag=--v=2")
			h, err := stop()
			if code != 0 {
				return fmt.Errorf("cpswap exit code %d, want 0:\n%s", code, out)
			}
			if err != nil {
				return err
			}
			gap := h.acquired.Sub(h.lastRenewal)
			t.Logf("HANDOVER %s: old holder's last renewal %s, released %t, new holder's acquisition %s: %.1f s without a leader",
				c, h.lastRenewal.Format(time.StampMilli), h.released, h.acquired.Format(time.StampMilli), gap.Seconds())
			_ = os.WriteFile(filepath.Join(m.LogDir, "handover-"+c+".txt"), []byte(fmt.Sprintf("%s\t%.1f s\treleased %t\n", c, gap.Seconds(), h.released)), 0o644)
			if !h.released || gap >= 15*time.Second {
				return fmt.Errorf("the old %s did not hand its Lease over (released %t): the new instance led %.1f s after the old one's last renewal, as after an expired lease",
					c, h.released, gap.Seconds())
			}
			return nil
		})
	}

	s.run("cpswap rollback of each planned restart, then docs/operations.md's rollback block, as written: kubeadm's manifests byte for byte, the apiserver ready, a Lease holder each, stock runs and leads again", 8*time.Minute, func(ctx context.Context) error {
		// The restarts' flag first, by the command for one component; the block then undoes the
		// last apply of each of the three, the release's image.
		for _, c := range elected {
			if code, out := runLogged(ctx, m.LogDir, "cpswap-rollback-"+c, cpswap, "rollback", "--manifest", manifest(c), "--backup-dir", backupDir); code != 0 {
				return fmt.Errorf("cpswap rollback of %s's restart: exit code %d, want 0:\n%s", c, code, out)
			}
		}
		code, out := paste(ctx, "operations-rollback", blocks[2])
		if code != 0 {
			return fmt.Errorf("the rollback block: exit code %d, want 0:\n%s", code, out)
		}
		if !strings.Contains(out, "kube-apiserver: ready") {
			return fmt.Errorf("the rollback block did not wait for the apiserver:\n%s", out)
		}
		for _, c := range elected {
			if !strings.Contains(out, c+": Lease held by ") {
				return fmt.Errorf("the rollback block did not wait for %s's Lease holder:\n%s", c, out)
			}
		}
		for _, c := range components {
			if have, _ := os.ReadFile(manifest(c)); !bytes.Equal(have, original[c]) {
				return fmt.Errorf("%s after the rollbacks is not kubeadm's manifest byte for byte", manifest(c))
			}
		}
		for _, c := range components {
			if err := waitMirrorPod(ctx, client, m.Name, c, stockImage(c)); err != nil {
				return err
			}
		}
		if err := servesVersion(ctx, client, "v1.17.3"); err != nil {
			return err
		}
		return waitLeaders(ctx, client, onThisHost)
	})

}

// servesVersion waits until the apiserver reports version (kube-apiserver's --version, the
// release's for ours).
func servesVersion(ctx context.Context, client kubernetes.Interface, version string) error {
	return kubeadmnode.WaitFor(ctx, time.Second, func() (bool, error) {
		v, err := client.Discovery().ServerVersion()
		if err != nil {
			return false, fmt.Errorf("the apiserver's version: %v", err)
		}
		if v.GitVersion != version {
			return false, fmt.Errorf("the apiserver serves %s, want %s", v.GitVersion, version)
		}
		return true, nil
	})
}

// waitLeaders waits until each component's Endpoints lock and Lease are renewed by an instance on
// this host.
func waitLeaders(ctx context.Context, client kubernetes.Interface, onThisHost func(string) bool) error {
	for _, c := range elected {
		r, err := waitRenewedBy(ctx, client, harness.EndpointsLock, c, onThisHost)
		if err != nil {
			return fmt.Errorf("%s does not lead through its Endpoints lock: %v", c, err)
		}
		if _, err := waitRenewedBy(ctx, client, harness.LeaseLock, c, func(h string) bool { return h == r.Holder }); err != nil {
			return fmt.Errorf("%s does not renew its Lease: %v", c, err)
		}
	}
	return nil
}

// waitMirrorPod waits until the static pod of component runs image and is ready, as the
// kubelet reports it through the mirror pod.
func waitMirrorPod(ctx context.Context, client kubernetes.Interface, node, component, image string) error {
	name := component + "-" + node
	return kubeadmnode.WaitFor(ctx, time.Second, func() (bool, error) {
		pod, err := client.CoreV1().Pods("kube-system").Get(name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("mirror pod %s: %v", name, err)
		}
		if len(pod.Spec.Containers) != 1 || pod.Spec.Containers[0].Image != image {
			return false, fmt.Errorf("mirror pod %s does not run %s yet", name, image)
		}
		if pod.Status.Phase != corev1.PodRunning {
			return false, fmt.Errorf("mirror pod %s is %s: %s", name, pod.Status.Phase, containerStates(pod))
		}
		for _, st := range pod.Status.ContainerStatuses {
			if st.Image != statusImage(image) || !st.Ready {
				return false, fmt.Errorf("mirror pod %s: %s", name, containerStates(pod))
			}
		}
		return len(pod.Status.ContainerStatuses) == 1, nil
	})
}

// statusImage is how the kubelet reports a container's image: Docker names an image pulled by
// REPOSITORY:TAG@DIGEST as REPOSITORY@DIGEST.
func statusImage(image string) string {
	named, digest, pinned := strings.Cut(image, "@")
	if !pinned {
		return image
	}
	if slash, colon := strings.LastIndex(named, "/"), strings.LastIndex(named, ":"); colon > slash {
		named = named[:colon]
	}
	return named + "@" + digest
}

func containerStates(pod *corev1.Pod) string {
	var states []string
	for _, st := range pod.Status.ContainerStatuses {
		state := "running"
		switch {
		case st.State.Waiting != nil:
			state = "waiting: " + st.State.Waiting.Reason + " " + st.State.Waiting.Message
		case st.State.Terminated != nil:
			state = fmt.Sprintf("terminated: %s exit %d", st.State.Terminated.Reason, st.State.Terminated.ExitCode)
		}
		states = append(states, fmt.Sprintf("%s image %s ready=%v restarts=%d %s", st.Name, st.Image, st.Ready, st.RestartCount, state))
	}
	return strings.Join(states, "; ")
}

// runsImage checks that the container the kubelet runs for component is the image pulled by that
// digest (the image ID the kubelet reports is docker-pullable://REPOSITORY@DIGEST).
func runsImage(ctx context.Context, client kubernetes.Interface, m *kubeadmnode.Node, component, image string) error {
	want := "@" + strings.SplitN(image, "@", 2)[1]
	pod, err := client.CoreV1().Pods("kube-system").Get(component+"-"+m.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, st := range pod.Status.ContainerStatuses {
		if !strings.HasSuffix(st.ImageID, want) {
			return fmt.Errorf("%s runs image ID %s, want %s (%s)", component, st.ImageID, want, image)
		}
	}
	return nil
}

// createHeadlessService creates a headless Service and n pods behind it (hostNetwork, so they
// need no container network) and waits for its Endpoints to list them ready.
func createHeadlessService(ctx context.Context, client kubernetes.Interface, n int) error {
	ns := "idc-lts-e2e"
	if _, err := client.CoreV1().Namespaces().Create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	labels := map[string]string{"app": "web"}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: labels, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
	if _, err := client.CoreV1().Services(ns).Create(svc); err != nil {
		return err
	}
	return createPods(ctx, client, n)
}

// createPods creates the headless Service's n pods and waits for its Endpoints to list them ready.
func createPods(ctx context.Context, client kubernetes.Interface, n int) error {
	ns, labels := "idc-lts-e2e", map[string]string{"app": "web"}
	noToken := false
	created := map[types.UID]bool{}
	for i := 0; i < n; i++ {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", i), Labels: labels},
			Spec: corev1.PodSpec{
				HostNetwork:                  true,
				AutomountServiceAccountToken: &noToken,
				Containers:                   []corev1.Container{{Name: "web", Image: "k8s.gcr.io/pause:3.1", ImagePullPolicy: corev1.PullNever}},
			},
		}
		// The ServiceAccount admission plugin refuses pods until the controller manager has
		// created the namespace's default ServiceAccount.
		if err := kubeadmnode.WaitFor(ctx, time.Second, func() (bool, error) {
			made, err := client.CoreV1().Pods(ns).Create(pod)
			if err == nil {
				created[made.UID] = true
			}
			return err == nil, err
		}); err != nil {
			return err
		}
	}
	return kubeadmnode.WaitFor(ctx, time.Second, func() (bool, error) {
		ep, err := client.CoreV1().Endpoints(ns).Get("web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ready, ours := 0, 0
		for _, subset := range ep.Subsets {
			for _, a := range subset.Addresses {
				ready++
				if a.TargetRef != nil && created[a.TargetRef.UID] {
					ours++
				}
			}
		}
		return ready == n && ours == n, fmt.Errorf("Endpoints %s/web lists %d ready addresses, %d of them the pods just created, want %d", ns, ready, ours, n)
	})
}

// commands numbers the logs of runLogged in the order the commands ran.
var commands int

// runLogged runs a command, keeps its output in the log directory and returns its exit code.
func runLogged(ctx context.Context, logDir, name, binary string, args ...string) (int, string) {
	cmd := exec.CommandContext(ctx, binary, args...)
	out, err := cmd.CombinedOutput()
	commands++
	_ = os.WriteFile(filepath.Join(logDir, fmt.Sprintf("%02d-%s.log", commands, name)), []byte(strings.Join(append([]string{binary}, args...), " ")+"\n\n"+string(out)), 0o644)
	if err != nil && cmd.ProcessState == nil {
		return -1, err.Error()
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// steps times each step of the scenario and fails the test naming the step that failed.
type steps struct {
	t      *testing.T
	logDir string
	rows   []string
}

func (s *steps) run(name string, timeout time.Duration, fn func(ctx context.Context) error) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	err := fn(ctx)
	elapsed := time.Since(start).Round(100 * time.Millisecond)
	status := "ok"
	if err != nil {
		status = "FAILED"
	}
	s.rows = append(s.rows, fmt.Sprintf("%s\t%v\t%s", status, elapsed, name))
	if err != nil {
		s.t.Fatalf("step %q failed after %v: %v", name, elapsed, err)
	}
}

func (s *steps) report() {
	var b bytes.Buffer
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "result\ttime\tstep")
	for _, row := range s.rows {
		fmt.Fprintln(w, row)
	}
	w.Flush()
	s.t.Logf("steps:\n%s", b.String())
	_ = os.WriteFile(filepath.Join(s.logDir, "steps.txt"), b.Bytes(), 0o644)
}

// logImageSizes records the images the master holds, with their sizes.
func (s *steps) logImageSizes(m *kubeadmnode.Node) {
	out, err := m.Docker("image", "ls", "--format", "{{.Repository}}:{{.Tag}}\t{{.Size}}")
	if err != nil {
		s.t.Logf("image sizes: %v", err)
		return
	}
	s.t.Logf("images on the master:\n%s", out)
	_ = os.WriteFile(filepath.Join(s.logDir, "image-sizes.txt"), []byte(out), 0o644)
}
