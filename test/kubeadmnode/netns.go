package kubeadmnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// NetNS is a network namespace of a suite's own, bound to a file so that it outlives the
// processes in it and a killed run's successor finds it. The node's address sits on a veth whose
// other end stays down and it has no default route: a packet for anything but an address inside
// the namespace has nowhere to go, so none can leave the machine (docs/conformance-plan.md).
type NetNS struct {
	// Path is the file the namespace is bound to.
	Path string
}

// Link is the node's end of the veth that leads nowhere.
const Link = "node0"

// CreateNetNS creates the namespace at path with the node's address nodeCIDR on Link, loopback
// up, and routes to each of routes (the Service CIDR: a connection to a ClusterIP needs a route
// before kube-proxy's rules rewrite it) through Link.
func CreateNetNS(path, nodeCIDR string, routes ...string) (*NetNS, error) {
	steps := [][]string{
		{"ip", "link", "add", Link, "type", "veth", "peer", "name", Link + "-end"},
		{"ip", "addr", "add", nodeCIDR, "dev", Link},
		{"ip", "link", "set", Link, "up"},
	}
	for _, route := range routes {
		steps = append(steps, []string{"ip", "route", "add", route, "dev", Link})
	}
	return createNetNS(path, steps)
}

// createNetNS creates a namespace bound to path with loopback up, then runs steps in it; on a
// failure it removes the namespace again.
func createNetNS(path string, steps [][]string) (*NetNS, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return nil, fmt.Errorf("network namespace file: %v", err)
	}
	f.Close()
	ns := &NetNS{Path: path}
	if out, err := exec.Command("unshare", "--net="+path, "true").CombinedOutput(); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("unshare --net=%s: %v: %s", path, err, out)
	}
	steps = append([][]string{{"ip", "link", "set", "lo", "up"}}, steps...)
	for _, step := range steps {
		if out, err := ns.Command(step[0], step[1:]...).CombinedOutput(); err != nil {
			removeErr := ns.Remove()
			return nil, fmt.Errorf("in %s: %s: %v: %s (removing it: %v)", path, strings.Join(step, " "), err, out, removeErr)
		}
	}
	return ns, nil
}

// Bridge is the switch's bridge, which every plugged-in node's link is a port of.
const Bridge = "br0"

// CreateSwitch creates a namespace at path that holds only a bridge: the segment several nodes'
// namespaces share (PlugInto). It has no address and no route, and leads nowhere else.
func CreateSwitch(path string) (*NetNS, error) {
	return createNetNS(path, [][]string{
		{"ip", "link", "add", Bridge, "type", "bridge"},
		{"ip", "link", "set", Bridge, "up"},
	})
}

