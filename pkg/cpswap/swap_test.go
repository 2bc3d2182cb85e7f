package cpswap

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeVerifier stands in for the kubelet and the component.
type fakeVerifier struct {
	before      func(ctx context.Context) error
	after       func(ctx context.Context) (string, error)
	beforeCalls int
	afterCalls  int
}

func (f *fakeVerifier) Before(ctx context.Context) error {
	f.beforeCalls++
	if f.before != nil {
		return f.before(ctx)
	}
	return nil
}

func (f *fakeVerifier) After(ctx context.Context) (string, error) {
	f.afterCalls++
	if f.after != nil {
		return f.after(ctx)
	}
	return "ok", nil
}

func verifies() *fakeVerifier { return &fakeVerifier{} }

func fails(why string) *fakeVerifier {
	return &fakeVerifier{after: func(context.Context) (string, error) { return "", errors.New(why) }}
}

// setup returns a kubeadm manifests directory, its kube-controller-manager manifest and a
// Swapper whose backup directory is beside the manifests directory.
func setup(t *testing.T) (dir, manifest string, s *Swapper) {
	dir = kubeadmManifests(t)
	return dir, filepath.Join(dir, "kube-controller-manager.yaml"),
		&Swapper{BackupDir: filepath.Join(filepath.Dir(dir), "backups"), Timeout: time.Minute}
}

func listing(t *testing.T, dir string) string {
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return strings.Join(names, " ")
}

func wantCode(t *testing.T, err error, code int, contains string) {
	t.Helper()
	if ExitCode(err) != code || err == nil || !strings.Contains(err.Error(), contains) {
		t.Fatalf("error %v (exit %d), want exit %d and %q", err, ExitCode(err), code, contains)
	}
}

func TestApplyRejectsBadInputAndChangesNothing(t *testing.T) {
	tests := []struct {
		name     string
		prepare  func(t *testing.T, manifest string, s *Swapper) // makes the bad input
		change   Change
		verify   *fakeVerifier
		relative bool // --manifest as a name in the working directory
		wantErr  string
	}{
		{
			name:    "malformed YAML",
			prepare: func(t *testing.T, m string, _ *Swapper) { write(t, m, []byte("kind: Pod\n  spec: [\n")) },
			wantErr: "malformed YAML",
		},
		{
			name: "wrong kind",
			prepare: func(t *testing.T, m string, _ *Swapper) {
				write(t, m, bytes.Replace(read(t, m), []byte("kind: Pod"), []byte("kind: Deployment"), 1))
			},
			wantErr: "wrong kind",
		},
		{name: "no such container", change: Change{Container: "sidecar"}, wantErr: `no container "sidecar"`},
		{
			name: "two containers",
			prepare: func(t *testing.T, m string, _ *Swapper) {
				data := string(read(t, m))
				i := strings.Index(data, "  hostNetwork:")
				write(t, m, []byte(data[:i]+"  - name: second\n    image: busybox:1\n"+data[i:]))
			},
			wantErr: "has 2 containers",
		},
		{
			name:    "read-only manifests directory",
			prepare: func(t *testing.T, m string, _ *Swapper) { os.Chmod(filepath.Dir(m), 0o555) },
			wantErr: "read-only",
		},
		{
			name: "backup directory is a file",
			prepare: func(t *testing.T, m string, s *Swapper) {
				s.BackupDir = filepath.Join(t.TempDir(), "a-file")
				write(t, s.BackupDir, []byte("not a directory"))
			},
			wantErr: "backup directory cannot be created",
		},
		{
			name:    "backup directory inside the manifests directory",
			prepare: func(t *testing.T, m string, s *Swapper) { s.BackupDir = filepath.Join(filepath.Dir(m), "backups") },
			wantErr: "inside the manifests directory",
		},
		{
			// cd manifests && cpswap apply --manifest kube-controller-manager.yaml --backup-dir $PWD
			name: "relative manifest, backup directory is the manifests directory",
			prepare: func(t *testing.T, m string, s *Swapper) {
				t.Chdir(filepath.Dir(m))
				s.BackupDir = filepath.Dir(m)
			},
			relative: true,
			wantErr:  "inside the manifests directory",
		},
		{
			name: "backup directory writable by others",
			prepare: func(t *testing.T, m string, s *Swapper) {
				os.MkdirAll(s.BackupDir, 0o700)
				os.Chmod(s.BackupDir, 0o777)
			},
			wantErr: "writable by others",
		},
		{
			name: "backup directory owned by another user",
			prepare: func(t *testing.T, m string, s *Swapper) {
				os.MkdirAll(s.BackupDir, 0o700)
				if err := os.Chown(s.BackupDir, os.Geteuid()+1000, -1); err != nil {
					t.Skipf("cannot chown: %v", err)
				}
			},
			wantErr: "is owned by uid",
		},
		{
			name:    "endpoints lock straight to leases",
			prepare: func(t *testing.T, m string, _ *Swapper) { write(t, m, kcmManifestWithLock(t, m, "endpoints")) },
			change:  Change{Profiles: profiles(t, "leases")},
			wantErr: "share no lock object",
		},
		{
			name:    "zero timeout",
			prepare: func(t *testing.T, m string, s *Swapper) { s.Timeout = 0 },
			wantErr: "--timeout must be positive",
		},
		{
			name: "the apiserver cannot be asked (preflight)",
			verify: &fakeVerifier{before: func(context.Context) error {
				return errors.New("Lease kube-system/kube-controller-manager: no answer within 5s")
			}},
			wantErr: "before changing anything: Lease kube-system/kube-controller-manager: no answer",
		},
		{
			name:    "the scheduler's image in the controller manager's manifest",
			change:  Change{Image: "registry.example.com/k8s/kube-scheduler:v1.17.3-idc.1"},
			wantErr: "is not a kube-controller-manager image",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, manifest, s := setup(t)
			if tc.prepare != nil {
				tc.prepare(t, manifest, s)
			}
			t.Cleanup(func() { os.Chmod(dir, 0o755) })
			original := read(t, manifest)
			before := listing(t, dir)
			change := tc.change
			if change.Image == "" {
				change.Image = newImage
			}
			v := tc.verify
			if v == nil {
				v = verifies()
			}
			target := manifest
			if tc.relative {
				target = filepath.Base(manifest)
			}
			_, err := s.Apply(context.Background(), target, change, v)
			wantCode(t, err, ExitRefused, tc.wantErr)
			if !bytes.Equal(read(t, manifest), original) {
				t.Error("the manifest changed")
			}
			if after := listing(t, dir); after != before {
				t.Errorf("the manifests directory changed: %s -> %s", before, after)
			}
			if v.afterCalls > 0 {
				t.Error("verification ran for a rejected change")
			}
		})
	}
}

