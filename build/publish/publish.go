// Package publish pushes a release's images to the operator's registry: per component the
// multi-arch OCI index and its per-arch images, the release's SBOM attached to the index, cosign
// signatures when a key is given, and the version tag last; with the key, the release's SHA256SUMS
// (every file of the release: binaries, the kubelet's packages, images, SBOM) is signed too, as
// cosign sign-blob would, into SHA256SUMS.sig.
//
// The order is what makes a failure harmless: nothing is written before every check passed
// (SHA256SUMS, the digests, the manifests' registry, tags that would move); content goes by
// digest first, is read back and compared with the release's images/*.digest; tags are written
// only when every component's content, SBOM and signatures are in, so a push that fails halfway
// leaves no tag pointing at an incomplete index. Every index goes before any SBOM or signature,
// whose tags (cosign's sha256-HEX.sbom and .sig) name an index: a push that fails while pushing
// content leaves no tag at all.
package publish

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/idc-lts/kube-1.17/pkg/registry"
	"github.com/idc-lts/kube-1.17/pkg/signature"
)

// SBOMMediaType is the media type of the SBOM attached to each index (SPDX 2.3 JSON).
const SBOMMediaType types.MediaType = "application/spdx+json"

// Options of a push.
type Options struct {
	ReleaseDir string // _output/release/<version>
	Registry   string // host[:port]/path: images go to <Registry>/<component>
	// Force lets the push move a tag (the version tag, or the SBOM's) that points elsewhere.
	Force bool
	// Signer signs each index digest and its SBOM's; nil pushes unsigned.
	Signer *signature.Signer
	// Log receives progress lines.
	Log func(format string, args ...interface{})
}

// Pushed is what the push did for one component.
type Pushed struct {
	Component string
	Reference string // <registry>/<component>:<version>@<index digest>
	Index     v1.Hash
	SBOM      v1.Hash // the SBOM artifact's manifest digest
	Signature v1.Hash // the signature manifest's digest; zero when unsigned
	Uploads   registry.Uploads
	TagMoved  bool // the tag pointed elsewhere and was moved (Force)
}

// component is one image of the release, checked.
type component struct {
	name   string
	repo   name.Repository
	tag    name.Tag
	index  v1.ImageIndex
	digest v1.Hash
	tagWas *v1.Hash // the tag's digest before the push, nil if untagged
}

// Release reads the version, the components and their index digests of a release directory.
func Release(dir string) (version string, components []string, err error) {
	version = filepath.Base(filepath.Clean(dir))
	digests, err := filepath.Glob(filepath.Join(dir, "images", "*.digest"))
	if err != nil {
		return "", nil, err
	}
	if len(digests) == 0 {
		return "", nil, fmt.Errorf("%s is not a release directory: no images/*.digest (run 'make release')", dir)
	}
	for _, d := range digests {
		components = append(components, strings.TrimSuffix(filepath.Base(d), ".digest"))
	}
	sort.Strings(components)
	return version, components, nil
}

