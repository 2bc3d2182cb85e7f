package main

// Process-level tests: the cpswap binary as an operator runs it, against kubeadm's manifests, a
// fake apiserver serving the leader Lease, a health endpoint, and a fake component process.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/idc-lts/kube-1.17/test/harness"
)

const image = "registry.example.com/k8s/kube-controller-manager:v1.17.3-idc.1"

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// cpswapBinary builds this command once per test run.
func cpswapBinary(t *testing.T) string {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "cpswap-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "cpswap")
		out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binary != "" {
		os.RemoveAll(filepath.Dir(binary))
	}
	os.Exit(code)
}

// env is one master: manifests, backups, a fake apiserver and health endpoint.
type env struct {
	manifest, backups, kubeconfig, health string
	mu                                    sync.Mutex
	holder                                string
}

func newEnv(t *testing.T) *env {
	dir := harness.KubeadmManifests(t)
	e := &env{manifest: filepath.Join(dir, "kube-controller-manager.yaml"), backups: filepath.Join(filepath.Dir(dir), "backups"), holder: "master-1_old"}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		holder := e.holder
		e.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(&coordinationv1.Lease{
			TypeMeta:   metav1.TypeMeta{Kind: "Lease", APIVersion: "coordination.k8s.io/v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "kube-controller-manager", Namespace: "kube-system"},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &metav1.MicroTime{Time: time.Now()}},
		})
	}))
	t.Cleanup(api.Close)
	health := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(health.Close)
	e.health = health.URL + "/healthz"
	e.kubeconfig = filepath.Join(t.TempDir(), "admin.conf")
	config := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: %s\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: t\n", api.URL)
	if err := os.WriteFile(e.kubeconfig, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

// applyArgs verifies against a process named process.
func (e *env) applyArgs(process string, extra ...string) []string {
	return append([]string{"apply", "--manifest", e.manifest, "--image", image, "--backup-dir", e.backups,
		"--kubeconfig", e.kubeconfig, "--health-url", e.health, "--process", process, "--hostname", "master-1",
		"--timeout", "60s", "--soak", "1s", "--check-cmdline=false"}, extra...)
}

type result struct {
	code           int
	stdout, stderr string
}

func runCpswap(t *testing.T, args ...string) result {
	t.Helper()
	cmd := exec.Command(cpswapBinary(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, stdout.String(), stderr.String()}
}

// started is a cpswap running in the background.
type started struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{}
}

func start(t *testing.T, args ...string) *started { return startIn(t, "", args...) }

// startIn starts cpswap in the working directory dir ("" for the test's).
func startIn(t *testing.T, dir string, args ...string) *started {
	s := &started{cmd: exec.Command(cpswapBinary(t), args...), done: make(chan struct{})}
	s.cmd.Dir, s.cmd.Stdout, s.cmd.Stderr = dir, &s.stdout, &s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() { s.cmd.Process.Kill(); <-s.done })
	return s
}

func (s *started) wait(t *testing.T) result {
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("cpswap did not end; stderr:\n%s", s.stderr.String())
	}
	return result{s.cmd.ProcessState.ExitCode(), s.stdout.String(), s.stderr.String()}
}

// waitForJournal waits until the apply has changed the manifest and is verifying.
func (e *env) waitForJournal(t *testing.T, s *started) {
	journal := filepath.Join(e.backups, "kube-controller-manager.yaml.journal")
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(journal); err == nil {
			if data, _ := os.ReadFile(e.manifest); bytes.Contains(data, []byte(image)) {
				return
			}
		}
	}
	t.Fatalf("the apply never started verifying; stderr:\n%s", s.stderr.String())
}

