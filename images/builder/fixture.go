package image

import (
	"fmt"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Fixture is a test image of one platform: a whole root filesystem in one layer, and the process
// settings its upstream Dockerfile gives it. The conformance run loads upstream's test images
// built so (and stand-ins for those it cannot build) under the names the e2e framework asks for;
// they are never released. One layer, because the test's dockerd copies every layer per
// container (vfs).
type Fixture struct {
	// Ref is the image's name and tag, as test/utils/image/manifest.go spells it.
	Ref          string   `json:"ref"`
	OS           string   `json:"os"`
	Arch         string   `json:"arch"`
	RootFS       string   `json:"rootfs"`
	Entrypoint   []string `json:"entrypoint,omitempty"`
	Cmd          []string `json:"cmd,omitempty"`
	User         string   `json:"user,omitempty"`
	WorkingDir   string   `json:"workingDir,omitempty"`
	Env          []string `json:"env,omitempty"`
	ExposedPorts []string `json:"exposedPorts,omitempty"` // "80/tcp"
	// KeepSpecialBits keeps the setuid, setgid and sticky bits of files (nonewprivs' nnp is
	// setuid root); otherwise only directories keep their sticky bit.
	KeepSpecialBits bool      `json:"keepSpecialBits,omitempty"`
	Created         time.Time `json:"-"`
}

// BuildFixture returns the fixture's image.
func BuildFixture(f Fixture) (v1.Image, error) {
	if f.Ref == "" || f.OS == "" || f.Arch == "" || f.RootFS == "" {
		return nil, fmt.Errorf("fixture %q: ref, os, arch and rootfs are required", f.Ref)
	}
	layer, err := layerFromDir(f.RootFS, "", f.Created, f.KeepSpecialBits)
	if err != nil {
		return nil, fmt.Errorf("fixture %s: layer from %s: %v", f.Ref, f.RootFS, err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if img, err = mutate.AppendLayers(img, layer); err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = f.OS, f.Arch
	cfg.Config.Entrypoint, cfg.Config.Cmd = f.Entrypoint, f.Cmd
	cfg.Config.User, cfg.Config.WorkingDir = f.User, f.WorkingDir
	cfg.Config.Env = f.Env
	if len(cfg.Config.Env) == 0 {
		cfg.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	}
	if len(f.ExposedPorts) > 0 {
		cfg.Config.ExposedPorts = map[string]struct{}{}
		for _, port := range f.ExposedPorts {
			cfg.Config.ExposedPorts[port] = struct{}{}
		}
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return nil, err
	}
	return mutate.CreatedAt(img, v1.Time{Time: f.Created})
}
