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

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// Exit codes of cpswap, one per outcome an operator must tell apart.
const (
	ExitOK         = 0 // done (verified, restored, or nothing to change)
	ExitRefused    = 1 // refused or failed before the manifest changed: nothing changed
	ExitUsage      = 2 // the command line is wrong: nothing changed
	ExitRolledBack = 3 // the change was made, then undone: the manifest is as it was
	ExitBroken     = 4 // the change was made and could not be undone: act now
)

// Failure is an error with the exit code that says what state it left.
type Failure struct {
	Code int
	Err  error
}

func (f *Failure) Error() string { return f.Err.Error() }
func (f *Failure) Unwrap() error { return f.Err }

func refused(format string, args ...interface{}) error {
	return &Failure{Code: ExitRefused, Err: fmt.Errorf(format, args...)}
}

// refusedAt refuses with nothing changed, naming the step that failed.
func refusedAt(step string, err error) error {
	return &Failure{Code: ExitRefused, Err: fmt.Errorf("%s: %w", step, err)}
}

// ExitCode maps an error from this package to cpswap's exit code.
func ExitCode(err error) int {
	var f *Failure
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &f):
		return f.Code
	default:
		return ExitRefused
	}
}

// Verifier proves that the kubelet runs the changed manifest.
type Verifier interface {
	// Before runs before the manifest changes: it checks that verification can work at all and
	// notes what runs now. An error refuses the apply with nothing changed.
	Before(ctx context.Context) error
	// After waits for the restarted component and says what it found, or why it does not verify.
	After(ctx context.Context) (string, error)
}

// Swapper applies and rolls back changes to static-pod manifests.
type Swapper struct {
	BackupDir string
	// Timeout bounds the verification after the manifest changed.
	Timeout time.Duration
	// Log receives progress lines; nil drops them.
	Log func(format string, args ...interface{})
	// Now stamps history entries; time.Now unless a test sets it.
	Now func() time.Time
	// restoreFile writes the original back after a failed apply; replace unless a test makes it
	// fail (root can write anywhere a test can set up, short of a read-only mount).
	restoreFile func(file string, data []byte, original os.FileInfo) (renamed bool, err error)
}

func (s *Swapper) logf(format string, args ...interface{}) {
	if s.Log != nil {
		s.Log(format, args...)
	}
}

func (s *Swapper) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// target is a manifest as the kubelet sees it and as cpswap writes it.
type target struct {
	path       string // absolute, as given (may be a symlink)
	file       string // the regular file behind it
	kubeletDir string // the manifests directory, symlinks resolved
}

func resolve(manifest string) (target, error) {
	abs, err := filepath.Abs(manifest)
	if err != nil {
		return target{}, err
	}
	t := target{path: abs}
	if t.file, err = filepath.EvalSymlinks(abs); err != nil {
		return target{}, fmt.Errorf("manifest %s: %v", manifest, err)
	}
	if t.kubeletDir, err = filepath.EvalSymlinks(filepath.Dir(abs)); err != nil {
		return target{}, fmt.Errorf("manifests directory: %v", err)
	}
	return t, nil
}

// open resolves the manifest and the backup directory and checks both.
func (s *Swapper) open(manifest string, create bool) (target, *State, error) {
	t, err := resolve(manifest)
	if err != nil {
		return t, nil, refusedAt("manifest", err)
	}
	if s.BackupDir == "" {
		return t, nil, refused("no backup directory given (--backup-dir)")
	}
	backupDir, err := filepath.Abs(s.BackupDir)
	if err != nil {
		return t, nil, refusedAt("backup directory", err)
	}
	st, err := OpenState(backupDir, t.path, t.kubeletDir, create)
	if err != nil {
		return t, nil, refusedAt("backup directory", err)
	}
	return t, st, nil
}

// Plan returns the change as it would be made, changing nothing.
func Plan(manifest string, change Change) (*Edited, error) {
	data, err := os.ReadFile(manifest)
	if err != nil {
		return nil, refusedAt("reading the manifest", err)
	}
	e, err := Edit(data, change)
	if err != nil {
		return nil, refused("%s: %v", manifest, err)
	}
	return e, nil
}

// Applied is what a successful Apply did.
type Applied struct {
	Edited   *Edited
	Entry    Entry // zero when nothing changed
	Verified string
}

