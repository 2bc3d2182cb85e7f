// Package image assembles the drop-in control-plane images from the built binaries and a base
// root filesystem, without a container daemon, so that the same inputs give the same digest.
package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Platform is one architecture of an image: the component binary and the base root filesystem.
type Platform struct {
	OS, Arch string
	Binary   string
	RootFS   string
}

// Spec describes an image of one component.
type Spec struct {
	Component string
	Version   string
	// Revision identifies the source: the commit of the patch series.
	Revision  string
	Created   time.Time
	Platforms []Platform
}

// BinaryDir is where the component binary goes, as in upstream's images.
const BinaryDir = "/usr/local/bin"

// Build returns the multi-platform index and the image of each platform, in Spec order.
func Build(spec Spec) (v1.ImageIndex, []v1.Image, error) {
	index := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var images []v1.Image
	for _, p := range spec.Platforms {
		img, err := buildPlatform(spec, p)
		if err != nil {
			return nil, nil, fmt.Errorf("%s %s/%s: %v", spec.Component, p.OS, p.Arch, err)
		}
		images = append(images, img)
		index = mutate.AppendManifests(index, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: p.OS, Architecture: p.Arch}},
		})
	}
	return index, images, nil
}

func buildPlatform(spec Spec, p Platform) (v1.Image, error) {
	base, err := layerFromDir(p.RootFS, "", spec.Created, false)
	if err != nil {
		return nil, fmt.Errorf("base layer from %s: %v", p.RootFS, err)
	}
	binary, err := layerFromFile(p.Binary, BinaryDir+"/"+spec.Component, spec.Created)
	if err != nil {
		return nil, fmt.Errorf("binary layer from %s: %v", p.Binary, err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.AppendLayers(img, base, binary)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = p.OS, p.Arch
	cfg.Config.Entrypoint = []string{BinaryDir + "/" + spec.Component}
	cfg.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title":    spec.Component,
		"org.opencontainers.image.version":  spec.Version,
		"org.opencontainers.image.revision": spec.Revision,
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, err
	}
	return mutate.CreatedAt(img, v1.Time{Time: spec.Created})
}

// entry is a file, directory or symlink of a layer.
type entry struct {
	name   string // path in the image, without a leading slash
	mode   int64
	target string // symlink target
	source string // file to copy content from
	dir    bool
}

func layerFromFile(source, dest string, created time.Time) (v1.Layer, error) {
	info, err := os.Stat(source)
	if err != nil {
		return nil, err
	}
	if info.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("%s is not executable", source)
	}
	dest = strings.TrimPrefix(dest, "/")
	var entries []entry
	for dir := filepath.Dir(dest); dir != "."; dir = filepath.Dir(dir) {
		entries = append(entries, entry{name: dir, mode: 0o755, dir: true})
	}
	entries = append(entries, entry{name: dest, mode: 0o755, source: source})
	return layerFromEntries(entries, created)
}

// layerFromDir makes a layer of everything under root. Owners become root, times become
// created, modes keep only the permission bits (and a directory's sticky bit, or with
// keepSpecialBits every setuid, setgid and sticky bit): the machine that builds leaves no trace.
func layerFromDir(root, prefix string, created time.Time, keepSpecialBits bool) (v1.Layer, error) {
	var entries []entry
	err := filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." {
			return err
		}
		e := entry{name: filepath.ToSlash(filepath.Join(prefix, rel)), mode: int64(info.Mode().Perm())}
		switch {
		case info.Mode()&os.ModeSymlink != 0:
			if e.target, err = os.Readlink(path); err != nil {
				return err
			}
		case info.IsDir():
			e.dir = true
			if info.Mode()&os.ModeSticky != 0 {
				e.mode |= 0o1000
			}
		case info.Mode().IsRegular():
			e.source = path
			if keepSpecialBits {
				e.mode |= specialBits(info.Mode())
			}
		default:
			return fmt.Errorf("%s: unsupported file type %v", path, info.Mode().Type())
		}
		entries = append(entries, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return layerFromEntries(entries, created)
}

// specialBits are mode's setuid, setgid and sticky bits as tar spells them.
func specialBits(mode os.FileMode) int64 {
	var bits int64
	if mode&os.ModeSetuid != 0 {
		bits |= 0o4000
	}
	if mode&os.ModeSetgid != 0 {
		bits |= 0o2000
	}
	if mode&os.ModeSticky != 0 {
		bits |= 0o1000
	}
	return bits
}

func layerFromEntries(entries []entry, created time.Time) (v1.Layer, error) {
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: e.mode, ModTime: created, Format: tar.FormatPAX}
		switch {
		case e.dir:
			hdr.Typeflag, hdr.Name = tar.TypeDir, e.name+"/"
		case e.target != "":
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, e.target
		default:
			hdr.Typeflag = tar.TypeReg
			data, err := os.ReadFile(e.source)
			if err != nil {
				return nil, err
			}
			hdr.Size = int64(len(data))
			if err := tw.WriteHeader(hdr); err != nil {
				return nil, err
			}
			if _, err := tw.Write(data); err != nil {
				return nil, err
			}
			continue
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// TarDir writes a tar of dir (an OCI layout) with fixed owners and times, for `ctr import`.
func TarDir(dir, dest string, created time.Time) error {
	var entries []entry
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		e := entry{name: filepath.ToSlash(rel), mode: 0o644, dir: info.IsDir(), source: path}
		if e.dir {
			e.mode = 0o755
		}
		entries = append(entries, e)
		return nil
	})
	if err != nil {
		return err
	}
	layer, err := layerFromEntries(entries, created)
	if err != nil {
		return err
	}
	rc, err := layer.Uncompressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	f, err := os.Create(dest)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, rc); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