func kcmManifestWithLock(t *testing.T, manifest, lock string) []byte {
	return bytes.Replace(read(t, manifest), []byte("    - --leader-elect=true\n"), []byte("    - --leader-elect=true\n    - --leader-elect-resource-lock="+lock+"\n"), 1)
}

func TestApplyRollsBackWhenVerificationFails(t *testing.T) {
	dir, manifest, s := setup(t)
	os.Chmod(manifest, 0o600)
	original := read(t, manifest)
	s.Timeout = 200 * time.Millisecond
	sawNew := false
	v := &fakeVerifier{after: func(ctx context.Context) (string, error) {
		sawNew = bytes.Contains(read(t, manifest), []byte(newImage))
		<-ctx.Done()
		return "", errors.New("timed out: health https://127.0.0.1:10257/healthz: connection refused")
	}}
	_, err := s.Apply(context.Background(), manifest, Change{Image: newImage}, v)
	wantCode(t, err, ExitRolledBack, "connection refused; rolled back")
	if !sawNew {
		t.Error("verification did not see the new manifest in place")
	}
	if !bytes.Equal(read(t, manifest), original) {
		t.Error("the original manifest was not restored byte for byte")
	}
	if info, _ := os.Stat(manifest); info.Mode().Perm() != 0o600 {
		t.Errorf("mode after rollback %v, want 0600", info.Mode().Perm())
	}
	if got := listing(t, dir); got != "kube-apiserver.yaml kube-controller-manager.yaml kube-scheduler.yaml" {
		t.Errorf("manifests directory holds %s, want the 3 kubeadm wrote", got)
	}
	h, _, _ := s.HistoryOf(manifest)
	if len(h.Applied) != 0 {
		t.Errorf("a failed apply entered the history: %+v", h.Applied)
	}
}

