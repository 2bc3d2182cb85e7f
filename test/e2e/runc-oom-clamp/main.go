// Command runc-oom-clamp is the default OCI runtime of the end-to-end test's private dockerd, and
// nothing else's: it raises a negative process.oomScoreAdj in the bundle's config.json to 0, then
// execs runc with the same arguments.
//
// Why: the kubelet asks for oom_score_adj -998 for every pod sandbox, and the machines this test
// runs on forbid negative values (no CAP_SYS_RESOURCE), so runc fails with "can't get final
// child's PID from pipe: EOF". A property of the test environment, not of the product: a real
// master applies the kubelet's value unchanged.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
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

// clamp rewrites config.json only when its oomScoreAdj is negative, keeping every other field.
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
	var adj int
	if raw, ok := process["oomScoreAdj"]; !ok || json.Unmarshal(raw, &adj) != nil || adj >= 0 {
		return nil
	}
	process["oomScoreAdj"] = json.RawMessage("0")
	if spec["process"], err = json.Marshal(process); err != nil {
		return err
	}
	if data, err = json.Marshal(spec); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}
