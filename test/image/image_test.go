// Package image tests the built images as an operator uses them: loaded into a container engine
// and run in place of upstream's in a kubeadm static pod (host network, kubeconfig mounted).
package image

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/idc-lts/kube-1.17/test/harness"
	"github.com/idc-lts/kube-1.17/test/tier"
)

// imageDir is where images/control-plane/build.sh put the images (IMAGE_DIR, set by `make test-image`).
func imageDir(t *testing.T) string {
	dir := os.Getenv("IMAGE_DIR")
	if dir == "" {
		tier.Missing(t, "run 'make test-image'", "IMAGE_DIR does not name the release's image directory")
	}
	return dir
}

func docker(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(harness.Tool(t, "docker", "docker.io"), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("docker %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

// load loads a component's amd64 docker-archive and returns the image name. An image the
// machine's Docker did not have before is removed when the test ends.
func load(t *testing.T, component string) string {
	t.Helper()
	archive := filepath.Join(imageDir(t), component+"-amd64.docker.tar")
	ref, err := harness.ArchiveReference(archive)
	if err != nil {
		t.Fatal(err)
	}
	if exec.Command("docker", "image", "inspect", ref).Run() != nil {
		t.Cleanup(func() { _ = exec.Command("docker", "rmi", ref).Run() })
	}
	out := docker(t, "load", "-i", archive)
	name := strings.TrimSpace(strings.TrimPrefix(out[strings.LastIndex(out, "Loaded image: "):], "Loaded image: "))
	if name != ref {
		t.Fatalf("docker load printed %q, want the archive's tag %s", out, ref)
	}
	return name
}

func TestImagesPrintTheReleaseVersion(t *testing.T) {
	version := os.Getenv("RELEASE_VERSION")
	if version == "" {
		tier.Missing(t, "run 'make test-image'", "RELEASE_VERSION is not set")
	}
	for _, component := range harness.Components {
		image := load(t, component)
		if !strings.HasSuffix(image, ":"+version) {
			t.Errorf("%s is tagged %s, want tag %s", component, image, version)
		}
		out := docker(t, "run", "--rm", image, "--version")
		t.Logf("docker run %s --version: %s", image, out)
		if out != "Kubernetes "+version {
			t.Errorf("%s --version printed %q, want %q", component, out, "Kubernetes "+version)
		}
		// What kubeadm's static pod relies on: the command on PATH, root, a shell, CA certificates.
		got := docker(t, "run", "--rm", "--entrypoint", "/bin/sh", image, "-c",
			"command -v "+component+" && id -u && test -s /etc/ssl/certs/ca-certificates.crt && echo certs")
		if want := "/usr/local/bin/" + component + "\n0\ncerts"; got != want {
			t.Errorf("%s: PATH/root/certificates check printed %q, want %q", component, got, want)
		}
	}
}

// TestControllerManagerImageLeads runs the image as kubeadm would (host network, kubeconfig from
// the host) against a stock apiserver, until it holds and renews the leader Lease.
func TestControllerManagerImageLeads(t *testing.T) {
	image := load(t, "kube-controller-manager")
	cp := harness.StartControlPlane(t)
	port := harness.FreePort(t)
	name := "kcm-image-test-" + strings.ReplaceAll(strings.ToLower(t.Name()), "/", "-")
	docker(t, "rm", "-f", name)
	docker(t, "run", "-d", "--name", name, "--network", "host",
		"-v", cp.Kubeconfig+":/etc/kubernetes/controller-manager.conf:ro",
		image,
		"--kubeconfig=/etc/kubernetes/controller-manager.conf",
		"--controllers=endpoint", "--leader-elect=true",
		"--address=127.0.0.1", "--port="+strconv.Itoa(port), "--secure-port=0")
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := exec.Command("docker", "logs", "--tail", "20", name).CombinedOutput()
			t.Logf("container logs:\n%s", out)
		}
		exec.Command("docker", "rm", "-f", name).Run()
	})

	var holder string
	var renewals []time.Time
	err := wait.PollImmediate(500*time.Millisecond, 60*time.Second, func() (bool, error) {
		lease, err := cp.Client.CoordinationV1().Leases(metav1.NamespaceSystem).Get("kube-controller-manager", metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil || lease.Spec.RenewTime == nil {
			return false, nil
		}
		holder = *lease.Spec.HolderIdentity
		if n := len(renewals); n == 0 || !lease.Spec.RenewTime.Time.Equal(renewals[n-1]) {
			renewals = append(renewals, lease.Spec.RenewTime.Time)
		}
		return len(renewals) >= 3, nil
	})
	if err != nil {
		t.Fatalf("the containerized kube-controller-manager did not hold and renew the Lease within 60s (renewals seen: %d)", len(renewals))
	}
	t.Logf("container %s holds Lease kube-system/kube-controller-manager as %s (%d renewals seen)", name, holder, len(renewals))
}

// TestContainerdImportsTheOCITar imports the multi-platform OCI tar the way an operator without a
// registry would on each master (`ctr -n k8s.io images import`), into the machine's containerd.
func TestContainerdImportsTheOCITar(t *testing.T) {
	socket := ""
	for _, candidate := range []string{"/run/containerd/containerd.sock", "/run/docker/containerd/containerd.sock"} {
		if _, err := os.Stat(candidate); err == nil {
			socket = candidate
			break
		}
	}
	if socket == "" {
		t.Fatal("no containerd socket found (looked in /run/containerd and /run/docker/containerd)")
	}
	ctr := func(args ...string) string {
		out, err := exec.Command(harness.Tool(t, "ctr", "containerd"), append([]string{"-a", socket, "-n", "k8s.io"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ctr %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	digest, err := os.ReadFile(filepath.Join(imageDir(t), "kube-controller-manager.digest"))
	if err != nil {
		t.Fatal(err)
	}
	out := ctr("images", "import", "--all-platforms", filepath.Join(imageDir(t), "kube-controller-manager.oci.tar"))
	t.Logf("ctr import: %s", strings.TrimSpace(out))
	if !strings.Contains(out, strings.TrimSpace(string(digest))) {
		t.Errorf("ctr imported %q, want the index digest %s", out, digest)
	}
}