// TestAnotherWriterDuringVerification: a kubeadm upgrade, a configuration tool or a colleague
// rewrites the manifest while cpswap verifies. Whatever verification says, it was not about our
// change: cpswap neither reports success nor restores over their file; it says so, exits 4,
// records the apply as overtaken (outside the chain rollback undoes) and leaves no journal.
func TestAnotherWriterDuringVerification(t *testing.T) {
	theirs := []byte("# written by someone else\n")
	cases := []struct {
		name   string
		result func(ctx context.Context) (string, error)
		remove bool
	}{
		{name: "verification passes", result: func(context.Context) (string, error) { return "new process", nil }},
		{name: "verification fails", result: func(context.Context) (string, error) { return "", errors.New("health: connection refused") }},
		{name: "interrupted", result: func(context.Context) (string, error) { return "", context.Canceled }},
		{name: "manifest removed", remove: true, result: func(context.Context) (string, error) { return "", errors.New("no new process") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, manifest, s := setup(t)
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			v := &fakeVerifier{after: func(vctx context.Context) (string, error) {
				if c.remove {
					os.Remove(manifest)
				} else if err := os.WriteFile(manifest, theirs, 0o600); err != nil {
					t.Fatal(err)
				}
				if c.name == "interrupted" {
					cancel(errors.New("received terminated"))
				}
				return c.result(vctx)
			}}
			_, err := s.Apply(ctx, manifest, Change{Image: newImage}, v)
			wantCode(t, err, ExitBroken, "was changed by someone else during verification")
			// Moved away or replaced: the operator is told where the original is to go back by hand.
			if !strings.Contains(err.Error(), "The manifest as it was before this apply is "+s.BackupDir) {
				t.Errorf("the error does not say where the original is: %v", err)
			}
			if c.remove {
				if _, err := os.Stat(manifest); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a removed manifest was put back: %v", err)
				}
				// The history is read through the manifest's path, as cpswap history does.
				os.WriteFile(manifest, theirs, 0o600)
			} else if got := read(t, manifest); !bytes.Equal(got, theirs) {
				t.Errorf("the other writer's manifest was overwritten:\n%s", got)
			}
			h, pending, err := s.HistoryOf(manifest)
			if err != nil {
				t.Fatal(err)
			}
			if pending != "" {
				t.Errorf("a journal stays: %s", pending)
			}
			if len(h.Applied) != 0 || len(h.Overtaken) != 1 || !strings.Contains(h.Overtaken[0].Result, "overtaken: changed by someone else") {
				t.Errorf("history: applied %+v, overtaken %+v", h.Applied, h.Overtaken)
			}
		})
	}
}

// TestApplyInterruptedRollsBack: a cancelled context (cpswap cancels it on SIGINT, SIGTERM and
// SIGHUP) during verification restores the manifest and says why.
func TestApplyInterruptedRollsBack(t *testing.T) {
	_, manifest, s := setup(t)
	original := read(t, manifest)
	ctx, cancel := context.WithCancelCause(context.Background())
	v := &fakeVerifier{after: func(vctx context.Context) (string, error) {
		cancel(errors.New("received hangup"))
		<-vctx.Done()
		return "", vctx.Err()
	}}
	_, err := s.Apply(ctx, manifest, Change{Image: newImage}, v)
	wantCode(t, err, ExitRolledBack, "interrupted (received hangup); rolled back")
	if !bytes.Equal(read(t, manifest), original) {
		t.Error("the manifest was not restored")
	}
}

// TestNoOpApplyWritesNothing: a change that leaves the manifest as it is writes no backup, waits
// for nothing, and does not move the rollback target.
func TestNoOpApplyWritesNothing(t *testing.T) {
	_, manifest, s := setup(t)
	if _, err := s.Apply(context.Background(), manifest, Change{Image: newImage}, verifies()); err != nil {
		t.Fatal(err)
	}
	backups := listing(t, s.BackupDir)
	info, _ := os.Stat(manifest)
	v := verifies()
	applied, err := s.Apply(context.Background(), manifest, Change{Image: newImage}, v)
	if err != nil || !applied.Edited.Unchanged() {
		t.Fatalf("no-op apply: %v, unchanged %v", err, applied != nil && applied.Edited.Unchanged())
	}
	if v.beforeCalls+v.afterCalls != 0 {
		t.Error("a no-op apply ran verification")
	}
	if got := listing(t, s.BackupDir); got != backups {
		t.Errorf("backup directory changed: %s -> %s", backups, got)
	}
	if after, _ := os.Stat(manifest); !after.ModTime().Equal(info.ModTime()) {
		t.Error("the manifest was rewritten")
	}
	h, _, _ := s.HistoryOf(manifest)
	if len(h.Applied) != 1 {
		t.Errorf("history holds %d applies, want 1", len(h.Applied))
	}
}