func read(t *testing.T, path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestHelpAndUsage: help as kubeadm and kubectl give it (exit 0); a wrong command line prints
// usage and exits 2, with nothing changed.
func TestHelpAndUsage(t *testing.T) {
	e := newEnv(t)
	original := read(t, e.manifest)
	tests := []struct {
		args     []string
		code     int
		contains string
	}{
		{nil, 0, "Available Commands:"},
		{[]string{"help"}, 0, "Available Commands:"},
		{[]string{"--help"}, 0, "Available Commands:"},
		{[]string{"plan", "--help"}, 0, "cpswap plan --manifest FILE"},
		{[]string{"apply", "-h"}, 0, "--timeout duration"},
		{[]string{"help", "rollback"}, 0, "--to string"},
		{[]string{"bogus"}, 2, `unknown command "bogus"`},
		{[]string{"plan", "--bogus"}, 2, "unknown flag: --bogus"},
		{[]string{"plan", "--image", image}, 2, `required flag(s) "manifest" not set`},
		// A stray word (a variable that held two) must not silently drop the flags after it.
		{[]string{"plan", "--manifest", e.manifest, "--image", image, "stray", "--profile", "leases"}, 2, `unknown command "stray"`},
		// An empty --image "$VAR".
		{[]string{"apply", "--manifest", e.manifest, "--image", "", "--profile", "leases", "--backup-dir", e.backups}, 2, "--image is empty"},
		// An unset variable and no quotes: --image takes the next word as its value.
		{[]string{"apply", "--manifest", e.manifest, "--image", "--profile", "leases", "--backup-dir", e.backups}, 2, `unknown command "leases"`},
		{[]string{"apply", "--manifest", e.manifest, "--image", "--profile=leases", "--backup-dir", e.backups}, 1, "invalid reference format"},
		{[]string{"apply", "--manifest", e.manifest, "--image", image, "--timeout", "0s", "--soak", "0s", "--backup-dir", e.backups}, 2, "--timeout (0s) must be longer than --soak"},
		// A timeout just above the soak could never verify.
		{[]string{"apply", "--manifest", e.manifest, "--image", image, "--timeout", "40s", "--soak", "30s", "--backup-dir", e.backups}, 2, "--timeout (40s) must be longer than --soak (30s) by 30s at least"},
		{[]string{"rollback", "--manifest", e.manifest, "--to", "yesterday", "--backup-dir", e.backups}, 2, `--to takes only "original"`},
		{[]string{"diagnose", "--help"}, 0, "5 exposed (the conditions for an incident are present); 6 observed"},
		{[]string{"diagnose", "--window", "1s"}, 2, "--window 1s: must be between 10s and 30m0s"},
		{[]string{"diagnose", "--qps", "100"}, 2, "--qps 100: must be above 0 and at most 20"},
		{[]string{"diagnose", "--burst", "0"}, 2, "--burst 0: must be between 1 and 40"},
		{[]string{"diagnose", "--output", "yaml"}, 2, `--output "yaml": must be text or json`},
		{[]string{"diagnose", "--metrics", "kubelet=http://127.0.0.1:10255/metrics"}, 2, `--metrics "kubelet=http://127.0.0.1:10255/metrics": want COMPONENT=URL, COMPONENT one of kube-apiserver, kube-controller-manager, kube-scheduler`},
		{[]string{"diagnose", "--metrics", "kube-scheduler=127.0.0.1:10251"}, 2, `is not an http(s) URL`},
		{[]string{"diagnose", "--metrics", "kube-scheduler=http://a/metrics", "--metrics", "kube-scheduler=http://b/metrics"}, 2, "kube-scheduler given twice"},
		{[]string{"diagnose", "--kubeconfig", filepath.Join(e.backups, "no-such-kubeconfig")}, 1, "cpswap diagnose: kubeconfig: stat"},
	}
	for _, tc := range tests {
		r := runCpswap(t, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stdout+r.stderr, tc.contains) {
			t.Errorf("cpswap %q: exit %d, want %d with %q; output:\n%s%s", tc.args, r.code, tc.code, tc.contains, r.stdout, r.stderr)
		}
		if tc.code == 2 && !strings.Contains(r.stderr, "Usage:") {
			t.Errorf("cpswap %q: no usage printed", tc.args)
		}
	}
	if !bytes.Equal(read(t, e.manifest), original) {
		t.Error("the manifest changed")
	}
}

// TestSignalsDuringVerificationRollBack: SIGINT, SIGTERM, SIGHUP and SIGQUIT (Ctrl-\\, which Go
// would otherwise answer with a stack dump and exit 2, the manifest unverified) during an apply
// restore the manifest, say so, and exit 3. A second apply meanwhile fails at once naming the
// first's PID.
func TestSignalsDuringVerificationRollBack(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT} {
		t.Run(sig.String(), func(t *testing.T) {
			e := newEnv(t)
			original := read(t, e.manifest)
			first := start(t, e.applyArgs("cpswap-test-none")...)
			e.waitForJournal(t, first)

			second := runCpswap(t, e.applyArgs("cpswap-test-none")...)
			if want := fmt.Sprintf("another cpswap (pid %d) is working on", first.cmd.Process.Pid); second.code != 1 || !strings.Contains(second.stderr, want) {
				t.Errorf("second apply: exit %d, %s; want exit 1 naming pid %d", second.code, second.stderr, first.cmd.Process.Pid)
			}

			first.cmd.Process.Signal(sig)
			r := first.wait(t)
			if r.code != 3 || !strings.Contains(r.stderr, "interrupted (received "+sig.String()+"); rolled back") {
				t.Errorf("after %v: exit %d, stderr:\n%s", sig, r.code, r.stderr)
			}
			if !bytes.Equal(read(t, e.manifest), original) {
				t.Error("the manifest was not restored")
			}
			if h := runCpswap(t, "history", "--manifest", e.manifest, "--backup-dir", e.backups); !strings.Contains(h.stdout, "no apply") {
				t.Errorf("an interrupted apply entered the history:\n%s", h.stdout)
			}
		})
	}
}

