package cpswap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/idc-lts/kube-1.17/test/harness"
)

const newImage = "registry.example.com/k8s/kube-controller-manager:v1.17.3-idc.1"

// kubeadmManifests writes real control-plane manifests with the kubeadm v1.17.3 the pipeline
// built, into a fresh manifests directory, and returns that directory.
func kubeadmManifests(t *testing.T) string {
	t.Helper()
	kubeadm := harness.Binary(t, "stock", "kubeadm")
	root := t.TempDir()
	config := "apiVersion: kubeadm.k8s.io/v1beta2\nkind: ClusterConfiguration\nkubernetesVersion: v1.17.3\nnetworking:\n  podSubnet: 10.244.0.0/16\n"
	if err := os.WriteFile(filepath.Join(root, "kubeadm.yaml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(kubeadm, "init", "phase", "control-plane", "all", "--config", "/kubeadm.yaml", "--rootfs", root).CombinedOutput()
	if err != nil {
		t.Fatalf("kubeadm: %v\n%s", err, out)
	}
	return filepath.Join(root, "etc/kubernetes/manifests")
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestRoundTripKeepsKubeadmManifestsByteForByte(t *testing.T) {
	dir := kubeadmManifests(t)
	for _, name := range []string{"kube-controller-manager.yaml", "kube-scheduler.yaml", "kube-apiserver.yaml"} {
		original := read(t, filepath.Join(dir, name))
		got, err := Apply(original, Change{})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, original) {
			t.Errorf("%s changed by a no-op round trip:\n%s", name, Diff(name, original, got))
		}
	}
}

func TestPlanChangesOnlyImageAndFlags(t *testing.T) {
	manifest := filepath.Join(kubeadmManifests(t), "kube-controller-manager.yaml")
	before, after, diff, err := Plan(manifest, Change{Image: newImage, Flags: append(Profiles["leases"], Flag{"--kube-api-qps", "100"})})
	if err != nil {
		t.Fatal(err)
	}
	var removed, added []string
	for _, line := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(line, "---") || strings.HasPrefix(line, "+++"):
		case strings.HasPrefix(line, "-"):
			removed = append(removed, strings.TrimSpace(line[1:]))
		case strings.HasPrefix(line, "+"):
			added = append(added, strings.TrimSpace(line[1:]))
		}
	}
	wantAdded := []string{"- --leader-elect-resource-lock=leases", "- --kube-api-qps=100", "image: " + newImage}
	if len(removed) != 1 || !strings.HasPrefix(removed[0], "image: k8s.gcr.io/kube-controller-manager:v1.17.3") {
		t.Errorf("removed lines %q, want only the old image", removed)
	}
	if strings.Join(added, "|") != strings.Join(wantAdded, "|") {
		t.Errorf("added lines %q, want %q", added, wantAdded)
	}
	if bytes.Equal(before, after) {
		t.Error("nothing changed")
	}
	if got := read(t, manifest); !bytes.Equal(got, before) {
		t.Error("plan wrote the manifest")
	}
}

