// Package tier lets a test say what it needs beyond the Go toolchain (binaries `make build`
// makes, the upstream tree, release images, root), after kind's pkg/internal/integration
// MaybeSkip. A plain `go test ./...` on a checkout that lacks it skips the test with the reason;
// under make (the Makefile exports RequireEnv=1) the same test fails instead, so that CI never
// passes by skipping.
package tier

import (
	"fmt"
	"os"
	"testing"
)

// RequireEnv, when set, turns a missing prerequisite into a failure.
const RequireEnv = "IDC_REQUIRE_PREREQUISITES"

// Missing reports that a prerequisite of the test is not there: the test fails under make and is
// skipped otherwise. how says what provides it ("run 'make build'").
func Missing(t testing.TB, how string, format string, args ...interface{}) {
	t.Helper()
	what := fmt.Sprintf(format, args...)
	if os.Getenv(RequireEnv) != "" {
		t.Fatalf("%s: %s", what, how)
	}
	t.Skipf("skipped: %s (%s; under make, where %s=1, this fails instead)", what, how, RequireEnv)
}
