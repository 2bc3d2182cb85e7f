package publish

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/idc-lts/kube-1.17/pkg/registry"
)

const testVersion = "v0.0.0-test"

var (
	testComponents = []string{"kube-controller-manager", "kube-scheduler"}
	testPlatforms  = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}
)

// testRegistry is an in-process registry behind TLS; failBlobUploadsFrom, when positive, makes the
// blob uploads from that one (counted from 1) on fail, as a registry that died mid-push.
type testRegistry struct {
	server              *httptest.Server
	host                string
	caFile              string
	blobUploads         atomic.Int64
	failBlobUploadsFrom int64
}

func newTestRegistry(t *testing.T) *testRegistry {
	r := &testRegistry{}
	inner := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	r.server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.Contains(req.URL.Path, "/blobs/uploads/") && req.Method == http.MethodPost {
			if n := r.blobUploads.Add(1); r.failBlobUploadsFrom > 0 && n >= r.failBlobUploadsFrom {
				http.Error(w, "the registry went away", http.StatusServiceUnavailable)
				return
			}
		}
		inner.ServeHTTP(w, req)
	}))
	t.Cleanup(r.server.Close)
	r.host = strings.TrimPrefix(r.server.URL, "https://")
	r.caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(r.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.server.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials of the machine's
	return r
}

func (r *testRegistry) client(t *testing.T) *registry.Client {
	c, err := registry.New(context.Background(), registry.Options{CAFile: r.caFile})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tags lists every tag of every test component's repository.
func (r *testRegistry) tags(t *testing.T, c *registry.Client) []string {
	var all []string
	for _, comp := range testComponents {
		repo, err := c.Repository(r.host + "/idc/" + comp)
		if err != nil {
			t.Fatal(err)
		}
		tags, err := remote.List(repo, c.Remote()...)
		if err != nil && !registry.NotFound(err) {
			t.Fatalf("listing the tags of %s: %v", repo, err)
		}
		for _, tag := range tags {
			all = append(all, comp+":"+tag)
		}
	}
	sort.Strings(all)
	return all
}

// writeRelease writes a release directory as build/release.sh lays it out, for what Push reads:
// per component a two-architecture OCI index in images/<c>.oci, its digest in images/<c>.digest
// and a manifest that runs it by digest from registryPath; the SBOM; SHA256SUMS.
func writeRelease(t *testing.T, registryPath string) string {
	dir := filepath.Join(t.TempDir(), testVersion)
	for _, sub := range []string{"images", "manifests"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, comp := range testComponents {
		index := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
		for _, platform := range testPlatforms {
			img, err := random.Image(2048, 2)
			if err != nil {
				t.Fatal(err)
			}
			platform := platform
			index = mutate.AppendManifests(index, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &platform}})
		}
		lp, err := layout.Write(filepath.Join(dir, "images", comp+".oci"), empty.Index)
		if err != nil {
			t.Fatal(err)
		}
		if err := lp.AppendIndex(index); err != nil {
			t.Fatal(err)
		}
		digest, err := index.Digest()
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "images", comp+".digest"), digest.String()+"\n")
		writeFile(t, filepath.Join(dir, "manifests", comp+".yaml"),
			fmt.Sprintf("spec:\n  containers:\n  - name: %s\n    image: %s/%s:%s@%s\n", comp, registryPath, comp, testVersion, digest))
	}
	writeFile(t, filepath.Join(dir, "sbom.spdx.json"), `{"spdxVersion": "SPDX-2.3"}`+"\n")
	var sums strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		rel, _ := filepath.Rel(dir, path)
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(sum[:]), rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "SHA256SUMS"), sums.String())
	return dir
}

func writeFile(t *testing.T, path, content string) {
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPushesEveryArchitecture: each component's index and both of its per-architecture images
// are in the registry, by digest and under the version tag; a second push uploads nothing.
func TestPushesEveryArchitecture(t *testing.T) {
	reg := newTestRegistry(t)
	dir := writeRelease(t, reg.host+"/idc")
	c := reg.client(t)
	pushed, err := Push(c, Options{ReleaseDir: dir, Registry: reg.host + "/idc"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pushed) != len(testComponents) {
		t.Fatalf("pushed %d components, want %d", len(pushed), len(testComponents))
	}
	for _, p := range pushed {
		repo, err := c.Repository(reg.host + "/idc/" + p.Component)
		if err != nil {
			t.Fatal(err)
		}
		index, err := remote.Index(repo.Tag(testVersion), c.Remote()...)
		if err != nil {
			t.Fatalf("%s: reading the index by its tag: %v", p.Component, err)
		}
		if digest, _ := index.Digest(); digest != p.Index {
			t.Errorf("%s: the tag serves %s, want the release's %s", p.Component, digest, p.Index)
		}
		im, err := index.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		var platforms []string
		for _, m := range im.Manifests {
			img, err := remote.Image(repo.Digest(m.Digest.String()), c.Remote()...)
			if err != nil {
				t.Fatalf("%s: the %s image: %v", p.Component, m.Platform, err)
			}
			layers, err := img.Layers()
			if err != nil || len(layers) != 2 {
				t.Fatalf("%s: the %s image has %d layers (%v), want 2", p.Component, m.Platform, len(layers), err)
			}
			platforms = append(platforms, m.Platform.String())
		}
		if got := strings.Join(platforms, " "); got != "linux/amd64 linux/arm64" {
			t.Errorf("%s: the registry's index has %q, want linux/amd64 linux/arm64", p.Component, got)
		}
	}

	again := reg.client(t)
	if _, err := Push(again, Options{ReleaseDir: dir, Registry: reg.host + "/idc"}); err != nil {
		t.Fatal(err)
	}
	if up := again.Uploaded(); up != (registry.Uploads{}) {
		t.Errorf("the second push uploaded %+v, want nothing", up)
	}
}

// TestAPushThatFailsLeavesNoTag: a registry that fails the second component's blobs leaves the
// first component's index pushed by digest and no tag at all, neither the version's nor an
// SBOM's or a signature's.
func TestAPushThatFailsLeavesNoTag(t *testing.T) {
	reg := newTestRegistry(t)
	dir := writeRelease(t, reg.host+"/idc")
	// The first component's six blobs go through; the second's first one fails.
	reg.failBlobUploadsFrom = 7
	c := reg.client(t)
	_, err := Push(c, Options{ReleaseDir: dir, Registry: reg.host + "/idc"})
	if err == nil || !strings.HasPrefix(err.Error(), testComponents[1]+": pushing") {
		t.Fatalf("push against a registry failing %s's blobs: %v, want an error naming %s", testComponents[1], err, testComponents[1])
	}
	if c.Uploaded().Blobs != 6 {
		t.Fatalf("the failed push uploaded %d blobs, want the first component's 6 (the test's premise)", c.Uploaded().Blobs)
	}
	if tags := reg.tags(t, c); len(tags) != 0 {
		t.Errorf("after a failed push the registry holds the tags %v, want none", tags)
	}
}