// Push publishes the release. It returns what it did per component; on error nothing is tagged
// that was not tagged before (unless the error came while writing the tags themselves, which
// it names).
func Push(c *registry.Client, o Options) ([]Pushed, error) {
	logf := o.Log
	if logf == nil {
		logf = func(string, ...interface{}) {}
	}
	version, names, err := Release(o.ReleaseDir)
	if err != nil {
		return nil, err
	}
	if err := checkSums(o.ReleaseDir); err != nil {
		return nil, err
	}
	sbom, err := os.ReadFile(filepath.Join(o.ReleaseDir, "sbom.spdx.json"))
	if err != nil {
		return nil, fmt.Errorf("the release's SBOM: %v", err)
	}
	sbomImage, err := sbomArtifact(sbom)
	if err != nil {
		return nil, err
	}

	// Every check before the first write.
	var comps []*component
	for _, n := range names {
		comp, err := open(c, o, version, n)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", n, err)
		}
		comps = append(comps, comp)
	}
	for _, comp := range comps {
		if err := checkTag(c, comp, o.Force); err != nil {
			return nil, fmt.Errorf("%s: %v", comp.name, err)
		}
		if err := checkSBOMTag(c, comp, sbomImage, o.Force); err != nil {
			return nil, fmt.Errorf("%s: %v", comp.name, err)
		}
	}

	// Every index by digest first, each read back: a failure here leaves no tag of this push.
	pushed := make([]Pushed, len(comps))
	for i, comp := range comps {
		before := c.Uploaded()
		pushed[i] = Pushed{Component: comp.name, Index: comp.digest, Reference: fmt.Sprintf("%s@%s", comp.tag, comp.digest)}
		logf("%s: pushing %s by digest", comp.name, comp.repo.Digest(comp.digest.String()))
		if err := remote.WriteIndex(comp.repo.Digest(comp.digest.String()), comp.index, c.Remote()...); err != nil {
			return pushed[:i], fmt.Errorf("%s: pushing %s: %v", comp.name, comp.repo, registry.Explain(err))
		}
		if err := readBack(c, comp); err != nil {
			return pushed[:i], fmt.Errorf("%s: %v", comp.name, err)
		}
		pushed[i].Uploads = c.Uploaded().Since(before)
	}
	// Then what refers to them: the SBOMs and signatures (cosign's tags name the index digest).
	for i, comp := range comps {
		before := c.Uploaded()
		p := &pushed[i]
		sbomTag := signature.Tag(comp.repo, comp.digest, "sbom")
		if err := remote.Write(sbomTag, sbomImage, c.Remote()...); err != nil {
			return pushed, fmt.Errorf("%s: attaching the SBOM as %s: %v", comp.name, sbomTag, err)
		}
		if p.SBOM, err = sbomImage.Digest(); err != nil {
			return pushed, err
		}
		if o.Signer != nil {
			for _, d := range []v1.Hash{comp.digest, p.SBOM} {
				signed, sigDigest, err := signature.Sign(comp.repo, d, o.Signer, c.Remote()...)
				if err != nil {
					return pushed, fmt.Errorf("%s: %v", comp.name, err)
				}
				if err := signature.Verify(comp.repo, d, o.Signer.Verifier(), c.Remote()...); err != nil {
					return pushed, fmt.Errorf("%s: the signature just written does not verify: %v", comp.name, err)
				}
				if d == comp.digest {
					p.Signature = sigDigest
					if !signed {
						logf("%s: %s is signed with this key already", comp.name, comp.digest)
					}
				}
			}
		}
		p.Uploads = p.Uploads.Add(c.Uploaded().Since(before))
	}

	// The tags last, each read back.
	for i, comp := range comps {
		if comp.tagWas == nil || *comp.tagWas != comp.digest {
			if err := remote.Tag(comp.tag, comp.index, c.Remote()...); err != nil {
				return pushed, fmt.Errorf("%s: writing the tag %s (its content is pushed and verified; the tag is not): %v", comp.name, comp.tag, err)
			}
			pushed[i].Uploads.Manifests++
			pushed[i].TagMoved = comp.tagWas != nil
		}
		desc, err := remote.Head(comp.tag, c.Remote()...)
		if err != nil {
			return pushed, fmt.Errorf("%s: reading back the tag %s: %v", comp.name, comp.tag, err)
		}
		if desc.Digest != comp.digest {
			return pushed, fmt.Errorf("%s: the tag %s reads back as %s, not the release's %s", comp.name, comp.tag, desc.Digest, comp.digest)
		}
	}
	if o.Signer != nil {
		if err := signSums(o.ReleaseDir, o.Signer); err != nil {
			return pushed, err
		}
		logf("%s signed: %s (cosign verify-blob)", SumsFile, SumsSignatureFile)
	}
	return pushed, nil
}

// The release's list of files and its signature. SHA256SUMS names every other file of the release
// (binaries, the kubelet's packages, images, manifests, SBOM): its signature covers them all.
const (
	SumsFile          = "SHA256SUMS"
	SumsSignatureFile = "SHA256SUMS.sig"
)

