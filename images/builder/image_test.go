package image

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fixture writes a fake binary and a small root filesystem and returns a Spec using them.
func fixture(t *testing.T) Spec {
	t.Helper()
	dir := t.TempDir()
	binary := filepath.Join(dir, "kube-controller-manager")
	if err := os.WriteFile(binary, []byte("#!/bin/sh\necho fake\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	rootfs := filepath.Join(dir, "rootfs")
	for _, d := range []string{"bin", "etc/ssl/certs", "tmp"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(rootfs, "tmp"), 0o1777|os.ModeSticky)
	os.WriteFile(filepath.Join(rootfs, "bin/busybox"), []byte("busybox"), 0o755)
	os.Symlink("busybox", filepath.Join(rootfs, "bin/sh"))
	os.WriteFile(filepath.Join(rootfs, "etc/ssl/certs/ca-certificates.crt"), []byte("certs"), 0o644)
	return Spec{
		Component: "kube-controller-manager",
		Version:   "v1.17.3-idc.1",
		Revision:  "0123456789abcdef",
		Created:   time.Unix(1700000000, 0).UTC(),
		Platforms: []Platform{
			{OS: "linux", Arch: "amd64", Binary: binary, RootFS: rootfs},
			{OS: "linux", Arch: "arm64", Binary: binary, RootFS: rootfs},
		},
	}
}

func indexDigest(t *testing.T, spec Spec) string {
	t.Helper()
	index, _, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := index.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return digest.String()
}

func TestBuildIsReproducible(t *testing.T) {
	spec := fixture(t)
	first := indexDigest(t, spec)
	// The same inputs copied elsewhere, touched later: still the same image.
	again := fixture(t)
	now := time.Now()
	os.Chtimes(again.Platforms[0].Binary, now, now)
	if second := indexDigest(t, again); second != first {
		t.Errorf("same inputs gave %s and %s", first, second)
	}
	later := fixture(t)
	later.Created = later.Created.Add(time.Second)
	if other := indexDigest(t, later); other == first {
		t.Errorf("a different creation time gave the same digest %s", first)
	}
}

func TestImageLayout(t *testing.T) {
	spec := fixture(t)
	index, images, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(manifest.Manifests) != 2 || manifest.Manifests[1].Platform.Architecture != "arm64" {
		t.Fatalf("index manifests = %+v, want amd64 and arm64", manifest.Manifests)
	}
	cfg, err := images[0].ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Config.Entrypoint; len(got) != 1 || got[0] != "/usr/local/bin/kube-controller-manager" {
		t.Errorf("entrypoint = %v", got)
	}
	if cfg.Config.User != "" {
		t.Errorf("user = %q, want root (empty) like upstream", cfg.Config.User)
	}
	layers, err := images[0].Layers()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]tar.Header{
		"bin/sh":                                {Typeflag: tar.TypeSymlink, Linkname: "busybox"},
		"tmp/":                                  {Typeflag: tar.TypeDir, Mode: 0o1777},
		"usr/local/bin/kube-controller-manager": {Typeflag: tar.TypeReg, Mode: 0o755},
	}
	seen := map[string]bool{}
	for _, layer := range layers {
		rc, err := layer.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			hdr, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if hdr.Uid != 0 || hdr.Gid != 0 || !hdr.ModTime.Equal(spec.Created) {
				t.Errorf("%s: uid %d gid %d mtime %v, want root and %v", hdr.Name, hdr.Uid, hdr.Gid, hdr.ModTime, spec.Created)
			}
			if w, ok := want[hdr.Name]; ok {
				seen[hdr.Name] = true
				if hdr.Typeflag != w.Typeflag || hdr.Linkname != w.Linkname || (w.Mode != 0 && hdr.Mode != w.Mode) {
					t.Errorf("%s: type %c link %q mode %o, want type %c link %q mode %o",
						hdr.Name, hdr.Typeflag, hdr.Linkname, hdr.Mode, w.Typeflag, w.Linkname, w.Mode)
				}
			}
		}
		rc.Close()
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("%s missing from the image", name)
		}
	}
}

func TestBuildRejectsBadInputs(t *testing.T) {
	spec := fixture(t)
	spec.Platforms[0].Binary = filepath.Join(t.TempDir(), "missing")
	if _, _, err := Build(spec); err == nil {
		t.Error("missing binary: no error")
	}
	spec = fixture(t)
	os.Chmod(spec.Platforms[0].Binary, 0o644)
	if _, _, err := Build(spec); err == nil {
		t.Error("binary not executable: no error")
	}
}
