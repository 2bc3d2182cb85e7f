package cpswap

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/procfs"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// fakeProc is a proc filesystem the test controls; its btime can be anything.
type fakeProc struct {
	t     *testing.T
	root  string
	args  []string // the command line's flags of the processes run next
	netNS uint32   // the network namespace of the processes run next (0: none written)
}

func newFakeProc(t *testing.T, btime int64) *fakeProc {
	p := &fakeProc{t: t, root: t.TempDir()}
	write(t, filepath.Join(p.root, "stat"), []byte(fmt.Sprintf("cpu  1 2 3 4 5 6 7 8 9 10\nbtime %d\n", btime)))
	return p
}

// run adds a process (or replaces one with the same PID, as a reused PID).
func (p *fakeProc) run(pid int, comm string, startTick uint64) {
	dir := filepath.Join(p.root, fmt.Sprint(pid))
	os.MkdirAll(dir, 0o755)
	fields := make([]string, 49)
	for i := range fields {
		fields[i] = "0"
	}
	fields[0] = "S"
	fields[19] = fmt.Sprint(startTick) // field 22 of the line
	write(p.t, filepath.Join(dir, "stat"), []byte(fmt.Sprintf("%d (%s) %s\n", pid, comm, strings.Join(fields, " "))))
	write(p.t, filepath.Join(dir, "cmdline"), []byte(strings.Join(append([]string{"/usr/local/bin/" + comm}, p.args...), "\x00")+"\x00"))
	if p.netNS != 0 {
		os.MkdirAll(filepath.Join(dir, "ns"), 0o755)
		os.Remove(filepath.Join(dir, "ns", "net"))
		if err := os.Symlink(fmt.Sprintf("net:[%d]", p.netNS), filepath.Join(dir, "ns", "net")); err != nil {
			p.t.Fatal(err)
		}
	}
}

func (p *fakeProc) exit(pid int) { os.RemoveAll(filepath.Join(p.root, fmt.Sprint(pid))) }

func (p *fakeProc) processes() Processes {
	fs, err := procfs.NewFS(p.root)
	if err != nil {
		p.t.Fatal(err)
	}
	return Processes{FS: fs}
}

// TestRestartDetectionInOneClockDomain: a restart is a (PID, start tick) pair that did not run
// before, whatever /proc/stat's btime says (an NTP step or a VM pause moves wall-clock time away
// from it) and even when the kubelet's new process reuses the old PID.
func TestRestartDetectionInOneClockDomain(t *testing.T) {
	for _, skew := range []time.Duration{-24 * time.Hour, 0, 24 * time.Hour} {
		t.Run(fmt.Sprint("btime skewed by ", skew), func(t *testing.T) {
			fake := newFakeProc(t, time.Now().Add(skew).Unix())
			fake.run(100, "kube-controller", 5000)
			fake.run(200, "kube-scheduler", 6000)
			procs := fake.processes()
			before, err := procs.Named("kube-controller-manager")
			if err != nil || len(before) != 1 {
				t.Fatalf("before: %v %v", before, err)
			}

			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			if _, err := procs.WaitForNew(ctx, "kube-controller-manager", nil, before, 20*time.Millisecond); err == nil ||
				!strings.Contains(err.Error(), "has not restarted it (still pid 100)") {
				t.Errorf("the old process taken for a new one: %v", err)
			}

			fake.run(100, "kube-controller", 7000) // the same PID, started later
			ctx2, cancel2 := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel2()
			got, err := procs.WaitForNew(ctx2, "kube-controller-manager", nil, before, 20*time.Millisecond)
			if err != nil || got != (Process{PID: 100, StartTick: 7000}) {
				t.Errorf("restart with a reused PID: %+v %v", got, err)
			}
			if !procs.Alive(got) || procs.Alive(before[0]) {
				t.Error("Alive does not tell the old process from the new one")
			}
		})
	}
}

