package image

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// fixtureRootFS writes a small root filesystem with a setuid-root program, as nonewprivs' image has.
func fixtureRootFS(t *testing.T) string {
	t.Helper()
	rootfs := filepath.Join(t.TempDir(), "rootfs")
	if err := os.MkdirAll(filepath.Join(rootfs, "usr/local/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	nnp := filepath.Join(rootfs, "usr/local/bin/nnp")
	if err := os.WriteFile(nnp, []byte("nnp"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(nnp, 0o755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	return rootfs
}

func fixtureSpec(rootfs string) Fixture {
	return Fixture{Ref: "gcr.io/kubernetes-e2e-test-images/nonewprivs:1.0", OS: "linux", Arch: "amd64", RootFS: rootfs,
		Cmd: []string{"nnp"}, User: "1000", ExposedPorts: []string{"80/tcp"}, KeepSpecialBits: true,
		Created: time.Unix(1700000000, 0).UTC()}
}

// modes maps each file of the image's only layer to its tar mode.
func modes(t *testing.T, f Fixture) map[string]int64 {
	t.Helper()
	img, err := BuildFixture(f)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers (%v), want one", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	found := map[string]int64{}
	for tr := tar.NewReader(rc); ; {
		hdr, err := tr.Next()
		if err == io.EOF {
			return found
		}
		if err != nil {
			t.Fatal(err)
		}
		found[hdr.Name] = hdr.Mode
	}
}

// TestFixtureKeepsWhatItsDockerfileSays: one layer, the process settings, and the setuid bit
// only when asked for.
func TestFixtureKeepsWhatItsDockerfileSays(t *testing.T) {
	rootfs := fixtureRootFS(t)
	f := fixtureSpec(rootfs)
	if got := modes(t, f)["usr/local/bin/nnp"]; got != 0o4755 {
		t.Errorf("nnp has mode %o in the image, want 4755 (setuid kept)", got)
	}
	img, err := BuildFixture(f)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.Config.Cmd, f.Cmd) || cfg.Config.User != "1000" || len(cfg.Config.Entrypoint) != 0 {
		t.Errorf("config runs %v %v as %q, want cmd %v as 1000", cfg.Config.Entrypoint, cfg.Config.Cmd, cfg.Config.User, f.Cmd)
	}
	if _, ok := cfg.Config.ExposedPorts["80/tcp"]; !ok || cfg.OS != "linux" || cfg.Architecture != "amd64" {
		t.Errorf("config exposes %v for %s/%s, want 80/tcp for linux/amd64", cfg.Config.ExposedPorts, cfg.OS, cfg.Architecture)
	}

	f.KeepSpecialBits = false
	if got := modes(t, f)["usr/local/bin/nnp"]; got != 0o755 {
		t.Errorf("without KeepSpecialBits nnp has mode %o, want 755", got)
	}
}

// TestFixtureIsReproducible: the same inputs give the same image ID, and a missing field is named.
func TestFixtureIsReproducible(t *testing.T) {
	rootfs := fixtureRootFS(t)
	var ids []string
	for i := 0; i < 2; i++ {
		img, err := BuildFixture(fixtureSpec(rootfs))
		if err != nil {
			t.Fatal(err)
		}
		id, err := img.ConfigName()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id.String())
	}
	if ids[0] != ids[1] {
		t.Errorf("two builds of one fixture: %s and %s", ids[0], ids[1])
	}
	f := fixtureSpec(rootfs)
	f.RootFS = ""
	if _, err := BuildFixture(f); err == nil {
		t.Errorf("a fixture without a rootfs was built")
	}
}
