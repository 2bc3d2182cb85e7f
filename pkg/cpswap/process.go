package cpswap

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/prometheus/procfs"
)

// A process is known by its PID and its start time in clock ticks since boot (field 22 of
// /proc/<pid>/stat): a PID can be reused, the pair cannot. cpswap tells a restarted component from
// the old one by comparing these pairs with the ones that ran before the manifest changed, all in
// the kernel's own clock: converting start times to wall-clock time goes through /proc/stat's
// btime, which an NTP step, a VM pause or a live migration moves away from time.Now().

// Process is one process of a component.
type Process struct {
	PID       int
	StartTick uint64
}

// Processes reads the processes named comm from a proc filesystem.
type Processes struct {
	FS procfs.FS
	// NetNS, when not 0, is the inode of the only network namespace whose processes count. A
	// kubeadm master's static pods run in the host's network namespace, as cpswap does; several
	// masters on one machine (each in a network namespace of its own, as in a test) run the same
	// components with the same flags, and only this master's are the ones its manifests start.
	NetNS uint32
}

// HostProcesses reads /proc, keeping the processes of cpswap's own network namespace.
func HostProcesses() (Processes, error) {
	fs, err := procfs.NewFS(procfs.DefaultMountPoint)
	if err != nil {
		return Processes{}, err
	}
	self, err := fs.Self()
	if err != nil {
		return Processes{}, err
	}
	namespaces, err := self.Namespaces()
	if err != nil {
		return Processes{}, fmt.Errorf("cpswap's own network namespace: %v", err)
	}
	return Processes{FS: fs, NetNS: namespaces["net"].Inode}, nil
}

// Named lists the running processes whose comm is comm (the kernel keeps 15 characters).
func (p Processes) Named(comm string) ([]Process, error) { return p.named(comm, nil) }

// named lists them, keeping only those whose command line ends with args when args is not nil.
func (p Processes) named(comm string, args []string) ([]Process, error) {
	procs, err := p.FS.AllProcs()
	if err != nil {
		return nil, err
	}
	if len(comm) > 15 {
		comm = comm[:15]
	}
	var out []Process
	for _, proc := range procs {
		stat, err := proc.Stat()
		if err != nil || stat.Comm != comm {
			continue // the process ended, or another one
		}
		if !p.inNetNS(proc) {
			continue // another node's, on the same machine
		}
		if args != nil {
			cmdline, err := proc.CmdLine()
			if err != nil || !endsWith(cmdline, args) {
				continue
			}
		}
		out = append(out, Process{PID: stat.PID, StartTick: stat.Starttime})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StartTick < out[j].StartTick })
	return out, nil
}

// inNetNS reports whether proc runs in the network namespace p keeps (any, when NetNS is 0). A
// process whose namespace cannot be read is not kept: it ended, or it is a zombie, which has
// none and is no instance that runs.
func (p Processes) inNetNS(proc procfs.Proc) bool {
	if p.NetNS == 0 {
		return true
	}
	namespaces, err := proc.Namespaces()
	if err != nil {
		return false
	}
	net, ok := namespaces["net"]
	return ok && net.Inode == p.NetNS
}

func endsWith(cmdline, args []string) bool {
	if len(cmdline) < len(args) {
		return false
	}
	tail := cmdline[len(cmdline)-len(args):]
	for i := range args {
		if tail[i] != args[i] {
			return false
		}
	}
	return true
}

// Alive reports whether the process still runs (same PID, same start).
func (p Processes) Alive(proc Process) bool {
	pr, err := p.FS.Proc(proc.PID)
	if err != nil {
		return false
	}
	stat, err := pr.Stat()
	return err == nil && stat.Starttime == proc.StartTick
}

// StartedAt converts a start tick to wall-clock time through btime, for display only.
func (p Processes) StartedAt(proc Process) (time.Time, error) {
	stat, err := p.FS.Stat()
	if err != nil {
		return time.Time{}, err
	}
	const userHZ = 100 // USER_HZ, the unit of /proc/<pid>/stat's start time on Linux
	return time.Unix(int64(stat.BootTime), 0).Add(time.Duration(proc.StartTick) * time.Second / userHZ), nil
}

// WaitForNew waits until a process named comm runs that is not among before (and, if args is not
// nil, whose command line ends with args: the flags of the new manifest), and returns it.
func (p Processes) WaitForNew(ctx context.Context, comm string, args []string, before []Process, interval time.Duration) (Process, error) {
	old := map[Process]bool{}
	for _, proc := range before {
		old[proc] = true
	}
	for {
		now, err := p.named(comm, args)
		for i := len(now) - 1; i >= 0 && err == nil; i-- {
			if !old[now[i]] {
				return now[i], nil
			}
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return Process{}, fmt.Errorf("no new %s process: %v", comm, err)
			}
			if len(now) == 0 && args != nil {
				return Process{}, fmt.Errorf("no %s process runs with the new manifest's flags", comm)
			}
			if len(now) == 0 {
				return Process{}, fmt.Errorf("no %s process running", comm)
			}
			return Process{}, fmt.Errorf("no new %s process: the kubelet has not restarted it (still pid %d)", comm, now[len(now)-1].PID)
		case <-time.After(interval):
		}
	}
}

// WaitGone waits until none of procs runs any more.
func (p Processes) WaitGone(ctx context.Context, procs []Process, interval time.Duration) error {
	for {
		alive := -1
		for i, proc := range procs {
			if p.Alive(proc) {
				alive = i
			}
		}
		if alive < 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the old process (pid %d) still runs", procs[alive].PID)
		case <-time.After(interval):
		}
	}
}