// TestOnlyThisNodesProcessesCount: three masters on one machine, each in a network namespace of its
// own, run the same components with the same flags; cpswap on one of them neither takes another
// master's restarted instance for its own new one nor waits for another master's to exit.
func TestOnlyThisNodesProcessesCount(t *testing.T) {
	const self, other = 4026532001, 4026532002
	fake := newFakeProc(t, time.Now().Unix())
	fake.netNS = self
	fake.run(100, "kube-controller", 5000)
	fake.netNS = other
	fake.run(200, "kube-controller", 5100)
	procs := fake.processes()
	procs.NetNS = self

	before, err := procs.Named("kube-controller-manager")
	if err != nil || len(before) != 1 || before[0].PID != 100 {
		t.Fatalf("before: %v %v, want this node's pid 100 alone", before, err)
	}
	fake.exit(200)
	fake.run(201, "kube-controller", 6000) // the other master's swap
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if got, err := procs.WaitForNew(ctx, "kube-controller-manager", nil, before, 20*time.Millisecond); err == nil {
		t.Errorf("another master's new instance (pid 201) taken for this one's: %+v", got)
	}

	fake.exit(100)
	fake.netNS = self
	fake.run(101, "kube-controller", 7000)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel2()
	if got, err := procs.WaitForNew(ctx2, "kube-controller-manager", nil, before, 20*time.Millisecond); err != nil || got.PID != 101 {
		t.Errorf("this master's new instance: %+v %v, want pid 101", got, err)
	}
	if err := procs.WaitGone(ctx2, before, 20*time.Millisecond); err != nil {
		t.Errorf("WaitGone: %v", err)
	}

	procs.NetNS = 0 // no namespace known: every process counts, as before
	if all, err := procs.Named("kube-controller-manager"); err != nil || len(all) != 2 {
		t.Errorf("without a namespace: %v %v, want both masters' processes", all, err)
	}
}

// fakeAPIServer serves one Lease, as the test sets it, to the verifier's REST client.
type fakeAPIServer struct {
	mu     sync.Mutex
	holder string
	renew  time.Time
	hang   bool
	server *httptest.Server
}

func newFakeAPIServer(t *testing.T) *fakeAPIServer {
	f := &fakeAPIServer{}
	release := make(chan struct{})
	f.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		hang, holder, renew := f.hang, f.holder, f.renew
		f.mu.Unlock()
		if hang {
			<-release
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if holder == "" {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
			return
		}
		json.NewEncoder(w).Encode(&coordinationv1.Lease{
			TypeMeta:   metav1.TypeMeta{Kind: "Lease", APIVersion: "coordination.k8s.io/v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "kube-controller-manager", Namespace: "kube-system"},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &metav1.MicroTime{Time: renew}},
		})
	}))
	t.Cleanup(func() { close(release); f.server.Close() })
	return f
}

func (f *fakeAPIServer) set(holder string, renew time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.holder, f.renew = holder, renew
}

func (f *fakeAPIServer) leases(t *testing.T) rest.Interface {
	client, err := kubernetes.NewForConfig(&rest.Config{Host: f.server.URL})
	if err != nil {
		t.Fatal(err)
	}
	return client.CoordinationV1().RESTClient()
}

// healthServer answers 200 until told otherwise.
func healthServer(t *testing.T) (url string, set func(int)) {
	var mu sync.Mutex
	code := http.StatusOK
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.WriteHeader(code)
	}))
	t.Cleanup(s.Close)
	return s.URL + "/healthz", func(c int) { mu.Lock(); code = c; mu.Unlock() }
}

