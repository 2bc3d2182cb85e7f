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

// lockMachine holds machineLock until the test's cleanups are done (it is registered first, so it
// is released last), or stops the test, naming the run that holds it.
func lockMachine(t *testing.T) {
	release, held, err := tryLock(machineLock, fmt.Sprintf("pid %d, checkout %s", os.Getpid(), harness.RepoRoot(t)))
	switch {
	case err != nil:
		t.Fatalf("setup: lock %s: %v", machineLock, err)
	case held != "":
		tier.Missing(t, "wait for it to finish", "another e2e run (%s) holds %s: this machine runs one at a time", held, machineLock)
	}
	t.Cleanup(release)
}

// controlPlaneImages are the images a kubeadm node's static pods and sandboxes run, built by
// images/e2e/build.sh (make e2e-fixtures).
var controlPlaneImages = []string{"pause", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// ClaimMachine is where a suite that runs a node starts: it needs root and what the node runs,
// checked before it touches anything on the machine (a plain go test ./... in a fresh clone must
// leave another checkout's run alone), then the machine's lock; only then may it clean up after a
// dead run.
func ClaimMachine(t *testing.T) {
	if os.Geteuid() != 0 {
		tier.Missing(t, "run it as root", "it runs a kubelet and a dockerd")
	}
	for _, tool := range []string{"dockerd", "docker"} {
		harness.Tool(t, tool, "docker.io")
	}
	for _, b := range []struct{ variant, name string }{{"stock", "kubeadm"}, {"stock", "kubelet"}, {"e2e", "runc-oom-clamp"}, {"e2e", "cpswap"}} {
		harness.Binary(t, b.variant, b.name)
	}
	for _, name := range controlPlaneImages {
		if _, err := os.Stat(archive(t, name)); err != nil {
			tier.Missing(t, "run 'make e2e-fixtures'", "no test image %s", archive(t, name))
		}
	}
	lockMachine(t)
}

// archive is a control-plane image's docker save archive.
func archive(t *testing.T, name string) string {
	return filepath.Join(harness.OutputDir(t), "images", "e2e", name+"-amd64.docker.tar")
}
