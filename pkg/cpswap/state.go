package cpswap

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// State is what cpswap keeps about one manifest in the backup directory:
//
//	<manifest>.lock          flock'ed by the apply or rollback under way; holds its PID
//	<manifest>.journal       an apply under way: written before the manifest changes, removed
//	                         when it is verified or rolled back; left behind by a SIGKILL
//	<manifest>.history       the applies that succeeded, oldest first; rollback undoes the last
//	<manifest>.sha256-<hex>  backups, named by their content's sha256
//
// The directory must be owned by the user running cpswap (root on a master) and writable by
// nobody else, and every file restored from it must match the sha256 recorded for it: a backup
// is run by the kubelet as a privileged pod, so whoever can write there could otherwise choose
// what root installs.
type State struct {
	Dir      string // absolute, symlinks resolved
	Manifest string // absolute path of the manifest
	base     string
	// marker is the unfinished-apply marker beside the manifest (journalMarker), which every run
	// on the manifest reads, whatever its backup directory.
	marker string
}

// journalMarker is where an apply under way says, beside the manifest, which backup directory
// holds its journal: a run with another --backup-dir (or none of the same) still sees an apply
// that a killed cpswap left. A dot file: the kubelet skips those in the manifests directory.
func journalMarker(kubeletDir, manifest string) string {
	return filepath.Join(kubeletDir, "."+filepath.Base(manifest)+".cpswap-journal-in")
}

// marked is what the marker holds.
type marked struct {
	BackupDir string `json:"backupDir"`
	PID       int    `json:"pid"`
}

// Snapshot is one version of the manifest kept in the backup directory.
type Snapshot struct {
	Backup string `json:"backup"` // file name inside the backup directory
	SHA256 string `json:"sha256"`
}

// Entry is one apply.
type Entry struct {
	Time   time.Time `json:"time"`
	Before Snapshot  `json:"before"`
	After  Snapshot  `json:"after"`
	Image  string    `json:"image,omitempty"`
	Flags  []string  `json:"flags,omitempty"`
	// Result says how a finished entry ended ("verified: ..."); empty in a journal.
	Result string `json:"result,omitempty"`
	PID    int    `json:"pid,omitempty"`
}

// History is the chain of successful applies of one manifest.
type History struct {
	Manifest string  `json:"manifest"`
	Applied  []Entry `json:"applied"`
	// Overtaken lists the applies whose manifest someone else replaced during verification:
	// neither verified nor rolled back (their file was kept), and not in the chain rollback undoes.
	Overtaken []Entry `json:"overtaken,omitempty"`
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// OpenState checks the backup directory for manifest (both absolute) and creates it if needed.
// kubeletDir is the manifests directory as the kubelet reads it (symlinks resolved).
// With create false a missing directory is not created: the State then reads as empty.
func OpenState(backupDir, manifest, kubeletDir string, create bool) (*State, error) {
	if !filepath.IsAbs(backupDir) || !filepath.IsAbs(manifest) {
		return nil, fmt.Errorf("internal error: paths must be absolute")
	}
	// Checked before the directory is created, so that a wrong one is not created in place.
	if err := outside(kubeletDir, backupDir); err != nil {
		return nil, err
	}
	if err := vetPath(backupDir, kubeletDir); err != nil {
		return nil, err
	}
	marker := journalMarker(kubeletDir, manifest)
	if _, err := os.Stat(backupDir); !create && errors.Is(err, os.ErrNotExist) {
		return &State{Dir: backupDir, Manifest: manifest, base: filepath.Base(manifest), marker: marker}, nil
	}
	if err := os.MkdirAll(backupDir, 0o700); err != nil {
		return nil, fmt.Errorf("backup directory cannot be created: %v", err)
	}
	dir, err := filepath.EvalSymlinks(backupDir)
	if err != nil {
		return nil, fmt.Errorf("backup directory: %v", err)
	}
	if err := outside(kubeletDir, dir); err != nil {
		return nil, err
	}
	if err := private(dir); err != nil {
		return nil, err
	}
	return &State{Dir: dir, Manifest: manifest, base: filepath.Base(manifest), marker: marker}, nil
}

// vetPath checks the backup directory's path as given, before anything is created: no component
// is a symlink someone else owns (whoever owns it decides where root writes), and the directory
// lands outside the manifests directory once the part that exists is resolved (a symlink into it)
// and compared by identity (a bind mount of it elsewhere has other names, the same inode).
func vetPath(backupDir, kubeletDir string) error {
	euid := os.Geteuid()
	manifests, err := os.Stat(kubeletDir)
	if err != nil {
		return fmt.Errorf("manifests directory: %v", err)
	}
	existing, rest := "/", ""
	parts := strings.Split(strings.TrimPrefix(filepath.Clean(backupDir), "/"), "/")
	for i, part := range parts {
		prefix := filepath.Join(existing, part)
		info, err := os.Lstat(prefix)
		if errors.Is(err, os.ErrNotExist) {
			rest = filepath.Join(parts[i:]...)
			break
		}
		if err != nil {
			return fmt.Errorf("backup directory %s: %v", backupDir, err)
		}
		if info.Mode()&os.ModeSymlink != 0 {
			if owner := int(info.Sys().(*syscall.Stat_t).Uid); owner != 0 && owner != euid {
				return fmt.Errorf("backup directory %s goes through the symlink %s, owned by uid %d: whoever owns it decides where the backups go; give a path without it", backupDir, prefix, owner)
			}
		}
		existing = prefix
	}
	resolved, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return fmt.Errorf("backup directory %s: %v", backupDir, err)
	}
	if err := outside(kubeletDir, filepath.Join(resolved, rest)); err != nil {
		return fmt.Errorf("%v (reached through %s)", err, backupDir)
	}
	for dir := resolved; ; dir = filepath.Dir(dir) {
		if info, err := os.Stat(dir); err == nil && os.SameFile(info, manifests) {
			return fmt.Errorf("backup directory %s is inside the manifests directory %s, reached as %s (a bind mount or another path to it): the kubelet would run a backup as a second static pod", backupDir, kubeletDir, dir)
		}
		if dir == "/" {
			return nil
		}
	}
}

