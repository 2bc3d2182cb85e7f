package cpswap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Swapper writes manifests safely. Backups go to BackupDir, which must be outside the manifests
// directory (the kubelet runs every file there as a static pod) and on the same filesystem (so
// the final rename is atomic).
type Swapper struct {
	BackupDir string
	// Now stamps backup names; time.Now unless a test sets it.
	Now func() time.Time
}

// Verifier reports whether the restarted component is healthy; nil means verified.
type Verifier func(ctx context.Context) error

func (s *Swapper) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Swapper) checkPaths(manifest string) (manifestDir, backupDir string, err error) {
	manifestDir, err = filepath.EvalSymlinks(filepath.Dir(manifest))
	if err != nil {
		return "", "", fmt.Errorf("manifests directory: %v", err)
	}
	if s.BackupDir == "" {
		return "", "", errors.New("no backup directory given (--backup-dir)")
	}
	// Checked before the directory is created, so that a wrong one is not created in place.
	if abs, err := filepath.Abs(s.BackupDir); err == nil {
		if err := outside(manifestDir, abs); err != nil {
			return "", "", err
		}
	}
	if err := os.MkdirAll(s.BackupDir, 0o700); err != nil {
		return "", "", fmt.Errorf("backup cannot be written: %v", err)
	}
	backupDir, err = filepath.EvalSymlinks(s.BackupDir)
	if err != nil {
		return "", "", fmt.Errorf("backup directory: %v", err)
	}
	if err := outside(manifestDir, backupDir); err != nil {
		return "", "", err
	}
	if err := writable(manifestDir); err != nil {
		return "", "", err
	}
	return manifestDir, backupDir, nil
}

func outside(manifestDir, backupDir string) error {
	if rel, err := filepath.Rel(manifestDir, backupDir); err == nil && !strings.HasPrefix(rel, "..") {
		return fmt.Errorf("backup directory %s is inside the manifests directory %s: the kubelet would run a backup as a second static pod", backupDir, manifestDir)
	}
	return nil
}

// writable refuses a read-only manifests directory: a read-only mount, or no write permission
// bits at all (which root would otherwise ignore).
func writable(dir string) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err == nil && st.Flags&0x1 != 0 { // ST_RDONLY
		return fmt.Errorf("manifests directory %s is on a read-only filesystem", dir)
	}
	info, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if info.Mode().Perm()&0o222 == 0 {
		return fmt.Errorf("manifests directory %s is read-only (mode %v)", dir, info.Mode().Perm())
	}
	return syscall.Access(dir, 2) // W_OK
}

// Plan returns the new manifest and its diff against the current one, changing nothing.
func Plan(manifest string, change Change) (before, after []byte, diff string, err error) {
	before, err = os.ReadFile(manifest)
	if err != nil {
		return nil, nil, "", err
	}
	after, err = Apply(before, change)
	if err != nil {
		return nil, nil, "", fmt.Errorf("%s: %v", manifest, err)
	}
	return before, after, Diff(manifest, before, after), nil
}

// Apply backs the manifest up, writes the changed one atomically, runs verify, and restores the
// backup if verification fails. It returns the backup's path.
func (s *Swapper) Apply(ctx context.Context, manifest string, change Change, verify Verifier) (string, error) {
	before, after, _, err := Plan(manifest, change)
	if err != nil {
		return "", err
	}
	_, backupDir, err := s.checkPaths(manifest)
	if err != nil {
		return "", err
	}
	info, err := os.Stat(manifest)
	if err != nil {
		return "", err
	}
	backup := filepath.Join(backupDir, fmt.Sprintf("%s.%s", filepath.Base(manifest), s.now().UTC().Format("20060102T150405.000000000Z")))
	if err := writeFileSynced(backup, before, info.Mode().Perm()); err != nil {
		return "", fmt.Errorf("backup cannot be written: %v", err)
	}
	if err := writeFileSynced(lastBackupPointer(backupDir, manifest), []byte(backup+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("backup cannot be written: %v", err)
	}
	if err := s.replace(manifest, after, info); err != nil {
		return backup, err
	}
	if verify == nil {
		return backup, nil
	}
	if verr := verify(ctx); verr != nil {
		if rerr := s.replace(manifest, before, info); rerr != nil {
			return backup, fmt.Errorf("verification failed (%v) and rolling back failed too: %v; the original is in %s", verr, rerr, backup)
		}
		return backup, fmt.Errorf("verification failed, rolled back to the original manifest (backup %s): %v", backup, verr)
	}
	return backup, nil
}

// Rollback restores the manifest from its last backup.
func (s *Swapper) Rollback(manifest string) (string, error) {
	_, backupDir, err := s.checkPaths(manifest)
	if err != nil {
		return "", err
	}
	pointer, err := os.ReadFile(lastBackupPointer(backupDir, manifest))
	if err != nil {
		return "", fmt.Errorf("no backup of %s in %s: %v", manifest, backupDir, err)
	}
	backup := strings.TrimSpace(string(pointer))
	data, err := os.ReadFile(backup)
	if err != nil {
		return "", fmt.Errorf("reading backup: %v", err)
	}
	if _, err := Parse(data); err != nil {
		return "", fmt.Errorf("backup %s: %v", backup, err)
	}
	info, err := os.Stat(manifest)
	if err != nil {
		return "", err
	}
	return backup, s.replace(manifest, data, info)
}

func lastBackupPointer(backupDir, manifest string) string {
	return filepath.Join(backupDir, filepath.Base(manifest)+".last-backup")
}

// replace writes data over manifest atomically: a temporary file in the backup directory (never
// in the manifests directory, where the kubelet would pick it up), synced, with the original's
// mode and owner, renamed over the manifest; then the directory is synced.
func (s *Swapper) replace(manifest string, data []byte, original os.FileInfo) error {
	tmp, err := os.CreateTemp(s.BackupDir, "."+filepath.Base(manifest)+".new-*")
	if err != nil {
		return fmt.Errorf("temporary file: %v", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(original.Mode().Perm()); err != nil {
		tmp.Close()
		return err
	}
	if st, ok := original.Sys().(*syscall.Stat_t); ok {
		if err := tmp.Chown(int(st.Uid), int(st.Gid)); err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), manifest); err != nil {
		if errors.Is(err, syscall.EXDEV) {
			return fmt.Errorf("backup directory %s is on another filesystem than %s: the write could not be atomic; nothing changed", s.BackupDir, manifest)
		}
		return fmt.Errorf("replacing %s: %v", manifest, err)
	}
	dir, err := os.Open(filepath.Dir(manifest))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}

func writeFileSynced(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