// Apply makes the change under the manifest's lock: preflight, journal, backup, atomic write,
// verification; on a verification failure or when ctx is cancelled (a signal), it restores the
// manifest as it was. Only a verified apply enters the history.
func (s *Swapper) Apply(ctx context.Context, manifest string, change Change, verify Verifier) (*Applied, error) {
	if s.Timeout <= 0 {
		return nil, refused("--timeout must be positive, got %v: a verification with no time to run would always roll back", s.Timeout)
	}
	t, st, unlock, err := s.openLocked(manifest, true)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if j, err := st.Journal(); err != nil || j != nil {
		if err != nil {
			return nil, refusedAt("reading the journal", err)
		}
		return nil, refused("%s", unfinished(j, t, st))
	}
	if other, j, err := st.Elsewhere(); err != nil || j != nil {
		if err != nil {
			return nil, refusedAt("reading the journal another backup directory holds", err)
		}
		return nil, refused("%s", unfinished(j, t, other))
	}
	history, err := st.History()
	if err != nil {
		return nil, refusedAt("reading the history", err)
	}
	edited, err := Plan(t.file, change)
	if err != nil {
		return nil, err
	}
	if edited.Unchanged() {
		return &Applied{Edited: edited}, nil
	}
	info, err := os.Stat(t.file)
	if err != nil {
		return nil, refusedAt("reading the manifest's mode and owner", err)
	}
	if err := writable(filepath.Dir(t.file)); err != nil {
		return nil, refusedAt("manifests directory", err)
	}
	before, err := st.Keep(edited.Before)
	if err != nil {
		return nil, refused("backup cannot be written: %v", err)
	}
	after, err := st.Keep(edited.After)
	if err != nil {
		return nil, refused("backup cannot be written: %v", err)
	}
	entry := Entry{Time: s.now().UTC(), Before: before, After: after, Image: change.Image, Flags: edited.Flags, PID: os.Getpid()}
	if err := st.WriteJournal(&entry); err != nil {
		return nil, abandon(st, refused("journal cannot be written: %v", err))
	}
	// Last, so that the processes it notes are those that run right before the change.
	if err := verify.Before(ctx); err != nil {
		return nil, abandon(st, refused("before changing anything: %v", err))
	}
	// A signal during the preflight: stop before the write, rather than swap and restore (which
	// restarts the component twice).
	if cause := context.Cause(ctx); cause != nil {
		return nil, abandon(st, refused("interrupted (%v) before the manifest changed: nothing changed", cause))
	}
	if renamed, err := replace(t.file, edited.After, info); err != nil && !renamed {
		return nil, abandon(st, refusedAt("writing the manifest", err))
	} else if err != nil {
		return nil, s.restore(t, st, edited.Before, info, before, err)
	}
	s.logf("wrote %s (sha256 %s); waiting up to %v for the kubelet to run it", t.path, after.SHA256[:12], s.Timeout)

	vctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	verified, verr := verify.After(vctx)
	if err := s.overtaken(t, st, history, entry); err != nil {
		return nil, err
	}
	if verr == nil && ctx.Err() == nil {
		entry.Result = "verified: " + verified
		entry.PID = 0
		history.Applied = append(history.Applied, entry)
		if err := st.SaveHistory(history); err != nil {
			return nil, &Failure{Code: ExitBroken, Err: fmt.Errorf("verified, but the history cannot be written: %v; the journal %s stays", err, st.path(".journal"))}
		}
		if err := st.ClearJournal(); err != nil {
			return nil, &Failure{Code: ExitBroken, Err: err}
		}
		return &Applied{Edited: edited, Entry: entry, Verified: verified}, nil
	}
	if cause := context.Cause(ctx); cause != nil {
		verr = fmt.Errorf("interrupted (%v)", cause)
	}
	return nil, s.restore(t, st, edited.Before, info, before, verr)
}

// abandon ends an apply refused before the manifest changed: its journal (and marker) go. If they
// cannot, the refusal says so: the next run would report an unfinished apply that changed nothing.
func abandon(st *State, refusal error) error {
	if err := st.ClearJournal(); err != nil {
		return &Failure{Code: ExitRefused, Err: fmt.Errorf("%v; nothing changed, but the journal %s could not be removed (%v): remove it by hand", refusal, st.path(".journal"), err)}
	}
	return refusal
}