func outside(manifestDir, backupDir string) error {
	if rel, err := filepath.Rel(manifestDir, backupDir); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		return fmt.Errorf("backup directory %s is inside the manifests directory %s: the kubelet would run a backup as a second static pod", backupDir, manifestDir)
	}
	return nil
}

// private refuses a backup directory that someone other than us could write to: not ours, group
// or world writable, or below a directory others can write to without the sticky bit (they could
// rename ours away).
func private(dir string) error {
	euid := os.Geteuid()
	info, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return fmt.Errorf("backup directory %s is not a directory", dir)
	}
	st := info.Sys().(*syscall.Stat_t)
	if int(st.Uid) != euid {
		return fmt.Errorf("backup directory %s is owned by uid %d, not by uid %d that runs cpswap: whoever owns it could choose what rollback installs", dir, st.Uid, euid)
	}
	if info.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("backup directory %s is writable by others (mode %v): whoever can write there could choose what rollback installs; chmod go-w it", dir, info.Mode().Perm())
	}
	for parent := filepath.Dir(dir); ; parent = filepath.Dir(parent) {
		pinfo, err := os.Stat(parent)
		if err != nil {
			return err
		}
		owner := int(pinfo.Sys().(*syscall.Stat_t).Uid)
		if owner != 0 && owner != euid {
			return fmt.Errorf("backup directory %s is below %s, owned by uid %d, who could put another directory in its place", dir, parent, owner)
		}
		if pinfo.Mode().Perm()&0o022 != 0 && pinfo.Mode()&os.ModeSticky == 0 {
			return fmt.Errorf("backup directory %s is below %s, which others can write to (mode %v, no sticky bit)", dir, parent, pinfo.Mode().Perm())
		}
		if parent == "/" {
			return nil
		}
	}
}

func (s *State) path(suffix string) string { return filepath.Join(s.Dir, s.base+suffix) }

// Lock takes the manifest's apply lock without waiting; the error names the holder's PID.
func (s *State) Lock() (unlock func(), err error) {
	f, err := os.OpenFile(s.path(".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(f.Name())
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another cpswap (pid %s) is working on %s; wait for it to finish", strings.TrimSpace(string(holder)), s.Manifest)
		}
		return nil, fmt.Errorf("lock %s: %v", f.Name(), err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { f.Close() }, nil
}

// LockHolder returns the PID of a cpswap holding the lock, or 0.
func (s *State) LockHolder() int {
	f, err := os.Open(s.path(".lock"))
	if err != nil {
		return 0
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return 0
	}
	data, _ := os.ReadFile(f.Name())
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid
}

// Keep stores a version of the manifest and returns its snapshot.
func (s *State) Keep(data []byte) (Snapshot, error) {
	sum := sha256Hex(data)
	snap := Snapshot{Backup: s.base + ".sha256-" + sum, SHA256: sum}
	if existing, err := os.ReadFile(filepath.Join(s.Dir, snap.Backup)); err == nil && sha256Hex(existing) == sum {
		return snap, nil
	}
	_, err := writeAtomic(filepath.Join(s.Dir, snap.Backup), data, 0o600, nil)
	return snap, err
}

// Load reads a kept version and checks it against its recorded sha256.
func (s *State) Load(snap Snapshot) ([]byte, error) {
	if snap.Backup == "" || snap.Backup != filepath.Base(snap.Backup) || !strings.HasPrefix(snap.Backup, s.base+".") {
		return nil, fmt.Errorf("backup name %q is not a backup of %s in %s", snap.Backup, s.base, s.Dir)
	}
	path := filepath.Join(s.Dir, snap.Backup)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("backup %s: %v", path, err)
	}
	if got := sha256Hex(data); got != snap.SHA256 {
		return nil, fmt.Errorf("backup %s has sha256 %s, recorded %s: it changed since it was written; refusing to restore it", path, got, snap.SHA256)
	}
	return data, nil
}

func (s *State) readJSON(suffix string, v interface{}) (bool, error) {
	data, err := os.ReadFile(s.path(suffix))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("%s: %v", s.path(suffix), err)
	}
	return true, nil
}

