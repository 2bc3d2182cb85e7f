package conformance

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/idc-lts/kube-1.17/test/debpkg"
	"github.com/idc-lts/kube-1.17/test/harness"
	"github.com/idc-lts/kube-1.17/test/kubeadmnode"
)

// ourRelease is the release whose control plane the second run tests, published as an
// operator publishes it: to a registry (on the host's loopback), signed.
type ourRelease struct {
	registry  *harness.Registry
	dir       string
	verifyKey string
	// images are REGISTRY/component:version@digest, as the release's manifests name them.
	images map[string]string
	// platformImages are the digests of this machine's images in those indexes: the same in
	// the release an operator cuts for their registry (RELEASE_DIR), whose index may hold more
	// architectures.
	platformImages map[string]string
}

// publishRelease cuts the release for a test registry and publishes it there, signed (as test/e2e
// does, docs/operations.md's make release and make publish).
func publishRelease(t *testing.T) *ourRelease {
	registry, release, verifyKey := harness.PublishedRelease(t, "conformance-key-password")
	r := &ourRelease{registry: registry, dir: release, verifyKey: verifyKey, images: map[string]string{}, platformImages: map[string]string{}}
	for _, c := range harness.Components {
		digest, err := os.ReadFile(filepath.Join(release, "images", c+".digest"))
		if err != nil {
			t.Fatal(err)
		}
		r.images[c] = fmt.Sprintf("%s/idc-lts/%s:%s@%s", registry.Host, c, filepath.Base(release), strings.TrimSpace(string(digest)))
		if r.platformImages[c], err = platformImage(release, c); err != nil {
			t.Fatal(err)
		}
		// The operator's release, when make conformance names it, must hold the images tested.
		if operator := os.Getenv("RELEASE_DIR"); operator != "" {
			theirs, err := platformImage(operator, c)
			if err != nil {
				t.Fatal(err)
			}
			if theirs != r.platformImages[c] {
				t.Fatalf("%s's linux/%s image is %s in %s, but %s in the release under test: not the same build",
					c, runtime.GOARCH, theirs, operator, r.platformImages[c])
			}
		}
	}
	return r
}

// platformImage is the digest of component's image for this machine's architecture in the
// release's OCI layout (images/<component>.oci: one index, an image per architecture).
func platformImage(release, component string) (string, error) {
	path := filepath.Join(release, "images", component+".oci")
	lp, err := layout.FromPath(path)
	if err != nil {
		return "", fmt.Errorf("%s: %v", path, err)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		return "", fmt.Errorf("%s: %v", path, err)
	}
	outer, err := top.IndexManifest()
	if err != nil || len(outer.Manifests) != 1 {
		return "", fmt.Errorf("%s: want one image index (%v)", path, err)
	}
	index, err := top.ImageIndex(outer.Manifests[0].Digest)
	if err != nil {
		return "", fmt.Errorf("%s: %v", path, err)
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		return "", fmt.Errorf("%s: %v", path, err)
	}
	for _, m := range manifest.Manifests {
		if m.Platform != nil && m.Platform.OS == "linux" && m.Platform.Architecture == runtime.GOARCH {
			return m.Digest.String(), nil
		}
	}
	return "", fmt.Errorf("%s has no linux/%s image", path, runtime.GOARCH)
}