// TestVerifierWantsTheNewInstanceAndASoak: the old instance renewing the Lease is not proof; a new
// identity of this host leads, another master's holder means this one stands by; a process that
// dies or a health check that fails during the soak fails verification.
func TestVerifierWantsTheNewInstanceAndASoak(t *testing.T) {
	tests := []struct {
		name string
		// during runs once the new process is up.
		during  func(api *fakeAPIServer, proc *fakeProc, health func(int))
		wantErr string
		wantOK  string
	}{
		{
			name:    "only the old instance of this master renews",
			during:  func(api *fakeAPIServer, _ *fakeProc, _ func(int)) { api.set("master-1_old", time.Now()) },
			wantErr: "still renewed by master-1_old, this master's old instance",
		},
		{
			name:   "the new instance of this master leads",
			during: func(api *fakeAPIServer, _ *fakeProc, _ func(int)) { api.set("master-1_new", time.Now()) },
			wantOK: "leads: Lease kube-system/kube-controller-manager held and renewed by master-1_new",
		},
		{
			name:   "another master leads",
			during: func(api *fakeAPIServer, _ *fakeProc, _ func(int)) { api.set("master-2_x", time.Now()) },
			wantOK: "stands by",
		},
		{
			name: "health fails during the soak",
			during: func(api *fakeAPIServer, _ *fakeProc, health func(int)) {
				api.set("master-1_new", time.Now())
				go func() { time.Sleep(150 * time.Millisecond); health(http.StatusInternalServerError) }()
			},
			wantErr: "during the 600ms soak: health",
		},
		{
			name: "the old process does not exit",
			during: func(api *fakeAPIServer, proc *fakeProc, _ func(int)) {
				api.set("master-1_new", time.Now())
				proc.run(100, "kube-controller", 5000)
			},
			wantErr: "the old process (pid 100) still runs",
		},
		{
			name: "a restart with the old flags is not the new manifest",
			during: func(api *fakeAPIServer, proc *fakeProc, _ func(int)) {
				api.set("master-1_new", time.Now())
				proc.exit(101)
				proc.args = []string{"--leader-elect=true"}
				proc.run(102, "kube-controller", 9100)
			},
			wantErr: "no kube-controller-manager process runs with the new manifest's flags",
		},
		{
			name: "no instance locks through a Lease",
			during: func(api *fakeAPIServer, _ *fakeProc, _ func(int)) {
				api.set("", time.Time{})
			},
			wantOK: "no Lease kube-system/kube-controller-manager (the masters lock elsewhere)",
		},
		{
			name: "the new process exits during the soak",
			during: func(api *fakeAPIServer, proc *fakeProc, _ func(int)) {
				api.set("master-1_new", time.Now())
				go func() { time.Sleep(150 * time.Millisecond); proc.exit(101) }()
			},
			wantErr: "exited during the 600ms soak",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPIServer(t)
			api.set("master-1_old", time.Now().Add(-time.Second))
			if strings.HasPrefix(tc.name, "no instance") {
				api.set("", time.Time{})
			}
			fake := newFakeProc(t, time.Now().Unix())
			fake.args = []string{"--leader-elect=true", "--leader-elect-resource-lock=leases"}
			fake.run(100, "kube-controller", 5000)
			url, health := healthServer(t)
			v := &ComponentVerifier{
				Procs: fake.processes(), Comm: "kube-controller-manager", Args: fake.args, HealthURL: url,
				Leases: api.leases(t), LeaseNamespace: "kube-system", LeaseName: "kube-controller-manager",
				Hostname: "master-1", Interval: 20 * time.Millisecond, Soak: 600 * time.Millisecond,
			}
			if err := v.Before(context.Background()); err != nil {
				t.Fatal(err)
			}
			// The kubelet restarts the component.
			fake.exit(100)
			fake.run(101, "kube-controller", 9000)
			tc.during(api, fake, health)
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
			defer cancel()
			got, err := v.After(ctx)
			checkVerified(t, got, err, tc.wantOK, tc.wantErr)
		})
	}
}

// checkVerified holds a verification's outcome to the summary or the error the case wants.
func checkVerified(t *testing.T, got string, err error, wantOK, wantErr string) {
	t.Helper()
	switch {
	case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
		t.Errorf("error %v, want %q", err, wantErr)
	case wantOK != "" && (err != nil || !strings.Contains(got, wantOK)):
		t.Errorf("got %q, %v; want %q", got, err, wantOK)
	}
}

// TestAPIServerIsVerifiedByReadinessWithoutALease: kube-apiserver elects no leader, so its
// verifier asks for no Lease (an apiserver that would hang on one cannot hold it up): the new
// process, /readyz answering 200 and the soak prove it, and a /readyz that fails during the soak
// (the apiserver lost its etcd, or shuts down) fails it.
func TestAPIServerIsVerifiedByReadinessWithoutALease(t *testing.T) {
	for _, tc := range []struct {
		name            string
		failDuringSoak  bool
		wantOK, wantErr string
	}{
		{name: "ready through the soak", wantOK: "new kube-apiserver pid 101 healthy for 600ms; elects no leader: verified by "},
		{name: "not ready during the soak", failDuringSoak: true, wantErr: "during the 600ms soak: health"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPIServer(t)
			api.hang = true // a Lease request would never return
			fake := newFakeProc(t, time.Now().Unix())
			fake.run(100, "kube-apiserver", 5000)
			// Ready for the first check; with failDuringSoak, not ready for every later one (the
			// soak's), whatever the machine's speed.
			var checks int32
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if atomic.AddInt32(&checks, 1) > 1 && tc.failDuringSoak {
					w.WriteHeader(http.StatusServiceUnavailable)
				}
			}))
			t.Cleanup(server.Close)
			v := &ComponentVerifier{
				Procs: fake.processes(), Comm: "kube-apiserver", HealthURL: server.URL + "/readyz",
				Leases: api.leases(t), Hostname: "master-1", Interval: 20 * time.Millisecond, Soak: 600 * time.Millisecond,
			}
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
			defer cancel()
			if err := v.Before(ctx); err != nil {
				t.Fatal(err)
			}
			fake.exit(100)
			fake.run(101, "kube-apiserver", 9000)
			got, err := v.After(ctx)
			checkVerified(t, got, err, tc.wantOK, tc.wantErr)
		})
	}
}