func (s *State) writeJSON(suffix string, v interface{}) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = writeAtomic(s.path(suffix), append(data, '\n'), 0o600, nil)
	return err
}

// History reads the chain of applies.
func (s *State) History() (*History, error) {
	h := &History{Manifest: s.Manifest}
	if _, err := s.readJSON(".history", h); err != nil {
		return nil, err
	}
	if h.Manifest != s.Manifest {
		return nil, fmt.Errorf("%s is the history of %s, not of %s: use another --backup-dir", s.path(".history"), h.Manifest, s.Manifest)
	}
	return h, nil
}

// SaveHistory writes the chain of applies.
func (s *State) SaveHistory(h *History) error { return s.writeJSON(".history", h) }

// Journal returns the apply under way or left unfinished, if any.
func (s *State) Journal() (*Entry, error) {
	var e Entry
	found, err := s.readJSON(".journal", &e)
	if !found || err != nil {
		return nil, err
	}
	return &e, nil
}

// WriteJournal records an apply before the manifest changes: the journal, then the marker beside
// the manifest that names where the journal is.
func (s *State) WriteJournal(e *Entry) error {
	if err := s.writeJSON(".journal", e); err != nil {
		return err
	}
	data, err := json.Marshal(marked{BackupDir: s.Dir, PID: e.PID})
	if err != nil {
		return err
	}
	if _, err := writeAtomic(s.marker, append(data, '\n'), 0o600, nil); err != nil {
		return fmt.Errorf("marker beside the manifest: %v", err)
	}
	return nil
}

// ClearJournal ends an apply: the journal, then the marker if it names this backup directory.
func (s *State) ClearJournal() error {
	if err := os.Remove(s.path(".journal")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := syncDir(s.Dir); err != nil {
		return err
	}
	if m, err := s.readMarker(); err == nil && m != nil && m.BackupDir == s.Dir {
		if err := os.Remove(s.marker); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return syncDir(filepath.Dir(s.marker))
	}
	return nil
}

func (s *State) readMarker() (*marked, error) {
	data, err := os.ReadFile(s.marker)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m marked
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", s.marker, err)
	}
	return &m, nil
}

// Elsewhere returns the state of another backup directory that the marker beside the manifest
// names and whose journal is still there: an apply run with another --backup-dir that did not
// finish (or is under way). A marker whose journal is gone is stale and ignored.
func (s *State) Elsewhere() (*State, *Entry, error) {
	m, err := s.readMarker()
	if err != nil || m == nil || m.BackupDir == s.Dir {
		return nil, nil, err
	}
	other := &State{Dir: m.BackupDir, Manifest: s.Manifest, base: s.base, marker: s.marker}
	j, err := other.Journal()
	if err != nil || j == nil {
		return nil, nil, err
	}
	return other, j, nil
}

// writeAtomic writes a file through a temporary file in the same directory, hidden by a leading
// dot (the kubelet skips dot files in the manifests directory), synced, with mode and, when owner
// is given, its owner, renamed over the file; then the directory is synced, so that a crash leaves
// the old file or the new one, never a mix.
// renamed says whether the new file is in place even though err is set (only the directory sync
// failed).
func writeAtomic(path string, data []byte, mode os.FileMode, owner *syscall.Stat_t) (renamed bool, err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".cpswap-*")
	if err != nil {
		return false, fmt.Errorf("temporary file: %v", err)
	}
	defer os.Remove(tmp.Name())
	err = func() error {
		defer tmp.Close()
		if _, err := tmp.Write(data); err != nil {
			return err
		}
		if err := tmp.Chmod(mode); err != nil {
			return err
		}
		if owner != nil {
			if err := tmp.Chown(int(owner.Uid), int(owner.Gid)); err != nil {
				return err
			}
		}
		return tmp.Sync()
	}()
	if err != nil {
		return false, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return false, fmt.Errorf("replacing %s: %v", path, err)
	}
	return true, syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