// TestHistoryAndRollbackChain: rollback undoes the last successful apply and, run again, the one
// before it; a failed apply never moves the target; --to original goes back to the start.
func TestHistoryAndRollbackChain(t *testing.T) {
	_, manifest, s := setup(t)
	stock := read(t, manifest)
	if _, err := s.Apply(context.Background(), manifest, Change{Image: newImage}, verifies()); err != nil {
		t.Fatal(err)
	}
	ours := read(t, manifest)
	_, err := s.Apply(context.Background(), manifest, Change{Profiles: profiles(t, "kcm-client-rate")}, fails("health: 500"))
	wantCode(t, err, ExitRolledBack, "rolled back")
	r, err := s.Rollback(manifest, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(read(t, manifest), stock) || r.Next != nil {
		t.Fatalf("rollback after a failed apply did not bring back the stock manifest (next %+v)", r.Next)
	}
	if _, err := s.Rollback(manifest, false, false); ExitCode(err) != ExitRefused || !strings.Contains(err.Error(), "nothing to roll back") {
		t.Errorf("rollback with nothing recorded: %v", err)
	}

	// Three good applies, then rollback twice and --to original.
	for _, change := range []Change{{Image: newImage}, {Profiles: profiles(t, "leases")}, {Profiles: profiles(t, "kcm-client-rate")}} {
		if _, err := s.Apply(context.Background(), manifest, change, verifies()); err != nil {
			t.Fatal(err)
		}
	}
	h, _, _ := s.HistoryOf(manifest)
	if len(h.Applied) != 3 || h.Applied[0].Image != newImage || !strings.Contains(strings.Join(h.Applied[2].Flags, " "), "--kube-api-qps=50") {
		t.Fatalf("history %+v", h.Applied)
	}
	if _, err := s.Rollback(manifest, false, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rollback(manifest, false, false); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(read(t, manifest), ours) {
		t.Error("the second rollback did not restore the manifest after the first apply")
	}
	if r, err := s.Rollback(manifest, true, false); err != nil || !bytes.Equal(read(t, manifest), stock) || r.Next != nil {
		t.Errorf("rollback --to original: %v", err)
	}
}

// TestRollbackToOriginalRefusesWhatItWouldLose: --to original with an unfinished apply pending
// does not act as a plain rollback, and over a hand edit made between two applies it refuses
// (the edit would be lost) unless --force; one apply at a time still works.
func TestRollbackToOriginalRefusesWhatItWouldLose(t *testing.T) {
	t.Run("unfinished apply pending", func(t *testing.T) {
		_, manifest, s := setup(t)
		if _, err := s.Apply(context.Background(), manifest, Change{Image: newImage}, verifies()); err != nil {
			t.Fatal(err)
		}
		ours := read(t, manifest)
		func() {
			defer func() { recover() }()
			s.Apply(context.Background(), manifest, Change{Profiles: profiles(t, "leases")},
				&fakeVerifier{after: func(context.Context) (string, error) { panic("killed") }})
		}()
		unverified := read(t, manifest)
		_, err := s.Rollback(manifest, true, false)
		wantCode(t, err, ExitRefused, "run `cpswap rollback` without --to original, then with it")
		if !bytes.Equal(read(t, manifest), unverified) {
			t.Error("the refused rollback changed the manifest")
		}
		if _, err := s.Rollback(manifest, false, false); err != nil || !bytes.Equal(read(t, manifest), ours) {
			t.Fatalf("plain rollback of the unfinished apply: %v", err)
		}
	})
	t.Run("hand edit between two applies", func(t *testing.T) {
		_, manifest, s := setup(t)
		stock := read(t, manifest)
		if _, err := s.Apply(context.Background(), manifest, Change{Image: newImage}, verifies()); err != nil {
			t.Fatal(err)
		}
		edited := append(read(t, manifest), []byte("# tuned by hand\n")...)
		if err := os.WriteFile(manifest, edited, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Apply(context.Background(), manifest, Change{Profiles: profiles(t, "leases")}, verifies()); err != nil {
			t.Fatal(err)
		}
		latest := read(t, manifest)
		_, err := s.Rollback(manifest, true, false)
		wantCode(t, err, ExitRefused, "was edited between the apply of")
		if !bytes.Equal(read(t, manifest), latest) {
			t.Error("the refused rollback changed the manifest")
		}
		if _, err := s.Rollback(manifest, false, false); err != nil || !bytes.Equal(read(t, manifest), edited) {
			t.Fatalf("one apply at a time brings back the hand edit: %v", err)
		}
		if _, err := s.Rollback(manifest, true, true); err != nil || !bytes.Equal(read(t, manifest), stock) {
			t.Fatalf("--to original --force: %v", err)
		}
	})
}

// TestRollbackRefusesWhatItCannotTrust: a backup changed since it was written, another
// component's manifest, a name outside the backup directory, and a manifest edited by hand since
// the apply are refused, naming the cause, and nothing changes.
func TestRollbackRefusesWhatItCannotTrust(t *testing.T) {
	tests := []struct {
		name    string
		spoil   func(t *testing.T, s *Swapper, manifest string, h *History)
		force   bool
		wantErr string
	}{
		{
			name: "truncated backup",
			spoil: func(t *testing.T, s *Swapper, _ string, h *History) {
				path := filepath.Join(s.BackupDir, h.Applied[0].Before.Backup)
				write(t, path, read(t, path)[:200])
			},
			wantErr: "changed since it was written; refusing to restore it",
		},
		{
			name: "the scheduler's manifest recorded as the controller manager's backup",
			spoil: func(t *testing.T, s *Swapper, manifest string, h *History) {
				data := read(t, filepath.Join(filepath.Dir(manifest), "kube-scheduler.yaml"))
				name := "kube-controller-manager.yaml.sha256-" + sha256Hex(data)
				write(t, filepath.Join(s.BackupDir, name), data)
				h.Applied[0].Before = Snapshot{Backup: name, SHA256: sha256Hex(data)}
			},
			wantErr: "it is the manifest of pod kube-scheduler",
		},
		{
			name: "a path outside the backup directory",
			spoil: func(t *testing.T, s *Swapper, _ string, h *History) {
				h.Applied[0].Before.Backup = "../../../etc/passwd"
			},
			wantErr: "is not a backup of kube-controller-manager.yaml",
		},
		{
			name: "manifest edited by hand since the apply",
			spoil: func(t *testing.T, s *Swapper, manifest string, h *History) {
				write(t, manifest, append(read(t, manifest), []byte("# edited\n")...))
			},
			wantErr: "it was edited since",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, manifest, s := setup(t)
			if _, err := s.Apply(context.Background(), manifest, Change{Image: newImage}, verifies()); err != nil {
				t.Fatal(err)
			}
			h, _, _ := s.HistoryOf(manifest)
			tc.spoil(t, s, manifest, h)
			data, _ := json.Marshal(h)
			write(t, filepath.Join(s.BackupDir, "kube-controller-manager.yaml.history"), data)
			current := read(t, manifest)
			_, err := s.Rollback(manifest, false, tc.force)
			wantCode(t, err, ExitRefused, tc.wantErr)
			if !bytes.Equal(read(t, manifest), current) {
				t.Error("the manifest changed")
			}
		})
	}
}

// TestBackupDirectoryIsRecordedAbsolute: a relative --backup-dir at apply time works for a
// rollback started from another directory with the absolute path.
func TestBackupDirectoryIsRecordedAbsolute(t *testing.T) {
	dir, manifest, _ := setup(t)
	stock := read(t, manifest)
	t.Chdir(filepath.Dir(dir))
	s := &Swapper{BackupDir: "backups", Timeout: time.Minute}
	if _, err := s.Apply(context.Background(), "manifests/kube-controller-manager.yaml", Change{Image: newImage}, verifies()); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	if _, err := (&Swapper{BackupDir: filepath.Join(filepath.Dir(dir), "backups")}).Rollback(manifest, false, false); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(read(t, manifest), stock) {
		t.Error("not restored")
	}
}

// TestSymlinkedManifestStaysASymlink: the file behind the link is replaced; the link stays.
func TestSymlinkedManifestStaysASymlink(t *testing.T) {
	dir, manifest, s := setup(t)
	real := filepath.Join(t.TempDir(), "kcm.yaml")
	write(t, real, read(t, manifest))
	os.Remove(manifest)
	if err := os.Symlink(real, manifest); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(context.Background(), manifest, Change{Image: newImage}, verifies()); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Lstat(manifest); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Errorf("%s is no longer a symlink", manifest)
	}
	if !bytes.Contains(read(t, real), []byte(newImage)) {
		t.Error("the file behind the link was not changed")
	}
	for _, d := range []string{dir, filepath.Dir(real)} {
		if strings.Contains(listing(t, d), "cpswap") {
			t.Errorf("temporary files left in %s: %s", d, listing(t, d))
		}
	}
}

// TestBackupDirectoryOnAnotherFilesystem: /var/lib/cpswap/backups on its own filesystem works; the
// temporary file is a dot file in the manifests directory, which the kubelet skips.
func TestBackupDirectoryOnAnotherFilesystem(t *testing.T) {
	_, manifest, s := setup(t)
	other, err := os.MkdirTemp("/dev/shm", "cpswap-test-")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(other) })
	var a, b syscall.Stat_t
	syscall.Stat(other, &a)
	syscall.Stat(manifest, &b)
	if a.Dev == b.Dev {
		t.Skip("/dev/shm is on the same filesystem as the test's temporary directory")
	}
	s.BackupDir = other
	var during string
	v := &fakeVerifier{after: func(context.Context) (string, error) { during = listing(t, filepath.Dir(manifest)); return "ok", nil }}
	if _, err := s.Apply(context.Background(), manifest, Change{Image: newImage}, v); err != nil {
		t.Fatal(err)
	}
	// Beside the manifests, only the unfinished-apply marker, a dot file the kubelet skips.
	if during != ".kube-controller-manager.yaml.cpswap-journal-in kube-apiserver.yaml kube-controller-manager.yaml kube-scheduler.yaml" {
		t.Errorf("manifests directory during verification: %s", during)
	}
	if after := listing(t, filepath.Dir(manifest)); after != "kube-apiserver.yaml kube-controller-manager.yaml kube-scheduler.yaml" {
		t.Errorf("manifests directory after the apply: %s", after)
	}
}