// overtaken checks, before an apply records its success or restores the original, that the
// manifest is still what it wrote. If another writer (a kubeadm upgrade, a configuration tool, a
// colleague) replaced it during verification, what verified or failed was not our change, and a
// restore would overwrite theirs: their file is kept, the apply is recorded as overtaken, and the
// error says so (exit 4: the master runs what nobody here verified).
func (s *Swapper) overtaken(t target, st *State, history *History, entry Entry) error {
	current, err := os.ReadFile(t.file)
	if err == nil && sha256Hex(current) == entry.After.SHA256 {
		return nil
	}
	now := "removed"
	switch {
	case err == nil:
		now = "sha256 " + sha256Hex(current)[:12]
	case !errors.Is(err, os.ErrNotExist):
		now = fmt.Sprintf("unreadable: %v", err)
	}
	entry.Result = fmt.Sprintf("overtaken: changed by someone else during verification (now %s); their file was kept", now)
	entry.PID = 0
	history.Overtaken = append(history.Overtaken, entry)
	why := fmt.Errorf("%s was changed by someone else during verification (cpswap wrote sha256 %s, it is now %s): "+
		"their file is kept, and nothing was verified or rolled back; find out who changed it (a kubeadm upgrade, a configuration tool, a colleague) before running cpswap again. "+
		"The manifest as it was before this apply is %s: copy it to %s to go back by hand",
		t.path, entry.After.SHA256[:12], now, filepath.Join(st.Dir, entry.Before.Backup), t.path)
	s.logf("%v", why)
	if err := st.SaveHistory(history); err != nil {
		return &Failure{Code: ExitBroken, Err: fmt.Errorf("%v; the history cannot be written: %v; the journal %s stays", why, err, st.path(".journal"))}
	}
	if err := st.ClearJournal(); err != nil {
		return &Failure{Code: ExitBroken, Err: fmt.Errorf("%v; the journal cannot be removed: %v", why, err)}
	}
	return &Failure{Code: ExitBroken, Err: why}
}

// restore puts the original back after a change that did not verify, and says what state that
// left: rolled back (exit 3), or not (exit 4, the journal stays for the next run).
func (s *Swapper) restore(t target, st *State, original []byte, info os.FileInfo, backup Snapshot, why error) error {
	s.logf("%v: restoring %s", why, t.path)
	write := s.restoreFile
	if write == nil {
		write = replace
	}
	if _, err := write(t.file, original, info); err != nil {
		return &Failure{Code: ExitBroken, Err: fmt.Errorf("%v, and restoring the original failed: %v. The original is %s; copy it over %s by hand", why, err, filepath.Join(st.Dir, backup.Backup), t.path)}
	}
	if err := st.ClearJournal(); err != nil {
		return &Failure{Code: ExitBroken, Err: fmt.Errorf("%v; the original is back, but the journal cannot be removed: %v", why, err)}
	}
	return &Failure{Code: ExitRolledBack, Err: fmt.Errorf("%v; rolled back: %s is as it was (sha256 %s)", why, t.path, backup.SHA256[:12])}
}

// pending describes an apply that a killed cpswap left (a journal that no running cpswap holds),
// or "" when there is none.
func (st *State) pending(t target) string {
	if j, err := st.Journal(); err == nil && j != nil && st.LockHolder() == 0 {
		return unfinished(j, t, st)
	}
	if other, j, err := st.Elsewhere(); err == nil && j != nil && other.LockHolder() == 0 {
		return unfinished(j, t, other)
	}
	return ""
}

// unfinished describes an apply that a killed cpswap left, and what rollback would do.
func unfinished(j *Entry, t target, st *State) string {
	now := "neither the original nor the new manifest: it was edited since"
	if data, err := os.ReadFile(t.file); err == nil {
		switch sha256Hex(data) {
		case j.After.SHA256:
			now = "the new, unverified manifest"
		case j.Before.SHA256:
			now = "the original again"
		}
	}
	return fmt.Sprintf("an apply started %s by pid %d did not finish (the process was killed): %s now holds %s; `cpswap rollback` would restore %s (sha256 %s): give it --backup-dir %s, where that apply's journal is",
		j.Time.Format(time.RFC3339), j.PID, t.path, now, filepath.Join(st.Dir, j.Before.Backup), j.Before.SHA256[:12], st.Dir)
}