func TestApplyRejectsBadInputAndChangesNothing(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, manifest string, s *Swapper) // makes the bad input
		change  Change
		wantErr string
	}{
		{
			name:    "malformed YAML",
			prepare: func(t *testing.T, m string, _ *Swapper) { os.WriteFile(m, []byte("kind: Pod\n  spec: [\n"), 0o600) },
			wantErr: "malformed YAML",
		},
		{
			name: "wrong kind",
			prepare: func(t *testing.T, m string, _ *Swapper) {
				os.WriteFile(m, bytes.Replace(read(t, m), []byte("kind: Pod"), []byte("kind: Deployment"), 1), 0o600)
			},
			wantErr: "wrong kind",
		},
		{name: "no such container", change: Change{Container: "sidecar"}, wantErr: `no container "sidecar"`},
		{
			name: "two containers",
			prepare: func(t *testing.T, m string, _ *Swapper) {
				data := read(t, m)
				pod, _ := Parse(data)
				second := pod.Spec.Containers[0].DeepCopy()
				second.Name = "second"
				pod.Spec.Containers = append(pod.Spec.Containers, *second)
				os.WriteFile(m, mustMarshal(t, pod), 0o600)
			},
			wantErr: "has 2 containers",
		},
		{
			name:    "read-only manifests directory",
			prepare: func(t *testing.T, m string, _ *Swapper) { os.Chmod(filepath.Dir(m), 0o555) },
			wantErr: "read-only",
		},
		{
			name: "backup cannot be written",
			prepare: func(t *testing.T, m string, s *Swapper) {
				s.BackupDir = filepath.Join(t.TempDir(), "a-file")
				os.WriteFile(s.BackupDir, []byte("not a directory"), 0o600)
			},
			wantErr: "backup cannot be written",
		},
		{
			name:    "backup directory inside the manifests directory",
			prepare: func(t *testing.T, m string, s *Swapper) { s.BackupDir = filepath.Join(filepath.Dir(m), "backups") },
			wantErr: "inside the manifests directory",
		},
		{
			name: "endpoints lock straight to leases",
			prepare: func(t *testing.T, m string, _ *Swapper) {
				data, _ := Apply(read(t, m), Change{Flags: []Flag{{"--leader-elect-resource-lock", "endpoints"}}})
				os.WriteFile(m, data, 0o600)
			},
			change:  Change{Flags: Profiles["leases"]},
			wantErr: "share no lock object",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := kubeadmManifests(t)
			manifest := filepath.Join(dir, "kube-controller-manager.yaml")
			s := &Swapper{BackupDir: filepath.Join(filepath.Dir(dir), "backups")}
			if tc.prepare != nil {
				tc.prepare(t, manifest, s)
			}
			t.Cleanup(func() { os.Chmod(dir, 0o755) })
			original := read(t, manifest)
			listing := func() string { entries, _ := os.ReadDir(dir); return fmt.Sprint(entries) }
			before := listing()
			change := tc.change
			if change.Image == "" {
				change.Image = newImage
			}
			verified := false
			_, err := s.Apply(context.Background(), manifest, change, func(context.Context) error { verified = true; return nil })
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
			if !bytes.Equal(read(t, manifest), original) {
				t.Error("the manifest changed")
			}
			if after := listing(); after != before {
				t.Errorf("the manifests directory changed: %s -> %s", before, after)
			}
			if verified {
				t.Error("verification ran for a rejected change")
			}
		})
	}
}

func TestApplyRollsBackWhenVerificationFails(t *testing.T) {
	dir := kubeadmManifests(t)
	manifest := filepath.Join(dir, "kube-controller-manager.yaml")
	os.Chmod(manifest, 0o600)
	original := read(t, manifest)
	s := &Swapper{BackupDir: filepath.Join(filepath.Dir(dir), "backups")}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	sawNew := false
	backup, err := s.Apply(ctx, manifest, Change{Image: newImage}, func(ctx context.Context) error {
		sawNew = bytes.Contains(read(t, manifest), []byte(newImage))
		<-ctx.Done()
		return errors.New("timed out: health https://127.0.0.1:10257/healthz: connection refused")
	})
	if err == nil || !strings.Contains(err.Error(), "rolled back") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("error = %v, want a rollback naming the cause", err)
	}
	if !sawNew {
		t.Error("verification did not see the new manifest in place")
	}
	if !bytes.Equal(read(t, manifest), original) {
		t.Error("the original manifest was not restored byte for byte")
	}
	if info, _ := os.Stat(manifest); info.Mode().Perm() != 0o600 {
		t.Errorf("mode after rollback %v, want 0600", info.Mode().Perm())
	}
	if !bytes.Equal(read(t, backup), original) || strings.HasPrefix(backup, dir) {
		t.Errorf("backup %s is not the original outside the manifests directory", backup)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Errorf("manifests directory holds %d files, want the 3 kubeadm wrote", len(entries))
	}
}