// TestStateIsWrittenByRename: the history is replaced by a rename (a new inode), never rewritten
// in place, so a crash leaves the old or the new one, not a mix.
func TestStateIsWrittenByRename(t *testing.T) {
	_, manifest, s := setup(t)
	inode := func() uint64 {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(s.BackupDir, "kube-controller-manager.yaml.history"), &st); err != nil {
			t.Fatal(err)
		}
		return st.Ino
	}
	for i, change := range []Change{{Image: newImage}, {Profiles: profiles(t, "leases")}} {
		if _, err := s.Apply(context.Background(), manifest, change, verifies()); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first := inode()
			defer func() {
				if inode() == first {
					t.Error("the history was rewritten in place")
				}
			}()
		}
	}
}

// TestRollbackFailureIsItsOwnExitCode: when restoring fails, the exit code says so (4) and the
// error names the backup to restore by hand; the journal stays for the next run.
func TestRollbackFailureIsItsOwnExitCode(t *testing.T) {
	_, manifest, s := setup(t)
	s.restoreFile = func(string, []byte, os.FileInfo) (bool, error) {
		return false, errors.New("read-only file system")
	}
	v := fails("health: connection refused")
	_, err := s.Apply(context.Background(), manifest, Change{Image: newImage}, v)
	wantCode(t, err, ExitBroken, "restoring the original failed")
	if !strings.Contains(err.Error(), s.BackupDir) {
		t.Errorf("error %v does not name the backup", err)
	}
	if _, err := os.Stat(filepath.Join(s.BackupDir, "kube-controller-manager.yaml.journal")); err != nil {
		t.Errorf("journal: %v", err)
	}
}

