package kubeadmnode

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestMachineLockKeepsRunsApart: while one run holds the machine's e2e lock, another is told who
// holds it and gets nothing (so it neither cleans up nor starts anything); once released, the
// next run takes it.
func TestMachineLockKeepsRunsApart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e2e.lock")
	release, held, err := tryLock(path, "pid 1, checkout /a")
	if err != nil || held != "" {
		t.Fatalf("first run: %v, held by %q", err, held)
	}
	if r2, held, err := tryLock(path, "pid 2, checkout /b"); err != nil || held != "pid 1, checkout /a" || r2 != nil {
		t.Errorf("second run while the first holds it: err %v, told %q", err, held)
	}
	release()
	r3, held, err := tryLock(path, "pid 3, checkout /c")
	if err != nil || held != "" {
		t.Fatalf("after the release: %v, held by %q", err, held)
	}
	r3()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the released lock file stays: %v", err)
	}
}