// TestLeaseRequestsAreBounded: an apiserver that accepts and never answers cannot hold cpswap past
// its bounds: the preflight fails with nothing changed, and verification ends with its context.
func TestLeaseRequestsAreBounded(t *testing.T) {
	api := newFakeAPIServer(t)
	api.hang = true
	fake := newFakeProc(t, time.Now().Unix())
	url, _ := healthServer(t)
	v := &ComponentVerifier{
		Procs: fake.processes(), Comm: "kube-controller-manager", HealthURL: url,
		Leases: api.leases(t), LeaseNamespace: "kube-system", LeaseName: "kube-controller-manager",
		Hostname: "master-1", Interval: 20 * time.Millisecond, RequestTimeout: 300 * time.Millisecond,
	}
	start := time.Now()
	if err := v.Before(context.Background()); err == nil || !strings.Contains(err.Error(), "no answer within 300ms") {
		t.Errorf("preflight against a silent apiserver: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("preflight took %v", took)
	}
	v.RequestTimeout = time.Hour
	fake.run(101, "kube-controller", 9000)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start = time.Now()
	if _, err := v.After(ctx); err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("verification against a silent apiserver: %v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("verification took %v with a 1s timeout", took)
	}
}

func TestHealthURL(t *testing.T) {
	dir := kubeadmManifests(t)
	for name, want := range map[string]string{
		"kube-controller-manager.yaml": "https://127.0.0.1:10257/healthz",
		"kube-scheduler.yaml":          "https://127.0.0.1:10259/healthz",
	} {
		got, err := HealthURL(read(t, filepath.Join(dir, name)), "")
		if err != nil || got != want {
			t.Errorf("%s: HealthURL = %q, %v; want %q", name, got, err, want)
		}
	}
	// kube-apiserver's probe is /healthz on its advertise address; cpswap asks for /readyz there.
	apiserver := read(t, filepath.Join(dir, "kube-apiserver.yaml"))
	probe, err := HealthURL(apiserver, "")
	if err != nil || !strings.HasSuffix(probe, ":6443/healthz") {
		t.Errorf("kube-apiserver.yaml: HealthURL = %q, %v; want its probe, https://<advertise address>:6443/healthz", probe, err)
	}
	e, err := Edit(apiserver, Change{Image: "registry.example.com/k8s/kube-apiserver:v1.17.3-idc.1"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := VerifyURL(e); err != nil || got != strings.TrimSuffix(probe, "/healthz")+"/readyz" {
		t.Errorf("kube-apiserver.yaml: VerifyURL = %q, %v; want the probe's address with /readyz", got, err)
	}
	if ns, name := LeaseOf(e); ns != "" || name != "" {
		t.Errorf("kube-apiserver elects no leader, LeaseOf = %s/%s", ns, name)
	}
	kcm := filepath.Join(dir, "kube-controller-manager.yaml")
	tests := []struct {
		replace       []string
		want, wantErr string
	}{
		{replace: []string{"host: 127.0.0.1", "host: ::1"}, want: "https://[::1]:10257/healthz"},
		{replace: []string{"port: 10257", "port: metrics", "    name: kube-controller-manager\n", "    name: kube-controller-manager\n    ports:\n    - containerPort: 10257\n      name: metrics\n"}, want: "https://127.0.0.1:10257/healthz"},
		{replace: []string{"port: 10257", "port: secure"}, wantErr: `port "secure" is neither a number nor one of its named ports`},
	}
	for _, tc := range tests {
		data := string(read(t, kcm))
		for i := 0; i < len(tc.replace); i += 2 {
			data = strings.Replace(data, tc.replace[i], tc.replace[i+1], 1)
		}
		got, err := HealthURL([]byte(data), "")
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: error %v, want %q", tc.replace, err, tc.wantErr)
			}
		} else if err != nil || got != tc.want {
			t.Errorf("%v: %q, %v; want %q", tc.replace, got, err, tc.want)
		}
	}
}

// TestMirrorPodIsCheckedBeforeTheSwap: with a digest, a mirror pod that does not exist under the
// host's name (a Node named otherwise) refuses the apply before anything changes, saying to give
// --node-name, instead of costing the whole --timeout and a rollback with an empty error.
func TestMirrorPodIsCheckedBeforeTheSwap(t *testing.T) {
	const mirrorPod = "/api/v1/namespaces/kube-system/pods/kube-controller-manager-master-1"
	for _, c := range []struct {
		name    string
		exists  bool
		wantErr string
	}{
		{name: "mirror pod under the host's name", exists: true},
		{name: "Node named otherwise", wantErr: "give --node-name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if r.URL.Path == mirrorPod && c.exists {
					json.NewEncoder(w).Encode(&corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}})
					return
				}
				w.WriteHeader(http.StatusNotFound) // no such pod, no Lease
				w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
			}))
			defer api.Close()
			client, err := kubernetes.NewForConfig(&rest.Config{Host: api.URL})
			if err != nil {
				t.Fatal(err)
			}
			v := &ComponentVerifier{
				Procs: newFakeProc(t, time.Now().Unix()).processes(), Comm: "kube-controller-manager",
				Leases: client.CoordinationV1().RESTClient(), LeaseNamespace: "kube-system", LeaseName: "kube-controller-manager",
				Hostname: "master-1", Interval: 20 * time.Millisecond,
				ImageDigest: someDigest, Pods: client.CoreV1().RESTClient(), ContainerName: "kube-controller-manager",
				PodNamespace: "kube-system", PodName: "kube-controller-manager-master-1",
			}
			err = v.Before(context.Background())
			if (c.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
				t.Errorf("Before: %v, want %q", err, c.wantErr)
			}
		})
	}
}