// Rolled is what a Rollback did.
type Rolled struct {
	From, To string // sha256 of the manifest before and after
	Backup   string // path of the restored backup
	// Undone is the apply undone; nil for an unfinished apply.
	Undone *Entry
	// Next is the apply the next rollback would undo, if any.
	Next *Entry
}

// Rollback undoes the last successful apply (or, with toOriginal, every apply), or an apply a
// killed cpswap left unfinished. A manifest edited since the apply it would undo is refused
// unless force is set.
func (s *Swapper) Rollback(manifest string, toOriginal, force bool) (*Rolled, error) {
	t, st, unlock, err := s.openLocked(manifest, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	current, err := os.ReadFile(t.file)
	if err != nil {
		return nil, refusedAt("reading the manifest", err)
	}
	info, err := os.Stat(t.file)
	if err != nil {
		return nil, refusedAt("reading the manifest's mode and owner", err)
	}
	currentSum := sha256Hex(current)
	history, err := st.History()
	if err != nil {
		return nil, refusedAt("reading the history", err)
	}
	j, err := st.Journal()
	if err != nil {
		return nil, refusedAt("reading the journal", err)
	}
	if j == nil {
		// An unfinished apply run with another backup directory comes first: undoing an older
		// apply from this one would leave that journal behind, to restore over this rollback later.
		if other, oj, err := st.Elsewhere(); err != nil || oj != nil {
			if err != nil {
				return nil, refusedAt("reading the journal another backup directory holds", err)
			}
			return nil, refused("%s; this rollback, with --backup-dir %s, would not undo it", unfinished(oj, t, other), st.Dir)
		}
	}
	var snap Snapshot
	var expect string
	var undone *Entry
	switch {
	case j != nil && toOriginal:
		return nil, refused("%s; that comes first: run `cpswap rollback` without --to original, then with it", unfinished(j, t, st))
	case j != nil:
		snap, expect = j.Before, j.After.SHA256
		if currentSum == j.Before.SHA256 {
			expect = currentSum
		}
	case len(history.Applied) == 0:
		return nil, refused("no apply of %s is recorded in %s: nothing to roll back", t.path, st.Dir)
	default:
		i := len(history.Applied) - 1
		if toOriginal {
			i = 0
		}
		undone = &history.Applied[i]
		snap, expect = undone.Before, history.Applied[len(history.Applied)-1].After.SHA256
		if toOriginal && !force {
			if gap := editedBetween(history.Applied); gap != "" {
				return nil, refused("%s: rolling back to the original would lose that edit; roll back one apply at a time, or use --force", gap)
			}
		}
	}
	if undone != nil && currentSum == undone.Before.SHA256 {
		expect = currentSum // restored already by a rollback that was killed before its history was written
	}
	if currentSum != expect && !force {
		return nil, refused("%s has sha256 %s, but the apply being undone left %s: it was edited since. Rolling back would lose that edit; use --force to roll back anyway", t.path, currentSum[:12], expect[:12])
	}
	data, err := st.Load(snap)
	if err != nil {
		return nil, refusedAt("the backup to restore", err)
	}
	if foreign, lockMove := checkRestore(current, data); foreign != nil {
		return nil, refused("backup %s: %v", filepath.Join(st.Dir, snap.Backup), foreign)
	} else if lockMove != nil && !force {
		return nil, refused("rolling back to %s: %v (use --force once every other master runs a lock that shares an object with it)", filepath.Join(st.Dir, snap.Backup), lockMove)
	}
	if currentSum != snap.SHA256 { // else a rollback killed after restoring: finish its bookkeeping
		if renamed, err := replace(t.file, data, info); err != nil && !renamed {
			return nil, refusedAt("restoring the manifest", err)
		} else if err != nil {
			return nil, &Failure{Code: ExitBroken, Err: fmt.Errorf("restored %s, but syncing its directory failed: %v; check the file", t.path, err)}
		}
	}
	out := &Rolled{From: currentSum, To: snap.SHA256, Backup: filepath.Join(st.Dir, snap.Backup)}
	if j != nil {
		if err := st.ClearJournal(); err != nil {
			return nil, &Failure{Code: ExitBroken, Err: fmt.Errorf("restored %s, but the journal cannot be removed: %v", t.path, err)}
		}
		return out, nil
	}
	u := *undone
	out.Undone = &u
	if toOriginal {
		history.Applied = nil
	} else {
		history.Applied = history.Applied[:len(history.Applied)-1]
	}
	if n := len(history.Applied); n > 0 {
		next := history.Applied[n-1]
		out.Next = &next
	}
	if err := st.SaveHistory(history); err != nil {
		return nil, &Failure{Code: ExitBroken, Err: fmt.Errorf("restored %s, but the history cannot be written: %v", t.path, err)}
	}
	return out, nil
}

// editedBetween describes the first hand edit between two recorded applies (one that started
// from something other than what the one before it left), or returns "".
func editedBetween(applied []Entry) string {
	for k := 1; k < len(applied); k++ {
		if prev, next := applied[k-1], applied[k]; next.Before.SHA256 != prev.After.SHA256 {
			return fmt.Sprintf("the manifest was edited between the apply of %s (which left sha256 %s) and that of %s (which found sha256 %s)",
				prev.Time.Format(time.RFC3339), prev.After.SHA256[:12], next.Time.Format(time.RFC3339), next.Before.SHA256[:12])
		}
	}
	return ""
}

// checkRestore reads the manifest in place and the one a rollback would restore. foreign: the
// restored one is another component's (or no Pod), never to be restored. lockMove: apply's
// leader-election checks fail for it, since going back from leases to endpoints in one step gives
// two leaders as surely as going forward would. A current manifest that does not parse is no
// reason to refuse: any valid Pod of ours is better.
func checkRestore(current, restored []byte) (foreign, lockMove error) {
	old, err := Parse(restored)
	if err != nil {
		return err, nil
	}
	cur, err := Parse(current)
	if err != nil {
		return nil, nil
	}
	if a, b := podIdentity(cur), podIdentity(old); a != b {
		return fmt.Errorf("it is the manifest of %s, this is the manifest of %s", b, a), nil
	}
	for i := range cur.Spec.Containers {
		c, _ := container(old, cur.Spec.Containers[i].Name)
		if _, err := checkLeaderElection(parseCommandLine(&cur.Spec.Containers[i]), parseCommandLine(c)); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// podIdentity names a static pod and its containers.
func podIdentity(p *v1.Pod) string {
	var names []string
	for _, c := range p.Spec.Containers {
		names = append(names, c.Name)
	}
	return fmt.Sprintf("pod %s (containers %s)", p.Name, strings.Join(names, ", "))
}

// replace writes data over file atomically with the original's mode and owner (writeAtomic). A
// symlinked manifest stays a symlink: file is the regular file behind it.
func replace(file string, data []byte, original os.FileInfo) (renamed bool, err error) {
	owner, _ := original.Sys().(*syscall.Stat_t)
	return writeAtomic(file, data, original.Mode().Perm(), owner)
}

// openLocked opens the manifest and its state for a change, under lockManifest. With create
// false (rollback) a backup directory that does not exist is refused, not created: it holds
// nothing to roll back to, and is most likely a typo.
func (s *Swapper) openLocked(manifest string, create bool) (target, *State, func(), error) {
	t, st, err := s.open(manifest, create)
	if err != nil {
		return t, nil, nil, err
	}
	if _, err := os.Stat(st.Dir); !create && errors.Is(err, os.ErrNotExist) {
		return t, nil, nil, refused("no backup directory %s: nothing was recorded there (a typo in --backup-dir?)", st.Dir)
	}
	unlock, err := st.lockManifest(t)
	if err != nil {
		return t, nil, nil, &Failure{Code: ExitRefused, Err: err} // it names the other cpswap already
	}
	return t, st, unlock, nil
}

// lockManifest takes the manifest's lock beside the backups (it names the holder's PID) and the
// manifests directory's lock, without waiting.
func (st *State) lockManifest(t target) (unlock func(), err error) {
	unlockState, err := st.Lock()
	if err != nil {
		return nil, err
	}
	unlockDir, err := lockDir(t.kubeletDir)
	if err != nil {
		unlockState()
		return nil, err
	}
	return func() { unlockDir(); unlockState() }, nil
}

// lockDir takes a lock on the manifests directory without waiting, so that two cpswaps given
// different backup directories cannot change manifests there at once either.
func lockDir(dir string) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another cpswap is changing a manifest in %s (with another --backup-dir?); wait for it to finish", dir)
		}
		return nil, fmt.Errorf("lock %s: %v", dir, err)
	}
	return func() { f.Close() }, nil
}

