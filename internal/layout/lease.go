package layout

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// A parallel worker's worktree is leased by holding that worktree's own
// agent lock (Acquire on its Tree) for the worker's whole life. TakeLease
// is the other side: a pruner that may remove a worktree only while it
// holds the lease itself.

// ErrLeaseHeld says a live worker holds the worktree's lease.
var ErrLeaseHeld = errors.New("worktree lease is held")

// ErrTreeGone says the worktree vanished while its lease was being taken.
var ErrTreeGone = errors.New("worktree is gone")

// Lease is a worktree lease taken by a pruner; Close frees it.
type Lease struct{ f, second *os.File }

// Close releases the lease.
func (l *Lease) Close() error {
	if l.second != nil {
		l.second.Close()
	}
	return l.f.Close()
}

// LeaseLinkName is the agent lock file's second name, in the tree's own
// git directory (.git/ for the main tree, .git/worktrees/<id>/ for a
// linked worktree, where the lock is a parallel worker's lease). An
// agent's rm -rf .ralph, or a git clean -x by git's full path, takes the
// name in the tree away: the holder keeps its lock on a file no longer
// there, and another wiggum - or a pruner - that made a new one took it,
// so two agents worked one tree, or a live worktree was removed. This name
// stays, and every acquirer, probe and pruner meets the holder's lock
// through it (Acquire, Probe, TakeLease).
const LeaseLinkName = "wiggum-lease"

// leaseLink is the path of the second name for the tree at root, in its
// git directory; "" when it has none.
func leaseLink(root string) string {
	dir := GitDir(root)
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, LeaseLinkName)
}

// GitDir is the git directory of the working tree at root: its .git when
// that is a directory, else the one its .git file names (a linked
// worktree's .git/worktrees/<id>, a submodule's); "" when root holds no
// readable .git.
func GitDir(root string) string {
	dotgit := filepath.Join(root, ".git")
	fi, err := os.Stat(dotgit)
	if err != nil {
		return ""
	}
	if fi.IsDir() {
		return dotgit
	}
	data, err := statefile.ReadFile(dotgit)
	if err != nil {
		return ""
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: ")
	if !ok || dir == "" {
		return ""
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	return dir
}

// LinkSecondName gives the file at path the second name link (replacing
// an older one) by a hard link made aside and renamed into place. Best
// effort: a git directory on another file system can hold no link, and
// the file then has its one name, as before.
func LinkSecondName(path, link string) {
	if link == "" {
		return
	}
	if fi, err := os.Stat(path); err == nil {
		if li, err := os.Stat(link); err == nil && os.SameFile(fi, li) {
			return
		}
	}
	tmp := link + ".tmp"
	_ = os.Remove(tmp)
	if os.Link(path, tmp) == nil {
		// A rename onto another name of the same file does nothing and
		// succeeds (POSIX), and one onto a directory fails: either way
		// tmp would stay, a stray third name.
		if os.Rename(tmp, link) != nil || exists(tmp) {
			_ = os.Remove(tmp)
		}
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// lockSecond opens and locks (exclusive flock, tried until deadline;
// zero: once) the lock's second name link; nil when it has none yet.
// syscall.EWOULDBLOCK when another process holds it.
func lockSecond(ctx context.Context, link string, deadline time.Time) (*os.File, error) {
	if link == "" {
		return nil, nil
	}
	f, err := os.OpenFile(link, os.O_RDWR, 0)
	if err != nil {
		return nil, nil
	}
	if err := flockUntil(ctx, f, deadline); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// TakeLease locks the lease of the worktree rooted at t.Root without
// waiting, and checks that the file locked is still the one in place:
// another pruner may have removed the worktree between the open and the
// lock.
func (t Tree) TakeLease() (*Lease, error) {
	// The second name first: a worker whose lease file an agent removed
	// from the tree holds its lock there still.
	second, err := lockSecond(context.Background(), leaseLink(t.Root), time.Time{})
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, ErrLeaseHeld
	}
	if err != nil {
		return nil, fmt.Errorf("lease %s: lock: %w", filepath.Base(t.Root), err)
	}
	l, err := t.takeLease(second)
	if err != nil {
		if second != nil {
			second.Close()
		}
		return nil, err
	}
	return l, nil
}

// takeLease locks the lease file in the tree; second is its second name,
// locked already (nil when there is none): when both name one file, that
// lock is the lease (an flock taken twice on one file, through two opens,
// refuses itself).
func (t Tree) takeLease(second *os.File) (*Lease, error) {
	// Mkdir, not MkdirAll: a pruner must never recreate a worktree
	// directory another pruner has just removed.
	if err := os.Mkdir(t.Path(StateDir), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, ErrTreeGone
		}
		return nil, fmt.Errorf("lease %s: %w", filepath.Base(t.Root), err)
	}
	// O_CREATE: a worktree whose creation crashed before its lease existed
	// still gets a lease file to lock.
	lockPath := t.Path(LockFile)
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrTreeGone
	}
	if err != nil {
		return nil, fmt.Errorf("lease %s: open: %w", filepath.Base(t.Root), err)
	}
	if second != nil {
		a, err1 := f.Stat()
		b, err2 := second.Stat()
		if err1 == nil && err2 == nil && os.SameFile(a, b) {
			f.Close()
			return &Lease{f: second}, nil
		}
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrLeaseHeld
		}
		return nil, fmt.Errorf("lease %s: lock: %w", filepath.Base(t.Root), err)
	}
	held, err1 := f.Stat()
	now, err2 := os.Stat(lockPath)
	if err1 != nil || err2 != nil || !os.SameFile(held, now) {
		f.Close()
		return nil, ErrTreeGone
	}
	return &Lease{f: f, second: second}, nil
}
