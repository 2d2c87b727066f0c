package layout

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
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
type Lease struct{ f *os.File }

// Close releases the lease.
func (l *Lease) Close() error { return l.f.Close() }

// TakeLease locks the lease of the worktree rooted at t.Root without
// waiting, and checks that the file locked is still the one in place:
// another pruner may have removed the worktree between the open and the
// lock.
func (t Tree) TakeLease() (*Lease, error) {
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
	return &Lease{f: f}, nil
}