// swapIn replaces the node's stock kube-apiserver, kube-controller-manager and kube-scheduler with the release's,
// by digest, with docs/operations.md's cpswap plan and apply --verify-key, run on the node (in its
// namespace, the registry carried in under its own address).
func (c *cluster) swapIn(t *testing.T, r *ourRelease) {
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	if err := c.ns.Forward(r.registry.Host, stop); err != nil {
		t.Fatal(err)
	}
	cpswap := harness.Binary(t, "e2e", "cpswap")
	backups := c.node.Path("var/lib/cpswap/backups")
	if err := os.MkdirAll(backups, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, component := range harness.Components {
		manifest := c.node.Path("etc/kubernetes/manifests/" + component + ".yaml")
		verify := []string{"--verify-key", r.verifyKey, "--registry-ca-file", r.registry.CAFile}
		if component != harness.KubeAPIServer { // it elects no leader: no lock to set
			verify = append(verify, "--profile", "leases")
		}
		for _, args := range [][]string{
			append([]string{"plan", "--manifest", manifest, "--image", r.images[component]}, verify...),
			append([]string{"apply", "--manifest", manifest, "--image", r.images[component],
				"--backup-dir", backups, "--kubeconfig", c.node.Path("etc/kubernetes/admin.conf"), "--timeout", "3m",
				"--node-name", c.node.Name}, verify...),
		} {
			out, err := c.ns.Command(cpswap, args...).CombinedOutput()
			_ = os.WriteFile(filepath.Join(c.node.LogDir, "cpswap-"+args[0]+"-"+component+".log"), out, 0o644)
			if err != nil {
				t.Fatalf("cpswap %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
		t.Logf("%s runs %s", component, r.images[component])
	}
}

// swapKubelets installs the release's kubelet package on every node by dpkg -i and a kubelet
// restart (its pods' containers keep running; no drain, unlike docs/operations.md's node block:
// between the runs only the cluster's own pods run). One node at a time: each Node must report
// our kubelet and be Ready, and every kube-system pod on it Ready again as the new kubelet
// probed it, before the next node's restart, so that CoreDNS is never down on both at once.
// When RELEASE_DIR names the operator's release, its package must be the one tested (build/deb.sh
// is reproducible).
func (c *cluster) swapKubelets(t *testing.T, r *ourRelease) {
	version := filepath.Base(r.dir)
	name := fmt.Sprintf("kubelet_%s_%s.deb", debpkg.Version(version), runtime.GOARCH)
	deb := filepath.Join(r.dir, "packages", name)
	if operator := os.Getenv("RELEASE_DIR"); operator != "" {
		ours, err := os.ReadFile(deb)
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := os.ReadFile(filepath.Join(operator, "packages", name))
		if err != nil {
			t.Fatalf("the operator's release: %v", err)
		}
		if !bytes.Equal(ours, theirs) {
			t.Fatalf("%s differs between %s and the release under test: not the same build", name, operator)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, node := range c.nodes {
		restarted := metav1.Now()
		if out, err := node.InstallKubeletPackage(t, deb); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		node.RestartKubelet(t)
		if err := kubeadmnode.WaitFor(ctx, time.Second, func() (bool, error) {
			if ready, err := kubeadmnode.RunsKubelet(c.client, node.Name, version); !ready {
				return false, err
			}
			pods, err := c.client.CoreV1().Pods("kube-system").List(metav1.ListOptions{FieldSelector: "spec.nodeName=" + node.Name})
			if err != nil {
				return false, err
			}
			for _, pod := range pods.Items {
				// A restarted kubelet counts a container with a readiness probe unready until its
				// first probe, up to one period after it starts: wait that long, then for Ready.
				for _, container := range pod.Spec.Containers {
					if p := container.ReadinessProbe; p != nil {
						period := time.Duration(p.PeriodSeconds) * time.Second
						if period == 0 {
							period = 10 * time.Second
						}
						if since := time.Since(restarted.Time); since < period+time.Duration(p.InitialDelaySeconds)*time.Second+5*time.Second {
							return false, fmt.Errorf("kube-system pod %s: the new kubelet has not probed it yet (%s since the restart)", pod.Name, since.Round(time.Second))
						}
					}
				}
				if !podReady(&pod) {
					return false, fmt.Errorf("kube-system pod %s is not Ready", pod.Name)
				}
			}
			return true, nil
		}); err != nil {
			t.Fatalf("our kubelet: %v\n%s", err, node.Kubelet.Tail(10))
		}
		t.Logf("%s runs kubelet %s from %s", node.Name, version, name)
	}
}

// platformImage is component's image for this machine in the release, if it is one of the release's.
func (r *ourRelease) platformImage(component string) (string, bool) {
	if r == nil {
		return "", false
	}
	digest, ok := r.platformImages[component]
	return digest, ok
}