// TestUnfinishedApplyIsReported: a journal left by a killed apply is reported by every verb and
// rollback restores what was there before it; apply refuses until then.
func TestUnfinishedApplyIsReported(t *testing.T) {
	_, manifest, s := setup(t)
	stock := read(t, manifest)
	// What a SIGKILL during verification leaves: the journal and the new manifest (the lock dies
	// with the process). A panic stops Apply at the same point.
	v := &fakeVerifier{after: func(context.Context) (string, error) { panic("killed") }}
	func() {
		defer func() { recover() }()
		s.Apply(context.Background(), manifest, Change{Image: newImage}, v)
	}()
	if p := s.Pending(manifest); !strings.Contains(p, "did not finish") || !strings.Contains(p, "the new, unverified manifest") {
		t.Errorf("pending: %q", p)
	}
	_, err := s.Apply(context.Background(), manifest, Change{Image: newImage}, verifies())
	wantCode(t, err, ExitRefused, "`cpswap rollback` would restore")
	r, err := s.Rollback(manifest, false, false)
	if err != nil || r.Undone != nil {
		t.Fatalf("rollback of the unfinished apply: %v %+v", err, r)
	}
	if !bytes.Equal(read(t, manifest), stock) {
		t.Error("not restored")
	}
	if p := s.Pending(manifest); p != "" {
		t.Errorf("still pending: %s", p)
	}
}

