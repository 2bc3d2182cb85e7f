// Command runc-oom-clamp is the default OCI runtime of the end-to-end tests' private dockerd, and
// nothing else's: it raises a negative process.oomScoreAdj in the bundle's config.json to 0, and
// drops from process.capabilities those this machine cannot grant (not in its bounding set), then
// execs runc with the same arguments.
//
// Why: the machines these tests run on have no CAP_SYS_RESOURCE. The kubelet asks for
// oom_score_adj -998 for every pod sandbox, which needs it (runc fails with "can't get final
// child's PID from pipe: EOF"), and a privileged container (kube-proxy) is given every capability
// Docker knows, which runc cannot apply ("unable to apply caps: operation not permitted"). A
// property of the test environment, not of the product: a real master applies both unchanged.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// runcPath is the real runtime; RUNC overrides it.
const runcPath = "/usr/sbin/runc"

func main() {
	if bundle := bundleDir(os.Args[1:]); bundle != "" {
		if err := clamp(filepath.Join(bundle, "config.json")); err != nil {
			fmt.Fprintf(os.Stderr, "runc-oom-clamp: %v\n", err)
			os.Exit(1)
		}
	}
	runc := runcPath
	if r := os.Getenv("RUNC"); r != "" {
		runc = r
	}
	if path, err := exec.LookPath(runc); err == nil {
		runc = path
	}
	err := syscall.Exec(runc, append([]string{runc}, os.Args[1:]...), os.Environ())
	fmt.Fprintf(os.Stderr, "runc-oom-clamp: exec %s: %v\n", runc, err)
	os.Exit(1)
}

// bundleDir returns the --bundle (or -b) argument of a `runc create` or `runc run`, or "".
func bundleDir(args []string) string {
	for i, arg := range args {
		switch {
		case (arg == "--bundle" || arg == "-b") && i+1 < len(args):
			return args[i+1]
		case len(arg) > len("--bundle=") && arg[:len("--bundle=")] == "--bundle=":
			return arg[len("--bundle="):]
		}
	}
	return ""
}

// clamp rewrites config.json only when its oomScoreAdj is negative or it asks for a capability
// the machine cannot grant, keeping every other field.
func clamp(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var spec map[string]json.RawMessage
	if err := json.Unmarshal(data, &spec); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	var process map[string]json.RawMessage
	if err := json.Unmarshal(spec["process"], &process); err != nil || process == nil {
		return nil
	}
	changed := false
	var adj int
	if raw, ok := process["oomScoreAdj"]; ok && json.Unmarshal(raw, &adj) == nil && adj < 0 {
		process["oomScoreAdj"] = json.RawMessage("0")
		changed = true
	}
	if raw, ok := process["capabilities"]; ok {
		bounding, err := boundingSet()
		if err != nil {
			return err
		}
		caps, dropped, err := grantable(raw, bounding)
		if err != nil {
			return fmt.Errorf("%s: process.capabilities: %v", path, err)
		}
		if dropped {
			process["capabilities"] = caps
			changed = true
		}
	}
	if !changed {
		return nil
	}
	if spec["process"], err = json.Marshal(process); err != nil {
		return err
	}
	if data, err = json.Marshal(spec); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// grantable removes from each of the spec's capability sets the capabilities outside bounding
// (a CapBnd mask), and says whether it removed any.
func grantable(raw json.RawMessage, bounding uint64) (json.RawMessage, bool, error) {
	var sets map[string][]string
	if err := json.Unmarshal(raw, &sets); err != nil {
		return nil, false, err
	}
	dropped := false
	for name, set := range sets {
		kept := set[:0:0]
		for _, c := range set {
			if number, known := capabilityNumbers[c]; known && bounding&(1<<number) == 0 {
				dropped = true
				continue
			}
			kept = append(kept, c)
		}
		sets[name] = kept
	}
	out, err := json.Marshal(sets)
	return out, dropped, err
}

// boundingSet is this process's CapBnd.
func boundingSet() (uint64, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if hex, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			return strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		}
	}
	return 0, fmt.Errorf("no CapBnd in /proc/self/status")
}

// capabilityNumbers are the kernel's numbers of the capabilities an OCI spec names.
var capabilityNumbers = map[string]uint{
	"CAP_CHOWN": unix.CAP_CHOWN, "CAP_DAC_OVERRIDE": unix.CAP_DAC_OVERRIDE, "CAP_DAC_READ_SEARCH": unix.CAP_DAC_READ_SEARCH,
	"CAP_FOWNER": unix.CAP_FOWNER, "CAP_FSETID": unix.CAP_FSETID, "CAP_KILL": unix.CAP_KILL, "CAP_SETGID": unix.CAP_SETGID,
	"CAP_SETUID": unix.CAP_SETUID, "CAP_SETPCAP": unix.CAP_SETPCAP, "CAP_LINUX_IMMUTABLE": unix.CAP_LINUX_IMMUTABLE,
	"CAP_NET_BIND_SERVICE": unix.CAP_NET_BIND_SERVICE, "CAP_NET_BROADCAST": unix.CAP_NET_BROADCAST, "CAP_NET_ADMIN": unix.CAP_NET_ADMIN,
	"CAP_NET_RAW": unix.CAP_NET_RAW, "CAP_IPC_LOCK": unix.CAP_IPC_LOCK, "CAP_IPC_OWNER": unix.CAP_IPC_OWNER,
	"CAP_SYS_MODULE": unix.CAP_SYS_MODULE, "CAP_SYS_RAWIO": unix.CAP_SYS_RAWIO, "CAP_SYS_CHROOT": unix.CAP_SYS_CHROOT,
	"CAP_SYS_PTRACE": unix.CAP_SYS_PTRACE, "CAP_SYS_PACCT": unix.CAP_SYS_PACCT, "CAP_SYS_ADMIN": unix.CAP_SYS_ADMIN,
	"CAP_SYS_BOOT": unix.CAP_SYS_BOOT, "CAP_SYS_NICE": unix.CAP_SYS_NICE, "CAP_SYS_RESOURCE": unix.CAP_SYS_RESOURCE,
	"CAP_SYS_TIME": unix.CAP_SYS_TIME, "CAP_SYS_TTY_CONFIG": unix.CAP_SYS_TTY_CONFIG, "CAP_MKNOD": unix.CAP_MKNOD,
	"CAP_LEASE": unix.CAP_LEASE, "CAP_AUDIT_WRITE": unix.CAP_AUDIT_WRITE, "CAP_AUDIT_CONTROL": unix.CAP_AUDIT_CONTROL,
	"CAP_SETFCAP": unix.CAP_SETFCAP, "CAP_MAC_OVERRIDE": unix.CAP_MAC_OVERRIDE, "CAP_MAC_ADMIN": unix.CAP_MAC_ADMIN,
	"CAP_SYSLOG": unix.CAP_SYSLOG, "CAP_WAKE_ALARM": unix.CAP_WAKE_ALARM, "CAP_BLOCK_SUSPEND": unix.CAP_BLOCK_SUSPEND,
	"CAP_AUDIT_READ": unix.CAP_AUDIT_READ, "CAP_PERFMON": unix.CAP_PERFMON, "CAP_BPF": unix.CAP_BPF,
	"CAP_CHECKPOINT_RESTORE": unix.CAP_CHECKPOINT_RESTORE,
}