// TestApplyUnderNohupIgnoresHangup: started with SIGHUP ignored (nohup, or a shell's trap ""
// HUP), an apply keeps verifying when the terminal hangs up; SIGTERM still rolls it back.
func TestApplyUnderNohupIgnoresHangup(t *testing.T) {
	e := newEnv(t)
	original := read(t, e.manifest)
	// The shell ignores SIGHUP and execs cpswap, which inherits the ignored disposition.
	s := &started{cmd: exec.Command("sh", append([]string{"-c", `trap "" HUP; exec "$0" "$@"`, cpswapBinary(t)}, e.applyArgs("cpswap-test-none")...)...), done: make(chan struct{})}
	s.cmd.Stdout, s.cmd.Stderr = &s.stdout, &s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() { s.cmd.Process.Kill(); <-s.done })
	e.waitForJournal(t, s)

	s.cmd.Process.Signal(syscall.SIGHUP)
	select {
	case <-s.done:
		t.Fatalf("a hangup under nohup ended the apply: exit %d\n%s", s.cmd.ProcessState.ExitCode(), s.stderr.String())
	case <-time.After(2 * time.Second):
	}
	if data := read(t, e.manifest); !bytes.Contains(data, []byte(image)) {
		t.Fatal("a hangup under nohup rolled the manifest back")
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	r := s.wait(t)
	if r.code != 3 || !strings.Contains(r.stderr, "interrupted (received terminated); rolled back") || !bytes.Equal(read(t, e.manifest), original) {
		t.Errorf("SIGTERM after the hangup: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

// TestKilledApplyIsReportedByEveryVerb: after a SIGKILL mid-apply, status, plan and history
// report the unfinished apply and what rollback would restore, apply refuses, rollback restores.
func TestKilledApplyIsReportedByEveryVerb(t *testing.T) {
	e := newEnv(t)
	original := read(t, e.manifest)
	first := start(t, e.applyArgs("cpswap-test-none")...)
	e.waitForJournal(t, first)
	first.cmd.Process.Kill()
	first.wait(t)

	status := runCpswap(t, "status", "--manifest", e.manifest, "--backup-dir", e.backups)
	if !strings.Contains(status.stdout, "UNFINISHED: an apply started") || !strings.Contains(status.stdout, "the new, unverified manifest") {
		t.Errorf("status:\n%s%s", status.stdout, status.stderr)
	}
	plan := runCpswap(t, "plan", "--manifest", e.manifest, "--profile", "leases", "--backup-dir", e.backups)
	history := runCpswap(t, "history", "--manifest", e.manifest, "--backup-dir", e.backups)
	for name, r := range map[string]result{"plan": plan, "history": history} {
		if !strings.Contains(r.stderr, "`cpswap rollback` would restore") {
			t.Errorf("%s does not report the unfinished apply:\n%s", name, r.stderr)
		}
	}
	again := runCpswap(t, e.applyArgs("cpswap-test-none")...)
	if again.code != 1 || !strings.Contains(again.stderr, "did not finish") {
		t.Errorf("apply over an unfinished one: exit %d\n%s", again.code, again.stderr)
	}
	rb := runCpswap(t, "rollback", "--manifest", e.manifest, "--backup-dir", e.backups)
	if rb.code != 0 || !strings.Contains(rb.stdout, "as it was before the unfinished apply") || !bytes.Equal(read(t, e.manifest), original) {
		t.Errorf("rollback: exit %d\n%s%s", rb.code, rb.stdout, rb.stderr)
	}
}

// TestApplyStatusHistoryRollback: a verified apply through the binary (the kubelet's restart is a
// new process started by the test once the manifest changed), then status, history and rollback.
func TestApplyStatusHistoryRollback(t *testing.T) {
	e := newEnv(t)
	original := read(t, e.manifest)
	// A process named like the component, as a fresh fork and exec of a copy of sleep.
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(t.TempDir(), "cpswap-fake-kcm")
	if err := os.WriteFile(fake, read(t, sleep), 0o755); err != nil {
		t.Fatal(err)
	}
	// Run from the backups' parent with a relative --backup-dir: the undo hint must still work
	// from anywhere.
	args := e.applyArgs("cpswap-fake-kcm", "--profile", "leases")
	for i := range args {
		if args[i] == e.backups {
			args[i] = filepath.Base(e.backups)
		}
	}
	apply := startIn(t, filepath.Dir(e.backups), args...)
	e.waitForJournal(t, apply)
	component := exec.Command(fake, "60")
	if err := component.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { component.Process.Kill(); component.Wait() })
	e.mu.Lock()
	e.holder = "master-1_new"
	e.mu.Unlock()
	r := apply.wait(t)
	if r.code != 0 || !strings.Contains(r.stdout, "applied and verified") || !strings.Contains(r.stdout, "leads: Lease kube-system/kube-controller-manager held and renewed by master-1_new") {
		t.Fatalf("apply: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if want := "(undo with: cpswap rollback --manifest " + e.manifest + " --backup-dir " + e.backups + ")"; !strings.Contains(r.stdout, want) {
		t.Errorf("the undo hint is not %q:\n%s", want, r.stdout)
	}
	if !strings.Contains(r.stdout, "+    - --leader-elect-resource-lock=leases") {
		t.Errorf("apply did not show its plan first:\n%s", r.stdout)
	}
	status := runCpswap(t, "status", "--manifest", e.manifest, "--backup-dir", e.backups, "--process", "cpswap-fake-kcm")
	for _, want := range []string{"image:     " + image, "lock:      leases", fmt.Sprintf("process:   pid %d", component.Process.Pid), "rollback:  would undo the apply of"} {
		if !strings.Contains(status.stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, status.stdout)
		}
	}
	history := runCpswap(t, "history", "--manifest", e.manifest, "--backup-dir", e.backups)
	if !strings.Contains(history.stdout, "1  ") || !strings.Contains(history.stdout, "--leader-elect-resource-lock=leases") || !strings.Contains(history.stdout, "verified: new cpswap-fake-kcm") {
		t.Errorf("history:\n%s", history.stdout)
	}
	noop := runCpswap(t, e.applyArgs("cpswap-fake-kcm", "--profile", "leases")...)
	if noop.code != 0 || !strings.Contains(noop.stdout, "no change") {
		t.Errorf("no-op apply: exit %d\n%s%s", noop.code, noop.stdout, noop.stderr)
	}
	rb := runCpswap(t, "rollback", "--manifest", e.manifest, "--backup-dir", e.backups)
	if rb.code != 0 || !bytes.Equal(read(t, e.manifest), original) || !strings.Contains(rb.stdout, "before the first recorded apply") {
		t.Errorf("rollback: exit %d\n%s%s", rb.code, rb.stdout, rb.stderr)
	}
}
