package cpswap

import (
	"fmt"
	"path"
	"strings"

	"github.com/distribution/reference"
)

// ImageRef is a checked image reference.
type ImageRef struct {
	Ref        string
	Repository string // without the registry host, as reference.Path gives it
	Tag        string
	Digest     string // "sha256:..." when the reference pins one
}

// ParseImage checks an image reference for a component: it must parse (docker reference
// grammar), name a tag or a digest (a bare name would make the kubelet pull :latest), and its
// repository must be named after the component, so that the kube-scheduler image cannot land in
// the kube-controller-manager manifest.
func ParseImage(ref, component string) (ImageRef, error) {
	if ref == "" {
		return ImageRef{}, fmt.Errorf("--image is empty")
	}
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return ImageRef{}, fmt.Errorf("image %q: %v", ref, err)
	}
	out := ImageRef{Ref: ref, Repository: reference.Path(named)}
	if t, ok := named.(reference.Tagged); ok {
		out.Tag = t.Tag()
	}
	if d, ok := named.(reference.Digested); ok {
		out.Digest = d.Digest().String()
	}
	if out.Tag == "" && out.Digest == "" {
		return ImageRef{}, fmt.Errorf("image %q names no tag or digest: the kubelet would pull whatever :latest is", ref)
	}
	if component != "" && !namedAfter(path.Base(out.Repository), component) {
		return ImageRef{}, fmt.Errorf("image %q is not a %s image (its repository must end in /%s, or /%s-<arch> such as -amd64)", ref, component, component, component)
	}
	return out, nil
}

// namedAfter accepts the component's name, and the name with an architecture suffix as
// per-architecture repositories have (kube-controller-manager-amd64).
func namedAfter(repository, component string) bool {
	if repository == component {
		return true
	}
	switch strings.TrimPrefix(repository, component+"-") {
	case "amd64", "arm64", "arm", "ppc64le", "s390x":
		return strings.HasPrefix(repository, component+"-")
	}
	return false
}