// writable refuses a read-only manifests directory: a read-only mount, or no write permission
// bits at all (which root would otherwise ignore).
func writable(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err == nil && st.Flags&unix.ST_RDONLY != 0 {
		return fmt.Errorf("manifests directory %s is on a read-only filesystem", dir)
	}
	info, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if info.Mode().Perm()&0o222 == 0 {
		return fmt.Errorf("manifests directory %s is read-only (mode %v)", dir, info.Mode().Perm())
	}
	return unix.Access(dir, unix.W_OK)
}

// Status is what a manifest runs now and what cpswap knows about it.
type Status struct {
	Manifest, SHA256 string
	Container        string
	Component        string // what the container runs (kube-apiserver elects no leader: no lock)
	Image            string
	Flags            map[string]string // the lock and the profiles' flags, as the component reads them
	Process          *Process
	ProcessStarted   time.Time
	// ProcessRunsManifest: Process's command line ends with the manifest's flags; otherwise it
	// is only the newest process of that name.
	ProcessRunsManifest bool
	// RollbackTarget is the apply `cpswap rollback` would undo, if any.
	RollbackTarget *Entry
	Applies        int
	// Unfinished describes an apply a killed cpswap left; InProgress is the PID of a running one.
	Unfinished string
	InProgress int
}