// TestUnfinishedApplySeenWithAnyBackupDir: an apply killed during verification is seen by every
// run on the manifest, whatever its --backup-dir, through the marker beside the manifest: status,
// history and plan report it, naming the backup directory that holds its journal; apply and
// rollback with another backup directory refuse (a rollback from there would later be undone by
// the unfinished apply's journal); the rollback with the right one restores and removes the marker.
func TestUnfinishedApplySeenWithAnyBackupDir(t *testing.T) {
	dir, manifest, s := setup(t)
	stock := read(t, manifest)
	v := &fakeVerifier{after: func(context.Context) (string, error) { panic("killed") }}
	func() {
		defer func() { recover() }()
		s.Apply(context.Background(), manifest, Change{Image: newImage}, v)
	}()
	first, _ := filepath.Abs(s.BackupDir)
	other := &Swapper{BackupDir: filepath.Join(t.TempDir(), "other-backups"), Timeout: time.Minute}
	for name, p := range map[string]string{"pending (plan)": other.Pending(manifest), "history": func() string { _, p, _ := other.HistoryOf(manifest); return p }()} {
		if !strings.Contains(p, "did not finish") || !strings.Contains(p, "the new, unverified manifest") || !strings.Contains(p, "--backup-dir "+first) {
			t.Errorf("%s with another --backup-dir: %q", name, p)
		}
	}
	status, err := other.StatusOf(manifest, "", "cpswap-test-none", newFakeProc(t, time.Now().Unix()).processes())
	if err != nil || !strings.Contains(status.Unfinished, "--backup-dir "+first) {
		t.Errorf("status with another --backup-dir: %v %+v", err, status)
	}
	_, err = other.Apply(context.Background(), manifest, Change{Image: "registry.example.com/k8s/kube-controller-manager:v1.17.3-idc.2"}, verifies())
	wantCode(t, err, ExitRefused, "give it --backup-dir "+first)
	_, err = other.Rollback(manifest, false, false)
	wantCode(t, err, ExitRefused, "would not undo it")
	if !bytes.Contains(read(t, manifest), []byte(newImage)) {
		t.Error("a refused run changed the manifest")
	}
	if r, err := s.Rollback(manifest, false, false); err != nil || r.Undone != nil {
		t.Fatalf("rollback with the apply's own backup directory: %v %+v", err, r)
	}
	if !bytes.Equal(read(t, manifest), stock) {
		t.Error("not restored")
	}
	if p := other.Pending(manifest); p != "" {
		t.Errorf("still pending: %s", p)
	}
	if got := listing(t, dir); got != "kube-apiserver.yaml kube-controller-manager.yaml kube-scheduler.yaml" {
		t.Errorf("manifests directory after the rollback: %s", got)
	}
}

// TestOneApplyAtATime: a second apply on the same manifest fails at once and names the first.
func TestOneApplyAtATime(t *testing.T) {
	_, manifest, s := setup(t)
	second := make(chan error)
	v := &fakeVerifier{after: func(context.Context) (string, error) {
		go func() {
			_, err := s.Apply(context.Background(), manifest, Change{Image: strings.Replace(newImage, "idc.1", "idc.2", 1)}, verifies())
			second <- err
		}()
		select {
		case err := <-second:
			return "", fmt.Errorf("second: %w", err)
		case <-time.After(5 * time.Second):
			return "", errors.New("the second apply did not fail at once")
		}
	}}
	_, err := s.Apply(context.Background(), manifest, Change{Image: newImage}, v)
	wantCode(t, err, ExitRolledBack, fmt.Sprintf("second: another cpswap (pid %d) is working on", os.Getpid()))
}

// TestRollbackRefusesALockMoveThatGivesTwoLeaders: rolling back over two applies (endpoints ->
// endpointsleases -> leases) would move this master from leases straight to endpoints while the
// others run leases; refused unless forced.
func TestRollbackRefusesALockMoveThatGivesTwoLeaders(t *testing.T) {
	_, manifest, s := setup(t)
	write(t, manifest, kcmManifestWithLock(t, manifest, "endpoints"))
	for _, lock := range []string{"endpointsleases", "leases"} {
		if _, err := s.Apply(context.Background(), manifest, Change{Flags: []Flag{{Name: lockFlag, Value: lock}}}, verifies()); err != nil {
			t.Fatal(err)
		}
	}
	current := read(t, manifest)
	_, err := s.Rollback(manifest, true, false)
	wantCode(t, err, ExitRefused, "from leases to endpoints")
	if !bytes.Equal(read(t, manifest), current) {
		t.Error("the manifest changed")
	}
	if _, err := s.Rollback(manifest, false, false); err != nil {
		t.Errorf("one step back (leases -> endpointsleases): %v", err)
	}
	if _, err := s.Rollback(manifest, false, true); err != nil {
		t.Errorf("forced: %v", err)
	}
}

// TestTwoBackupDirectoriesStillOneApplyAtATime: the manifests directory is locked too.
func TestTwoBackupDirectoriesStillOneApplyAtATime(t *testing.T) {
	_, manifest, s := setup(t)
	other := &Swapper{BackupDir: filepath.Join(t.TempDir(), "other"), Timeout: time.Minute}
	v := &fakeVerifier{after: func(context.Context) (string, error) {
		_, err := other.Apply(context.Background(), manifest, Change{Profiles: profiles(t, "leases")}, verifies())
		return "", fmt.Errorf("second: %w", err)
	}}
	_, err := s.Apply(context.Background(), manifest, Change{Image: newImage}, v)
	wantCode(t, err, ExitRolledBack, "second: another cpswap is changing a manifest in")
}