// PlugInto moves the other end of the namespace's Link into the switch sw, named port there (at
// most 15 characters, one per node, not Link: the move renames it in the node's namespace first), and makes it a port of sw's bridge: the node then reaches
// every other node plugged into sw, and still nothing beyond.
func (ns *NetNS) PlugInto(sw *NetNS, port string) error {
	steps := []struct {
		in   *NetNS
		args []string
	}{
		{ns, []string{"ip", "link", "set", Link + "-end", "name", port}},
		// ip takes a namespace's file by its path (a name with a slash).
		{ns, []string{"ip", "link", "set", port, "netns", sw.Path}},
		{sw, []string{"ip", "link", "set", port, "master", Bridge}},
		{sw, []string{"ip", "link", "set", port, "up"}},
	}
	for _, step := range steps {
		if out, err := step.in.Command(step.args[0], step.args[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("in %s: %s: %v: %s", step.in.Path, strings.Join(step.args, " "), err, out)
		}
	}
	return nil
}

// Route routes dst (another node's pod addresses) via gateway (that node's address) in the
// namespace.
func (ns *NetNS) Route(dst, gateway string) error {
	if out, err := ns.Command("ip", "route", "add", dst, "via", gateway, "dev", Link).CombinedOutput(); err != nil {
		return fmt.Errorf("in %s: ip route add %s via %s: %v: %s", ns.Path, dst, gateway, err, out)
	}
	return nil
}

// NodeNet is one node's place in a network of nodes (CreateNetwork): the file its namespace is
// bound to, its address and the pods' CIDR it routes.
type NodeNet struct {
	File, IP, PodNet string
}

// CreateNetwork creates the switch at switchFile and each node's namespace (CreateNetNS with its
// address in a /24 and routes), plugged into the switch; every node routes each other node's
// pod CIDR via that node's address. A node reaches the others and their pods, and nothing beyond;
// a third or fourth node is one more NodeNet.
func CreateNetwork(switchFile string, nodes []NodeNet, routes ...string) error {
	sw, err := CreateSwitch(switchFile)
	if err != nil {
		return err
	}
	for i, node := range nodes {
		ns, err := CreateNetNS(node.File, node.IP+"/24", routes...)
		if err != nil {
			return err
		}
		if err := ns.PlugInto(sw, fmt.Sprintf("port%d", i)); err != nil {
			return err
		}
		for _, other := range nodes {
			if other != node {
				if err := ns.Route(other.PodNet, other.IP); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// RemoveNetwork removes what CreateNetwork made (what ran in the namespaces is the nodes'
// teardowns' to kill), whatever part of it exists.
func RemoveNetwork(switchFile string, nodes []NodeNet) error {
	errs := []error{(&NetNS{Path: switchFile}).Remove()}
	for _, node := range nodes {
		errs = append(errs, (&NetNS{Path: node.File}).Remove())
	}
	return errors.Join(errs...)
}

// Command runs name in the namespace. nsenter with --net alone executes it in place, so it is the
// process the caller started (its parent-death signal and its pid hold).
func (ns *NetNS) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=" + ns.Path, "--", name}, args...)...)
}

// Remove unbinds the namespace and removes its file; the namespace, its links, routes and
// firewall rules go with its last process.
func (ns *NetNS) Remove() error {
	if err := unix.Unmount(ns.Path, unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
		return fmt.Errorf("unmounting %s: %v", ns.Path, err)
	}
	if err := os.Remove(ns.Path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// Do runs fn on an OS thread moved into the namespace, and moves the thread back. Sockets fn opens
// stay in the namespace: a client dialled there reaches the node's addresses from this process,
// which itself stays outside. fn runs on a goroutine of its own and must not call t.Fatal; a thread
// that cannot be moved back, or whose fn did not return, is never used again (it stays locked,
// and Go ends it with its goroutine).
func (ns *NetNS) Do(fn func() error) error {
	errs := make(chan error, 1)
	go func() {
		returned := false
		defer func() {
			if r := recover(); r != nil {
				errs <- fmt.Errorf("in %s: panic: %v", ns.Path, r)
			} else if !returned {
				errs <- fmt.Errorf("in %s: the function exited its goroutine", ns.Path)
			}
		}()
		runtime.LockOSThread()
		home, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			returned = true
			errs <- err
			return
		}
		defer home.Close()
		target, err := os.Open(ns.Path)
		if err != nil {
			runtime.UnlockOSThread()
			returned = true
			errs <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			returned = true
			errs <- fmt.Errorf("entering %s: %v", ns.Path, err)
			return
		}
		fnErr := fn()
		returned = true
		if err := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET); err != nil {
			errs <- fmt.Errorf("leaving %s: %v (after: %v)", ns.Path, err, fnErr)
			return
		}
		runtime.UnlockOSThread()
		errs <- fnErr
	}()
	return <-errs
}

// literalIP refuses an address whose host is a name: Go resolves names, and dials several
// addresses, on goroutines of their own, which would run outside the namespace.
func literalIP(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if net.ParseIP(host) == nil {
		return fmt.Errorf("%s: dial or listen in a namespace by IP address, not by name", addr)
	}
	return nil
}

// DialContext dials addr, an IP address and port, from inside the namespace: a rest.Config's
// Dial for a client of the node's apiserver.
func (ns *NetNS) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if err := literalIP(addr); err != nil {
		return nil, err
	}
	var conn net.Conn
	err := ns.Do(func() (err error) {
		conn, err = (&net.Dialer{}).DialContext(ctx, network, addr)
		return err
	})
	return conn, err
}

// Listen listens on addr, an IP address and port, inside the namespace.
func (ns *NetNS) Listen(network, addr string) (net.Listener, error) {
	if err := literalIP(addr); err != nil {
		return nil, err
	}
	var l net.Listener
	err := ns.Do(func() (err error) {
		l, err = net.Listen(network, addr)
		return err
	})
	return l, err
}

// HostNetwork is the calling namespace's links (without their counters) and routes, for a test to
// compare before and after: what a node must leave as it found.
func HostNetwork() (string, error) {
	var all []string
	for _, args := range [][]string{{"-o", "link", "show"}, {"route", "show", "table", "all"}} {
		out, err := exec.Command("ip", args...).Output()
		if err != nil {
			return "", fmt.Errorf("ip %s: %v", strings.Join(args, " "), err)
		}
		all = append(all, string(out))
	}
	return strings.Join(all, "\n"), nil
}

// Forward carries addr, a loopback address and port of the host (a test registry, say), into the
// namespace under the same address: a listener there whose every connection is spliced to the
// host's. Loopback to loopback only; it stops when stop is closed.
func (ns *NetNS) Forward(addr string, stop <-chan struct{}) error {
	if host, _, err := net.SplitHostPort(addr); err != nil || !net.ParseIP(host).IsLoopback() {
		return fmt.Errorf("forward %s: only a loopback address and port of the host is carried into a namespace", addr)
	}
	l, err := ns.Listen("tcp", addr)
	if err != nil {
		return err
	}
	go func() {
		<-stop
		l.Close()
	}()
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer in.Close()
				out, err := net.Dial("tcp", addr) // this goroutine's thread is the host's
				if err != nil {
					return
				}
				defer out.Close()
				done := make(chan struct{}, 2)
				go func() { _, _ = io.Copy(out, in); done <- struct{}{} }()
				go func() { _, _ = io.Copy(in, out); done <- struct{}{} }()
				<-done
			}()
		}
	}()
	return nil
}

// KillProcesses SIGKILLs every process in the namespace (what a killed run left running in it:
// ginkgo and its e2e.test nodes, a cpswap, a shim's children) and returns how many it killed. A
// namespace whose file is gone has none left to find.
func (ns *NetNS) KillProcesses() (int, error) {
	target, err := os.Stat(ns.Path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	killed := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		info, err := os.Stat(fmt.Sprintf("/proc/%d/ns/net", pid))
		if err != nil || !os.SameFile(info, target) {
			continue
		}
		if err := unix.Kill(pid, unix.SIGKILL); err == nil {
			killed++
		}
	}
	return killed, nil
}
