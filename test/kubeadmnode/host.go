package kubeadmnode

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// This file holds what the test changes on the host outside its own directories, and how it puts
// each back: processes, mounts, cgroups, kernel parameters, the kubelet's pod logs.

// killProcessTrees kills every process whose command line names something under one of paths
// (path/..., so that another suite's /run/x-y is not /run/x's), every process in
// one of the cgroup directories, and all their descendants; it returns how many it killed. A
// containerd-shim's command line names the private dockerd's exec root, and its children are
// the containers.
func killProcessTrees(paths, cgroupDirs []string) (int, error) {
	procs, err := procfs.AllProcs()
	if err != nil {
		return 0, err
	}
	self := os.Getpid()
	ancestors := map[int]bool{}
	for pid := self; pid > 1; {
		ancestors[pid] = true
		p, err := procfs.NewProc(pid)
		if err != nil {
			break
		}
		s, err := p.Stat()
		if err != nil {
			break
		}
		pid = s.PPID
	}
	children := map[int][]int{}
	targets := map[int]bool{}
	for _, p := range procs {
		s, err := p.Stat()
		if err != nil {
			continue
		}
		children[s.PPID] = append(children[s.PPID], p.PID)
		cmdline, err := p.CmdLine()
		if err != nil {
			continue
		}
		joined := strings.Join(cmdline, " ")
		for _, path := range paths {
			if strings.Contains(joined, path+"/") {
				targets[p.PID] = true
			}
		}
	}
	for _, dir := range cgroupDirs {
		for _, pid := range cgroupPids(dir) {
			targets[pid] = true
		}
	}
	queue := make([]int, 0, len(targets))
	for pid := range targets {
		queue = append(queue, pid)
	}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, child := range children[pid] {
			if !targets[child] {
				targets[child] = true
				queue = append(queue, child)
			}
		}
	}
	killed := 0
	for pid := range targets {
		if ancestors[pid] {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed++
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for pid := range targets {
		for !ancestors[pid] && processAlive(pid) {
			if time.Now().After(deadline) {
				return killed, fmt.Errorf("process %d survived SIGKILL for 20s", pid)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return killed, nil
}

// processAlive reports whether pid exists and is not a zombie.
func processAlive(pid int) bool {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return false
	}
	s, err := p.Stat()
	return err == nil && s.State != "Z"
}

// cgroupPids lists the processes in a cgroup directory and every cgroup below it.
func cgroupPids(dir string) []int {
	var pids []int
	_ = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || info.Name() != "cgroup.procs" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		for _, field := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(field); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	return pids
}

// unmountUnder detaches every mount point at or below one of dirs, deepest first, and returns
// the mount points it detached.
func unmountUnder(dirs ...string) ([]string, error) {
	points, err := mountPointsUnder(dirs...)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, point := range points {
		if err := unix.Unmount(point, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %v", point, err))
		}
	}
	return points, errors.Join(errs...)
}

// mountPointsUnder lists the mount points at or below dirs, deepest first.
func mountPointsUnder(dirs ...string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	seen := map[string]bool{}
	var points []string
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) < 5 {
			continue
		}
		point := unescapeMountPath(fields[4])
		for _, dir := range dirs {
			if (point == dir || strings.HasPrefix(point, dir+"/")) && !seen[point] {
				seen[point] = true
				points = append(points, point)
			}
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	return points, scanner.Err()
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cgroupV1Root is where the host mounts its cgroup v1 hierarchies, one directory each.
const cgroupV1Root = "/sys/fs/cgroup"

// unifiedHierarchy is the cgroup v2 hierarchy a hybrid host mounts beside the v1 ones: the
// kubelet needs nothing there, but runc mirrors its containers' cgroups in it.
const unifiedHierarchy = "unified"

// cgroupDirs returns name's directory in every cgroup v1 hierarchy the host mounts, and, with
// unified, in its cgroup v2 hierarchy too.
func cgroupDirs(name string, unified bool) ([]string, error) {
	entries, err := os.ReadDir(cgroupV1Root)
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries {
		if !e.IsDir() || (e.Name() == unifiedHierarchy && !unified) {
			continue
		}
		if _, err := os.Stat(filepath.Join(cgroupV1Root, e.Name(), "cgroup.procs")); err == nil {
			dirs = append(dirs, filepath.Join(cgroupV1Root, e.Name(), name))
		}
	}
	return dirs, nil
}

// createCgroups makes the kubelet's --cgroup-root in every hierarchy (the kubelet requires it to
// exist); a new cpuset cgroup starts with no CPUs or memory nodes, so it gets its parent's.
func createCgroups(dirs []string) error {
	for _, dir := range dirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
			parent, err := os.ReadFile(filepath.Join(filepath.Dir(dir), file))
			if err != nil {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, file), parent, 0o644); err != nil {
				return fmt.Errorf("%s: %v", filepath.Join(dir, file), err)
			}
		}
	}
	return nil
}

// removeCgroups removes the cgroup directories and everything below them, deepest first (a
// cgroup directory is removed with rmdir, and only once it holds no process).
func removeCgroups(dirs []string) error {
	var errs []error
	for _, dir := range dirs {
		var sub []string
		_ = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
			if err == nil && info.IsDir() {
				sub = append(sub, path)
			}
			return nil
		})
		sort.Slice(sub, func(i, j int) bool { return len(sub[i]) > len(sub[j]) })
		for _, d := range sub {
			// A cgroup stays busy for a moment after its last process was reaped.
			err := syscall.Rmdir(d)
			for deadline := time.Now().Add(5 * time.Second); errors.Is(err, syscall.EBUSY) && time.Now().Before(deadline); {
				time.Sleep(100 * time.Millisecond)
				err = syscall.Rmdir(d)
			}
			if err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("rmdir %s: %v", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// kubeletSysctls are the kernel parameters kubelet v1.17.3 sets on start
// (pkg/kubelet/cm.setupKernelTunables without --protect-kernel-defaults, and the no-op network
// plugin's bridge-nf-call-iptables); the test puts back what the host had.
var kubeletSysctls = []string{
	"vm/overcommit_memory",
	"vm/panic_on_oom",
	"kernel/panic",
	"kernel/panic_on_oops",
	"kernel/keys/root_maxkeys",
	"kernel/keys/root_maxbytes",
	"net/bridge/bridge-nf-call-iptables",
	"net/bridge/bridge-nf-call-ip6tables",
}

// kubeletChangedProcFiles lists the /proc files the kubelet writes and the test restores: the
// kernel parameters above, and the oom_score_adj of the host's container runtime daemons, which
// kubelet v1.17.3 sets to -999 at start and every 5 minutes, whatever its flags say (the dockerd
// in /var/run/docker.pid, every dockerd when that file cannot be read, and docker-containerd).
func kubeletChangedProcFiles() []string {
	var paths []string
	for _, name := range kubeletSysctls {
		paths = append(paths, filepath.Join("/proc/sys", name))
	}
	procs, err := procfs.AllProcs()
	if err != nil {
		return paths
	}
	for _, p := range procs {
		if comm, err := p.Comm(); err == nil && (comm == "dockerd" || comm == "docker-containerd" || comm == "containerd") {
			paths = append(paths, fmt.Sprintf("/proc/%d/oom_score_adj", p.PID))
		}
	}
	return paths
}

// readProcFiles returns the content of each file that exists, by path.
func readProcFiles(paths []string) map[string]string {
	values := map[string]string{}
	for _, path := range paths {
		if data, err := os.ReadFile(path); err == nil {
			values[path] = strings.TrimSpace(string(data))
		}
	}
	return values
}

// restoreProcFiles writes back each recorded value that differs from the file's content (a file
// that is gone, of a process that ended, is skipped), and returns the ones it changed.
func restoreProcFiles(values map[string]string) ([]string, error) {
	var changed []string
	var errs []error
	for path, want := range values {
		have, err := os.ReadFile(path)
		if err != nil || strings.TrimSpace(string(have)) == want {
			continue
		}
		if err := os.WriteFile(path, []byte(want+"\n"), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restoring %s to %s: %v", path, want, err))
			continue
		}
		changed = append(changed, fmt.Sprintf("%s %s->%s", path, strings.TrimSpace(string(have)), want))
	}
	sort.Strings(changed)
	return changed, errors.Join(errs...)
}

// HostSnapshot is what a run must leave on the host as it found it, one line per item: its links
// (without their counters) and routes, what is mounted where, and the cgroups at the top of each
// hierarchy, where each node's --cgroup-root lives (the kubelet's and the containers' cgroups
// are below it).
type HostSnapshot []string

// TakeHostSnapshot records the calling namespaces' view of the host.
func TakeHostSnapshot() (HostSnapshot, error) {
	network, err := HostNetwork()
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, line := range strings.Split(network, "\n") {
		if line != "" {
			lines = append(lines, "network: "+line)
		}
	}
	mounts, err := procfs.GetProcMounts(os.Getpid())
	if err != nil {
		return nil, fmt.Errorf("mounts: %v", err)
	}
	for _, m := range mounts {
		lines = append(lines, fmt.Sprintf("mount: %s on %s type %s (root %s)", m.Source, m.MountPoint, m.FSType, m.Root))
	}
	cgroups, err := topCgroups()
	if err != nil {
		return nil, fmt.Errorf("cgroups: %v", err)
	}
	for _, c := range cgroups {
		lines = append(lines, "cgroup: "+c)
	}
	sort.Strings(lines)
	return lines, nil
}

// topCgroups lists the cgroups at the top of each hierarchy: of each v1 hierarchy and of a
// hybrid host's unified one, or of the one hierarchy of a cgroup v2 host.
func topCgroups() ([]string, error) {
	hierarchies := []string{cgroupV1Root}
	if _, err := os.Stat(filepath.Join(cgroupV1Root, "cgroup.controllers")); err != nil {
		entries, err := os.ReadDir(cgroupV1Root)
		if err != nil {
			return nil, err
		}
		hierarchies = nil
		for _, e := range entries {
			if e.IsDir() {
				hierarchies = append(hierarchies, filepath.Join(cgroupV1Root, e.Name()))
			}
		}
	}
	var out []string
	for _, h := range hierarchies {
		entries, err := os.ReadDir(h)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.IsDir() {
				out = append(out, filepath.Join(h, e.Name()))
			}
		}
	}
	return out, nil
}

// Changes names each line found in only one of the two snapshots: "gone: " what before had and
// after lacks, "new: " the reverse. None means the host is as it was.
func (before HostSnapshot) Changes(after HostSnapshot) []string {
	count := map[string]int{}
	for _, line := range before {
		count[line]++
	}
	for _, line := range after {
		count[line]--
	}
	var changes []string
	for _, line := range before {
		if count[line] > 0 {
			changes = append(changes, "gone: "+line)
			count[line]--
		}
	}
	for _, line := range after {
		if count[line] < 0 {
			changes = append(changes, "new: "+line)
			count[line]++
		}
	}
	return changes
}