// TestBackupDirectoryPathIsVettedBeforeAnythingIsCreated: a path that leads into the manifests
// directory through a symlink, or reaches it as a bind mount, is refused with nothing created
// there; a path through a symlink another user owns is refused; rollback does not create a
// backup directory that does not exist (a typo).
func TestBackupDirectoryPathIsVettedBeforeAnythingIsCreated(t *testing.T) {
	dir, manifest, s := setup(t)
	links := t.TempDir()

	intoManifests := filepath.Join(links, "to-manifests")
	if err := os.Symlink(dir, intoManifests); err != nil {
		t.Fatal(err)
	}
	s.BackupDir = filepath.Join(intoManifests, "backups")
	_, err := s.Apply(context.Background(), manifest, Change{Image: newImage}, verifies())
	wantCode(t, err, ExitRefused, "is inside the manifests directory")
	if got := listing(t, dir); got != "kube-apiserver.yaml kube-controller-manager.yaml kube-scheduler.yaml" {
		t.Errorf("the refused backup directory was created in the manifests directory: %s", got)
	}

	theirs := filepath.Join(links, "theirs")
	if err := os.Symlink(t.TempDir(), theirs); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(theirs, 12345, 12345); err != nil {
		t.Skipf("cannot give the symlink another owner: %v", err)
	}
	s.BackupDir = filepath.Join(theirs, "backups")
	_, err = s.Apply(context.Background(), manifest, Change{Image: newImage}, verifies())
	wantCode(t, err, ExitRefused, "owned by uid 12345")

	s.BackupDir = filepath.Join(links, "typo")
	_, err = s.Rollback(manifest, false, false)
	wantCode(t, err, ExitRefused, "nothing was recorded there (a typo in --backup-dir?)")
	if _, err := os.Stat(s.BackupDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("rollback created %s: %v", s.BackupDir, err)
	}
}

// TestBackupDirectoryOnABindMountOfTheManifests: the manifests directory bind-mounted elsewhere
// has other names and the same inode; a backup directory there is refused. The mount lives in a
// private mount namespace of a child process (unshare), so that nothing outlives the test.
func TestBackupDirectoryOnABindMountOfTheManifests(t *testing.T) {
	if mounted := os.Getenv("CPSWAP_TEST_BIND_MOUNT"); mounted != "" {
		manifest := os.Getenv("CPSWAP_TEST_MANIFEST")
		s := &Swapper{BackupDir: filepath.Join(mounted, "backups"), Timeout: time.Minute}
		_, err := s.Apply(context.Background(), manifest, Change{Image: newImage}, verifies())
		wantCode(t, err, ExitRefused, "(a bind mount or another path to it)")
		return
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 {
		t.Skipf("needs root and unshare(1): %v", err)
	}
	dir, manifest, _ := setup(t)
	mountpoint := t.TempDir()
	cmd := exec.Command(unshare, "--mount", "--propagation", "private", "sh", "-c",
		`mount --bind "$1" "$2" && exec "$3" -test.run '^TestBackupDirectoryOnABindMountOfTheManifests$' -test.v`,
		"sh", dir, mountpoint, os.Args[0])
	cmd.Env = append(os.Environ(), "CPSWAP_TEST_BIND_MOUNT="+mountpoint, "CPSWAP_TEST_MANIFEST="+manifest)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Errorf("in a mount namespace with %s bind-mounted at %s: %v\n%s", dir, mountpoint, err, out)
	}
	if got := listing(t, dir); got != "kube-apiserver.yaml kube-controller-manager.yaml kube-scheduler.yaml" {
		t.Errorf("the manifests directory holds %s", got)
	}
}

// TestSignalDuringThePreflightChangesNothing: a signal while the preflight runs stops the apply
// before the write, instead of swapping and restoring (two restarts of the component).
func TestSignalDuringThePreflightChangesNothing(t *testing.T) {
	_, manifest, s := setup(t)
	original := read(t, manifest)
	ctx, cancel := context.WithCancelCause(context.Background())
	v := &fakeVerifier{before: func(context.Context) error { cancel(errors.New("received interrupt")); return nil }}
	_, err := s.Apply(ctx, manifest, Change{Image: newImage}, v)
	wantCode(t, err, ExitRefused, "interrupted (received interrupt) before the manifest changed: nothing changed")
	if !bytes.Equal(read(t, manifest), original) || v.afterCalls != 0 {
		t.Errorf("the manifest was written (after calls %d)", v.afterCalls)
	}
	if p := s.Pending(manifest); p != "" {
		t.Errorf("a journal stays: %s", p)
	}
}