// StatusOf reads the manifest, the process running it and the state in the backup directory.
func (s *Swapper) StatusOf(manifest, containerName, processName string, procs Processes) (*Status, error) {
	t, st, err := s.open(manifest, false)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(t.file)
	if err != nil {
		return nil, refusedAt("reading the manifest", err)
	}
	pod, err := Parse(data)
	if err != nil {
		return nil, refused("%s: %v", t.path, err)
	}
	c, err := container(pod, containerName)
	if err != nil {
		return nil, refused("%s: %v", t.path, err)
	}
	cl := parseCommandLine(c)
	out := &Status{Manifest: t.path, SHA256: sha256Hex(data), Container: c.Name, Component: componentOf(c, cl), Image: c.Image, Flags: map[string]string{}}
	names := []string{lockFlag, "--leader-elect", "--config"}
	for _, p := range Profiles {
		for _, f := range p.Flags {
			names = append(names, f.Name)
		}
	}
	for _, name := range names {
		if v, ok := cl.Value(name); ok {
			out.Flags[name] = v
		}
	}
	if processName == "" {
		processName = out.Component
	}
	// The process running this manifest: its command line ends with the manifest's flags (another
	// process of that name on the host is not it). Failing that, the newest of that name, said so.
	var running []Process
	args, err := containerArgs(c)
	if err == nil {
		running, err = procs.named(processName, args)
	}
	out.ProcessRunsManifest = err == nil && len(running) > 0
	if !out.ProcessRunsManifest {
		running, err = procs.Named(processName)
	}
	if err == nil && len(running) > 0 {
		newest := running[len(running)-1]
		out.Process = &newest
		out.ProcessStarted, _ = procs.StartedAt(newest)
	}
	history, err := st.History()
	if err != nil {
		return nil, refusedAt("reading the history", err)
	}
	out.Applies = len(history.Applied)
	if n := len(history.Applied); n > 0 {
		last := history.Applied[n-1]
		out.RollbackTarget = &last
	}
	out.InProgress = st.LockHolder()
	out.Unfinished = st.pending(t)
	return out, nil
}

// HistoryOf returns the chain of applies and, if one was left unfinished, its description.
func (s *Swapper) HistoryOf(manifest string) (*History, string, error) {
	t, st, err := s.open(manifest, false)
	if err != nil {
		return nil, "", err
	}
	h, err := st.History()
	if err != nil {
		return nil, "", refusedAt("reading the history", err)
	}
	return h, st.pending(t), nil
}

// Pending describes an apply a killed cpswap left on manifest, or "" (for plan, which reads no
// lock: any cpswap run on that manifest reports it).
func (s *Swapper) Pending(manifest string) string {
	t, st, err := s.open(manifest, false)
	if err != nil {
		return ""
	}
	return st.pending(t)
}
