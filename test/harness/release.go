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

// PublishedRelease is the operator's path to their registry, for a test: a registry of the test's
// own (DOCKER_CONFIG set to its credentials, as cpswap --verify-key logs in as root's ~/.docker
// would), a key pair protected by password, the release cut for that registry and published there,
// signed (make release, make publish). It returns the registry, the release directory and the
// public key.
func PublishedRelease(t *testing.T, password string) (*Registry, string, string) {
	t.Helper()
	registry := StartRegistry(t)
	t.Setenv("DOCKER_CONFIG", registry.DockerConfig)
	tmp := t.TempDir()
	signingKey, verifyKey := CosignKeyPair(t, filepath.Join(tmp, "keys"), password)
	release := CutRelease(t, registry.Host+"/idc-lts", tmp)
	if out, err := Publish(t, registry, []string{"REGISTRY=" + registry.Host + "/idc-lts", "RELEASE_DIR=" + release, "SIGNING_KEY=" + signingKey},
		[]string{"COSIGN_PASSWORD=" + password}); err != nil {
		t.Fatalf("setup: make publish: %v\n%s", err, out)
	}
	return registry, release, verifyKey
}
