package worktree

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// MutexFile is the repository mutex, in the git dir every worktree shares.
const MutexFile = "wiggum-repo.lock"

// Mutex is the held repository mutex. It serialises whole sequences - a
// worktree's creation, a merge with its plan update, a removal - across
// goroutines and processes alike: flock(2) locks belong to open file
// descriptions, and each LockRepo opens its own.
type Mutex struct{ fl *flock.Flock }

// LockRepo waits for the repository mutex until ctx is done, then finishes
// any merge a killed holder left between its two steps.
func LockRepo(ctx context.Context, repo *git.Repo) (*Mutex, error) {
	fl := flock.New(filepath.Join(repo.CommonDir, MutexFile))
	ok, err := fl.TryLockContext(ctx, 5*time.Millisecond)
	if err != nil {
		return nil, fmt.Errorf("worktree: take the repository mutex: %w", err)
	}
	if !ok {
		return nil, fmt.Errorf("worktree: take the repository mutex: %w", ctx.Err())
	}
	// A holder killed in the middle of a merge left it half done; the
	// next holder finishes it before anything else.
	if err := finishInterrupted(context.WithoutCancel(ctx), repo); err != nil {
		_ = fl.Unlock()
		return nil, err
	}
	return &Mutex{fl: fl}, nil
}

// Unlock releases the mutex.
func (m *Mutex) Unlock() { _ = m.fl.Unlock() }
