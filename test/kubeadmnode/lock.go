package kubeadmnode

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/idc-lts/kube-1.17/test/harness"
	"github.com/idc-lts/kube-1.17/test/tier"
)

// machineLock is held for a whole run: the run's kubelet, dockerd, cgroups and run directory are
// machine-wide, so two checkouts' runs must never overlap, and only a run that holds the lock may
// clean up what an earlier (dead) one left.
const machineLock = "/run/idc-lts-e2e.lock"

// tryLock takes the lock at path without waiting, writing who holds it; held names the holder
// when another live run has it. The release removes the file (the machine is left as found)
// while still holding it; a run that locked a file just removed so sees that its file is no
// longer the one at path, and tries again.
func tryLock(path, holder string) (release func(), held string, err error) {
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, "", err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			data, _ := os.ReadFile(path)
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, strings.TrimSpace(string(data)), nil
			}
			return nil, "", err
		}
		locked, err1 := f.Stat()
		current, err2 := os.Stat(path)
		if err1 != nil || err2 != nil || !os.SameFile(locked, current) {
			f.Close()
			continue
		}
		if err := f.Truncate(0); err == nil {
			f.WriteAt([]byte(holder+"\n"), 0)
		}
		return func() { os.Remove(path); f.Close() }, "", nil
	}
}

// LockMachine holds machineLock until the test's cleanups are done (it is registered first, so it
// is released last), or stops the test, naming the run that holds it.
func LockMachine(t *testing.T) {
	release, held, err := tryLock(machineLock, fmt.Sprintf("pid %d, checkout %s", os.Getpid(), harness.RepoRoot(t)))
	switch {
	case err != nil:
		t.Fatalf("setup: lock %s: %v", machineLock, err)
	case held != "":
		tier.Missing(t, "wait for it to finish", "another e2e run (%s) holds %s: this machine runs one at a time", held, machineLock)
	}
	t.Cleanup(release)
}

// Prerequisites stops the test, before it touches anything on the machine, when what it runs is
// not built: a plain go test ./... in a fresh clone must leave another checkout's run alone.
func Prerequisites(t *testing.T, fixtures string, images []string) {
	for _, tool := range []string{"dockerd", "docker"} {
		harness.Tool(t, tool, "docker.io")
	}
	for _, b := range []struct{ variant, name string }{{"stock", "kubeadm"}, {"stock", "kubelet"}, {"e2e", "runc-oom-clamp"}, {"e2e", "cpswap"}} {
		harness.Binary(t, b.variant, b.name)
	}
	for _, name := range images {
		if _, err := os.Stat(Archive(fixtures, name)); err != nil {
			tier.Missing(t, "run 'make test-e2e'", "no test image %s", Archive(fixtures, name))
		}
	}
}

// Archive is a test image's docker save archive.
func Archive(fixtures, name string) string { return filepath.Join(fixtures, name+"-amd64.docker.tar") }
