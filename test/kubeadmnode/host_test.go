package kubeadmnode

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestHostSnapshotChanges(t *testing.T) {
	for _, c := range []struct {
		name          string
		before, after HostSnapshot
		want          []string
	}{
		{"same", HostSnapshot{"a", "b"}, HostSnapshot{"a", "b"}, nil},
		{"one gone, one new", HostSnapshot{"a", "b"}, HostSnapshot{"a", "c"}, []string{"gone: b", "new: c"}},
		{"a repeated line counts each time", HostSnapshot{"m", "m"}, HostSnapshot{"m"}, []string{"gone: m"}},
		{"from nothing", nil, HostSnapshot{"x"}, []string{"new: x"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.before.Changes(c.after); !slices.Equal(got, c.want) {
				t.Errorf("Changes: %q, want %q", got, c.want)
			}
		})
	}
}

// TestHostSnapshotSeesMountsAndCgroups: a mount and a top-level cgroup the run leaves behind each
// show as a change, and nothing does once they are gone.
func TestHostSnapshotSeesMountsAndCgroups(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting and making cgroups needs root")
	}
	before, err := TakeHostSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	cgroup := filepath.Join(cgroupV1Root, "pids", "idc-lts-snapshot-test")
	if _, err := os.Stat(filepath.Join(cgroupV1Root, "cgroup.controllers")); err == nil {
		cgroup = filepath.Join(cgroupV1Root, "idc-lts-snapshot-test")
	}
	if err := os.Mkdir(cgroup, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(cgroup) })

	during, err := TakeHostSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	changes := strings.Join(before.Changes(during), "\n")
	for _, want := range []string{"new: mount: tmpfs on " + dir + " type tmpfs", "new: cgroup: " + cgroup} {
		if !strings.Contains(changes, want) {
			t.Errorf("changes with a mount and a cgroup left:\n%s\nwant a line %q", changes, want)
		}
	}

	if err := unix.Unmount(dir, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(cgroup); err != nil {
		t.Fatal(err)
	}
	after, err := TakeHostSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if changes := before.Changes(after); len(changes) > 0 {
		t.Errorf("changes after the mount and the cgroup are gone: %q, want none", changes)
	}
}
