package harness

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// killedTestEnv makes the test binary, run again by TestControlPlaneDiesWithAKilledTest, start a
// control plane, say so, and wait to be killed.
const killedTestEnv = "HARNESS_KILLED_TEST"

// TestControlPlaneDiesWithAKilledTest: a test process killed halfway (a timeout, ^C, CI's time
// limit) takes the etcd and kube-apiserver it started with it.
func TestControlPlaneDiesWithAKilledTest(t *testing.T) {
	if os.Getenv(killedTestEnv) != "" {
		StartControlPlane(t)
		fmt.Println("control plane up")
		time.Sleep(time.Hour)
		return
	}
	// What the child needs, checked here: a child that skips would look like one that failed.
	Binary(t, "stock", "kube-apiserver")
	Binary(t, "stock", "etcd")
	Tool(t, "setpriv", "util-linux")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(self, "-test.run=^TestControlPlaneDiesWithAKilledTest$", "-test.v")
	// envtest's directories go to a TMPDIR of this test's, which a killed test cannot clean.
	child.Env = append(os.Environ(), killedTestEnv+"=1", "TMPDIR="+t.TempDir())
	child.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill() //nolint:errcheck // a second kill of a killed process
	lines := bufio.NewScanner(stdout)
	up := false
	for !up && lines.Scan() {
		up = strings.Contains(lines.Text(), "control plane up")
	}
	if !up {
		t.Fatalf("the test process did not start its control plane")
	}
	started := children(t, child.Process.Pid)
	if len(started) < 2 {
		t.Fatalf("the test process runs %d processes (%v), want etcd and kube-apiserver", len(started), started)
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	var alive []string
	err = wait.PollImmediate(100*time.Millisecond, 10*time.Second, func() (bool, error) {
		alive = nil
		for pid, name := range started {
			if syscall.Kill(pid, 0) == nil && !zombie(pid) {
				alive = append(alive, fmt.Sprintf("%s (pid %d)", name, pid))
			}
		}
		return len(alive) == 0, nil
	})
	if err != nil {
		for pid := range started {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Fatalf("10 s after its test process was killed, %s still ran", strings.Join(alive, ", "))
	}
}

// children maps the pids of a process's children to their names.
func children(t *testing.T, parent int) map[int]string {
	t.Helper()
	found := map[int]string{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", entry.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read from its closing parenthesis.
		text := string(stat)
		end := strings.LastIndexByte(text, ')')
		fields := strings.Fields(text[end+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(parent) {
			found[pid] = text[strings.IndexByte(text, '(')+1 : end]
		}
	}
	return found
}

// zombie reports whether pid has exited and waits for its parent to reap it.
func zombie(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	text := string(stat)
	fields := strings.Fields(text[strings.LastIndexByte(text, ')')+1:])
	return len(fields) > 0 && fields[0] == "Z"
}