func TestApplyThenRollback(t *testing.T) {
	dir := kubeadmManifests(t)
	manifest := filepath.Join(dir, "kube-controller-manager.yaml")
	original := read(t, manifest)
	s := &Swapper{BackupDir: filepath.Join(filepath.Dir(dir), "backups")}
	if _, err := s.Apply(context.Background(), manifest, Change{Image: newImage}, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	pod, err := Parse(read(t, manifest))
	if err != nil || pod.Spec.Containers[0].Image != newImage {
		t.Fatalf("after apply: %v, image %v", err, pod)
	}
	if _, err := s.Rollback(manifest); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(read(t, manifest), original) {
		t.Error("rollback did not restore the original byte for byte")
	}
	if _, err := (&Swapper{BackupDir: t.TempDir()}).Rollback(manifest); err == nil || !strings.Contains(err.Error(), "no backup") {
		t.Errorf("rollback without a backup: %v", err)
	}
}

func TestHealthURLFromKubeadmLivenessProbe(t *testing.T) {
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
}

func TestHealthAndLeaseAgainstAnAPIServer(t *testing.T) {
	cp := harness.StartControlPlane(t)
	healthy := true
	health := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !healthy {
			http.Error(w, "not ok", http.StatusInternalServerError)
		}
	}))
	defer health.Close()
	since := time.Now()
	holder := "master-1_abc"
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-controller-manager", Namespace: "kube-system"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, RenewTime: &metav1.MicroTime{Time: since.Add(-time.Minute)}},
	}
	if _, err := cp.Client.CoordinationV1().Leases("kube-system").Create(lease); err != nil {
		t.Fatal(err)
	}
	verify := HealthAndLease(health.URL+"/healthz", cp.Client, "kube-system", "kube-controller-manager", since, 50*time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := verify(ctx); err == nil || !strings.Contains(err.Error(), "not renewed") {
		t.Errorf("stale Lease: %v, want a timeout naming the Lease", err)
	}

	lease, _ = cp.Client.CoordinationV1().Leases("kube-system").Get("kube-controller-manager", metav1.GetOptions{})
	lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	if _, err := cp.Client.CoordinationV1().Leases("kube-system").Update(lease); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if err := verify(ctx2); err != nil {
		t.Errorf("healthy and renewed: %v", err)
	}

	healthy = false
	ctx3, cancel3 := context.WithTimeout(context.Background(), time.Second)
	defer cancel3()
	if err := verify(ctx3); err == nil || !strings.Contains(err.Error(), "500") {
		t.Errorf("unhealthy: %v, want a timeout naming the health status", err)
	}
}

func mustMarshal(t *testing.T, v interface{}) []byte {
	t.Helper()
	data, err := yamlMarshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestProcessStartedSince(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	// A process named like a component, started after `since`.
	binary := filepath.Join(t.TempDir(), "kube-fake-comp")
	data, _ := os.ReadFile(sleep)
	os.WriteFile(binary, data, 0o755)
	since := time.Now().Add(-time.Second)
	cmd := exec.Command(binary, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := ProcessStartedSince("kube-fake-comp", since, 50*time.Millisecond)(ctx); err != nil {
		t.Errorf("new process not found: %v", err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	if err := ProcessStartedSince("kube-fake-comp", time.Now().Add(time.Hour), 50*time.Millisecond)(ctx2); err == nil ||
		!strings.Contains(err.Error(), "before the manifest changed") {
		t.Errorf("old process taken for a new one: %v", err)
	}
	ctx3, cancel3 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel3()
	if err := ProcessStartedSince("no-such-component", since, 50*time.Millisecond)(ctx3); err == nil ||
		!strings.Contains(err.Error(), "no no-such-component process") {
		t.Errorf("missing process: %v", err)
	}
}

// TestClientRateProfileGoesOnlyIntoTheControllerManager checks that the kcm-client-rate profile
// sets both limits on kube-controller-manager and is refused, with nothing written, for
// kube-scheduler, whose own defaults (50/100) are already what the profile gives.
func TestClientRateProfileGoesOnlyIntoTheControllerManager(t *testing.T) {
	dir := kubeadmManifests(t)
	change := Change{Image: newImage, Flags: Profiles["kcm-client-rate"], OnlyFor: ProfileOnlyFor["kcm-client-rate"]}
	_, after, _, err := Plan(filepath.Join(dir, "kube-controller-manager.yaml"), change)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"- --kube-api-qps=50", "- --kube-api-burst=100"} {
		if !strings.Contains(string(after), want) {
			t.Errorf("kube-controller-manager manifest lacks %q after the profile", want)
		}
	}
	scheduler := filepath.Join(dir, "kube-scheduler.yaml")
	original := read(t, scheduler)
	if _, _, _, err := Plan(scheduler, change); err == nil || !strings.Contains(err.Error(), "for container kube-controller-manager") {
		t.Errorf("kube-scheduler manifest with the kcm profile: error %v, want it refused", err)
	}
	if string(read(t, scheduler)) != string(original) {
		t.Error("the refused plan changed the kube-scheduler manifest")
	}
}