// TestOnlyTheOldInstanceIsWaitedFor: another process of the component's name on the host (a test
// run, a second copy with other flags) is not the old instance: verification waits for the one
// whose command line ends with the old manifest's flags to exit, not for every process named so.
func TestOnlyTheOldInstanceIsWaitedFor(t *testing.T) {
	api := newFakeAPIServer(t)
	api.set("master-1_old", time.Now().Add(-time.Second))
	fake := newFakeProc(t, time.Now().Unix())
	oldArgs := []string{"--leader-elect=true"}
	newArgs := []string{"--leader-elect=true", "--leader-elect-resource-lock=leases"}
	fake.args = oldArgs
	fake.run(100, "kube-controller", 5000)
	fake.args = []string{"--kubeconfig=/tmp/a-test-cluster.conf"}
	fake.run(200, "kube-controller", 5100) // unrelated, keeps running throughout
	url, _ := healthServer(t)
	v := &ComponentVerifier{
		Procs: fake.processes(), Comm: "kube-controller-manager", Args: newArgs, OldArgs: oldArgs, HealthURL: url,
		Leases: api.leases(t), LeaseNamespace: "kube-system", LeaseName: "kube-controller-manager",
		Hostname: "master-1", Interval: 20 * time.Millisecond, Soak: 100 * time.Millisecond,
	}
	if err := v.Before(context.Background()); err != nil {
		t.Fatal(err)
	}
	fake.exit(100)
	fake.args = newArgs
	fake.run(101, "kube-controller", 9000)
	api.set("master-1_new", time.Now())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if got, err := v.After(ctx); err != nil || !strings.Contains(got, "new kube-controller-manager pid 101") {
		t.Errorf("got %q, %v; want pid 101 verified while pid 200 runs on", got, err)
	}
}

// TestStatusShowsTheProcessOfThisManifest: status names the process whose command line ends with
// the manifest's flags, not merely the newest process of that name.
func TestStatusShowsTheProcessOfThisManifest(t *testing.T) {
	_, manifest, s := setup(t)
	pod, err := Parse(read(t, manifest))
	if err != nil {
		t.Fatal(err)
	}
	c, err := container(pod, "")
	if err != nil {
		t.Fatal(err)
	}
	fake := newFakeProc(t, time.Now().Unix())
	if fake.args, err = containerArgs(c); err != nil {
		t.Fatal(err)
	}
	fake.run(100, "kube-controller", 5000)
	fake.args = []string{"--kubeconfig=/tmp/a-test-cluster.conf"}
	fake.run(200, "kube-controller", 6000) // newer, another cluster's
	st, err := s.StatusOf(manifest, "", "", fake.processes())
	if err != nil {
		t.Fatal(err)
	}
	if st.Process == nil || st.Process.PID != 100 || !st.ProcessRunsManifest {
		t.Errorf("status process %+v (runs the manifest: %v), want pid 100", st.Process, st.ProcessRunsManifest)
	}
}