// signSums writes the signature of the release's SHA256SUMS beside it, as cosign sign-blob would,
// and reads it back; a signature already there by another key is replaced.
func signSums(dir string, signer *signature.Signer) error {
	sums, err := os.ReadFile(filepath.Join(dir, SumsFile))
	if err != nil {
		return fmt.Errorf("the release's %s: %v", SumsFile, err)
	}
	sig, err := signer.SignBlob(sums)
	if err != nil {
		return fmt.Errorf("signing %s: %v", SumsFile, err)
	}
	path := filepath.Join(dir, SumsSignatureFile)
	if err := os.WriteFile(path+".partial", []byte(sig+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.Rename(path+".partial", path); err != nil {
		return err
	}
	written, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := signer.Verifier().VerifyBlob(sums, string(written)); err != nil {
		return fmt.Errorf("%s just written: %v", path, err)
	}
	return nil
}

// open reads a component's index from the release and checks it against images/<c>.digest and
// manifests/<c>.yaml.
func open(c *registry.Client, o Options, version, comp string) (*component, error) {
	repo, err := c.Repository(strings.TrimSuffix(o.Registry, "/") + "/" + comp)
	if err != nil {
		return nil, err
	}
	images := filepath.Join(o.ReleaseDir, "images")
	want, err := os.ReadFile(filepath.Join(images, comp+".digest"))
	if err != nil {
		return nil, err
	}
	lp, err := layout.FromPath(filepath.Join(images, comp+".oci"))
	if err != nil {
		return nil, fmt.Errorf("the release's OCI layout: %v", err)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("the release's OCI layout: %v", err)
	}
	im, err := top.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("the release's OCI layout: %v", err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].MediaType != types.OCIImageIndex {
		return nil, fmt.Errorf("the release's OCI layout holds %d manifests, want one image index", len(im.Manifests))
	}
	digest := im.Manifests[0].Digest
	if digest.String() != strings.TrimSpace(string(want)) {
		return nil, fmt.Errorf("the release's OCI layout holds %s, but images/%s.digest says %s", digest, comp, strings.TrimSpace(string(want)))
	}
	index, err := top.ImageIndex(digest)
	if err != nil {
		return nil, fmt.Errorf("the release's OCI layout: %v", err)
	}
	tag := repo.Tag(version)
	pinned := fmt.Sprintf("%s@%s", tag, digest)
	manifest := filepath.Join(o.ReleaseDir, "manifests", comp+".yaml")
	m, err := os.ReadFile(manifest)
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(m, []byte("image: "+pinned+"\n")) {
		return nil, fmt.Errorf("%s does not run %s: the release was cut for another registry (cut it with REGISTRY=%s)", manifest, pinned, o.Registry)
	}
	return &component{name: comp, repo: repo, tag: tag, index: index, digest: digest}, nil
}

// checkTag refuses to move a tag that names another digest, unless forced.
func checkTag(c *registry.Client, comp *component, force bool) error {
	desc, err := remote.Head(comp.tag, c.Remote()...)
	switch {
	case registry.NotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading the tag %s: %v", comp.tag, registry.Explain(err))
	}
	comp.tagWas = &desc.Digest
	if desc.Digest != comp.digest && !force {
		return fmt.Errorf("the tag %s already points to %s, not this release's %s: refusing to move it (FORCE=1 moves it)", comp.tag, desc.Digest, comp.digest)
	}
	return nil
}

// checkSBOMTag refuses to replace an SBOM attached to the same index with a different one.
func checkSBOMTag(c *registry.Client, comp *component, sbom v1.Image, force bool) error {
	tag := signature.Tag(comp.repo, comp.digest, "sbom")
	desc, err := remote.Head(tag, c.Remote()...)
	switch {
	case registry.NotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading the SBOM tag %s: %v", tag, registry.Explain(err))
	}
	want, err := sbom.Digest()
	if err != nil {
		return err
	}
	if desc.Digest != want && !force {
		return fmt.Errorf("the SBOM tag %s already holds another SBOM (%s, not %s): refusing to replace it (FORCE=1 replaces it)", tag, desc.Digest, want)
	}
	return nil
}

// readBack compares what the registry serves by digest with the release: the index's digest, and
// each per-arch manifest present.
func readBack(c *registry.Client, comp *component) error {
	ref := comp.repo.Digest(comp.digest.String())
	desc, err := remote.Get(ref, c.Remote()...)
	if err != nil {
		return fmt.Errorf("reading back %s: %v", ref, err)
	}
	if desc.Digest != comp.digest {
		return fmt.Errorf("the registry serves %s as %s", ref, desc.Digest)
	}
	im, err := comp.index.IndexManifest()
	if err != nil {
		return err
	}
	for _, m := range im.Manifests {
		child := comp.repo.Digest(m.Digest.String())
		d, err := remote.Head(child, c.Remote()...)
		if err != nil {
			return fmt.Errorf("reading back %s (%s): %v", child, m.Platform, err)
		}
		if d.Digest != m.Digest {
			return fmt.Errorf("the registry serves %s as %s", child, d.Digest)
		}
	}
	return nil
}

// sbomArtifact is the SBOM as a one-layer OCI artifact, the way cosign attaches one
// (REPO:sha256-HEX.sbom), so `cosign download sbom` and any registry client can fetch it.
func sbomArtifact(sbom []byte) (v1.Image, error) {
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: static.NewLayer(sbom, SBOMMediaType)})
	if err != nil {
		return nil, err
	}
	return mutate.ConfigMediaType(mutate.MediaType(img, types.OCIManifestSchema1), types.OCIConfigJSON), nil
}

// checkSums checks the release's SHA256SUMS for what the push reads: images/ and the SBOM.
func checkSums(dir string) error {
	f, err := os.Open(filepath.Join(dir, SumsFile))
	if err != nil {
		return fmt.Errorf("the release's SHA256SUMS: %v", err)
	}
	defer f.Close()
	listed := map[string]bool{}
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		sum, file, ok := strings.Cut(scanner.Text(), "  ")
		if !ok {
			return fmt.Errorf("SHA256SUMS: malformed line %q", scanner.Text())
		}
		listed[file] = true
		if !strings.HasPrefix(file, "images/") && file != "sbom.spdx.json" && !strings.HasPrefix(file, "manifests/") {
			continue
		}
		got, err := sha256File(filepath.Join(dir, file))
		if err != nil {
			return fmt.Errorf("SHA256SUMS lists %s: %v", file, err)
		}
		if got != sum {
			return fmt.Errorf("%s does not match SHA256SUMS (sha256 %s, listed %s): the release was changed after it was cut", file, got, sum)
		}
	}
	if err := scanner.Err(); err != nil {
		return err
	}
	if !listed["sbom.spdx.json"] {
		return fmt.Errorf("SHA256SUMS does not list sbom.spdx.json")
	}
	return nil
}

func sha256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
