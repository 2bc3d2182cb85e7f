package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idc-lts/kube-1.17/test/tier"
)

// Tool is the path of a command a test runs from PATH. A missing one is a missing prerequisite
// (tier.Missing) that names the Debian package hack/install-tools.sh installs it from.
func Tool(t testing.TB, name, debianPackage string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		tier.Missing(t, fmt.Sprintf("run 'sudo hack/install-tools.sh' (Debian's %s)", debianPackage), "no %s on PATH", name)
	}
	return path
}

// Cosign is the path of cosign's CLI, installed by hack/install-tools.sh into GOPATH/bin.
func Cosign(t testing.TB) string {
	t.Helper()
	gopath, err := exec.Command("go", "env", "GOPATH").Output()
	if err != nil {
		t.Fatal(err)
	}
	cosign := filepath.Join(strings.TrimSpace(string(gopath)), "bin", "cosign")
	if _, err := os.Stat(cosign); err != nil {
		tier.Missing(t, "run 'sudo hack/install-tools.sh' (cosign through the Go module proxy)", "no %s", cosign)
	}
	return cosign
}
