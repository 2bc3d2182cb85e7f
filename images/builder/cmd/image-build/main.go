// Command image-build writes the image of one component for several platforms as an OCI image
// layout, a tar of that layout (ctr import), and a docker-archive per platform (docker load).
//
//	image-build -component kube-controller-manager -version v1.17.3-idc.1 -repo REGISTRY/kube-controller-manager \
//	  -platform linux/amd64=BINARY,ROOTFS -platform linux/arm64=BINARY,ROOTFS -epoch N -out DIR
//
// With -fixtures it writes test images instead (image.Fixture): a docker-archive of each fixture
// in a JSON list, named after its reference, and prints each reference with its image ID.
//
//	image-build -fixtures FIXTURES.json -epoch N -out DIR
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/idc-lts/kube-1.17/images/builder"
)

type platforms []image.Platform

func (p *platforms) String() string { return fmt.Sprint(*p) }

func (p *platforms) Set(value string) error {
	osArch, files, ok := strings.Cut(value, "=")
	osName, arch, ok2 := strings.Cut(osArch, "/")
	binary, rootfs, ok3 := strings.Cut(files, ",")
	if !ok || !ok2 || !ok3 {
		return fmt.Errorf("want OS/ARCH=BINARY,ROOTFS, got %q", value)
	}
	*p = append(*p, image.Platform{OS: osName, Arch: arch, Binary: binary, RootFS: rootfs})
	return nil
}

func main() {
	var spec image.Spec
	var plats platforms
	repo := flag.String("repo", "", "image repository, e.g. registry.example.com/k8s/kube-controller-manager")
	out := flag.String("out", "", "output directory")
	epoch := flag.Int64("epoch", 0, "creation time, seconds since 1970 (SOURCE_DATE_EPOCH)")
	flag.StringVar(&spec.Component, "component", "", "kube-controller-manager or kube-scheduler")
	flag.StringVar(&spec.Version, "version", "", "release version, the image tag")
	flag.StringVar(&spec.Revision, "revision", "", "commit of the patch series")
	flag.Var(&plats, "platform", "OS/ARCH=BINARY,ROOTFS (repeatable)")
	fixtures := flag.String("fixtures", "", "JSON list of test images (image.Fixture) to write instead")
	flag.Parse()
	spec.Platforms = plats
	spec.Created = time.Unix(*epoch, 0).UTC()
	build := func() error { return run(spec, *repo, *out) }
	if *fixtures != "" {
		build = func() error { return runFixtures(*fixtures, spec.Created, *out) }
	}
	if err := build(); err != nil {
		fmt.Fprintf(os.Stderr, "image-build: %v\n", err)
		os.Exit(1)
	}
}

func run(spec image.Spec, repo, out string) error {
	if spec.Component == "" || spec.Version == "" || repo == "" || out == "" || len(spec.Platforms) == 0 {
		return fmt.Errorf("-component, -version, -repo, -out and at least one -platform are required")
	}
	tag, err := name.NewTag(repo + ":" + spec.Version)
	if err != nil {
		return fmt.Errorf("image name %s:%s: %v", repo, spec.Version, err)
	}
	index, images, err := image.Build(spec)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}

	layoutDir := filepath.Join(out, spec.Component+".oci")
	if err := os.RemoveAll(layoutDir); err != nil {
		return err
	}
	lp, err := layout.Write(layoutDir, empty.Index)
	if err != nil {
		return err
	}
	if err := lp.AppendIndex(index, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": tag.String(),
		"io.containerd.image.name":          tag.String(),
	})); err != nil {
		return err
	}
	if err := image.TarDir(layoutDir, filepath.Join(out, spec.Component+".oci.tar"), spec.Created); err != nil {
		return err
	}
	for i, img := range images {
		p := spec.Platforms[i]
		path := filepath.Join(out, fmt.Sprintf("%s-%s.docker.tar", spec.Component, p.Arch))
		if err := tarball.WriteToFile(path, tag, img); err != nil {
			return fmt.Errorf("writing %s: %v", path, err)
		}
	}
	digest, err := index.Digest()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, spec.Component+".digest"), []byte(digest.String()+"\n"), 0o644); err != nil {
		return err
	}
	fmt.Printf("%s@%s\n", tag, digest)
	return nil
}

// runFixtures writes a docker-archive of each fixture listed in the JSON file path.
func runFixtures(path string, created time.Time, out string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var fixtures []image.Fixture
	if err := json.Unmarshal(data, &fixtures); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	if len(fixtures) == 0 || out == "" {
		return fmt.Errorf("-fixtures needs a non-empty list and -out")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, f := range fixtures {
		f.Created = created
		tag, err := name.NewTag(f.Ref)
		if err != nil {
			return fmt.Errorf("%s: fixture %q: %v", path, f.Ref, err)
		}
		img, err := image.BuildFixture(f)
		if err != nil {
			return err
		}
		file := filepath.Join(out, FixtureArchive(tag))
		if err := tarball.WriteToFile(file, tag, img); err != nil {
			return fmt.Errorf("writing %s: %v", file, err)
		}
		id, err := img.ConfigName()
		if err != nil {
			return err
		}
		fmt.Printf("%s %s\n", tag, id)
	}
	return nil
}

// FixtureArchive names a fixture's docker-archive after its repository's last element and tag.
func FixtureArchive(tag name.Tag) string {
	repo := tag.RepositoryStr()
	return repo[strings.LastIndex(repo, "/")+1:] + "_" + tag.TagStr() + ".docker.tar"
}
