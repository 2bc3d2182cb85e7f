package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// CosignKeyPair makes a cosign key pair in dir with cosign's CLI, encrypted with password; it
// returns the private and public key's paths.
func CosignKeyPair(t testing.TB, dir, password string) (string, string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(Cosign(t), "generate-key-pair")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "COSIGN_PASSWORD="+password)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
	}
	return filepath.Join(dir, "cosign.key"), filepath.Join(dir, "cosign.pub")
}

// ReleaseVersion is the version build/version.sh gives.
func ReleaseVersion(t testing.TB) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(RepoRoot(t), "build", "version.sh")).Output()
	if err != nil {
		t.Fatalf("build/version.sh: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// CutRelease cuts the release for registry (host[:port]/path) into dir/<version> with the
// README's command, make release REGISTRY=..., for amd64 as the tests build it (ARCHS=amd64),
// and returns its directory.
func CutRelease(t testing.TB, registry, dir string) string {
	t.Helper()
	release := filepath.Join(dir, ReleaseVersion(t))
	cmd := exec.Command("make", "-s", "-C", RepoRoot(t), "release", "ARCHS=amd64", "REGISTRY="+registry, "RELEASE_DIR="+release)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	return release
}

// Publish runs make publish as the README tells the operator to, with the registry's CA and
// credentials and the given make variables and environment (NAME=value each); it returns the
// output and the error.
func Publish(t testing.TB, r *Registry, vars, env []string) (string, error) {
	t.Helper()
	cmd := exec.Command("make", append([]string{"-s", "-C", RepoRoot(t), "publish", "REGISTRY_CA_FILE=" + r.CAFile}, vars...)...)
	cmd.Env = append(append(os.Environ(), "DOCKER_CONFIG="+r.DockerConfig), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
