package worktree

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
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
type Mutex struct {
	fl   *flock.Flock
	gate chan struct{}
}

// gates queue this process's own holders before the flock: flock has no
// wake-up, so a waiter polls it, and a goroutine waiting behind another of
// the same process would lose up to a polling interval at every handover;
// a channel hands the mutex over at once. Keyed by the shared git dir.
var (
	gatesMu sync.Mutex
	gates   = map[string]chan struct{}{}
)

func gate(commonDir string) chan struct{} {
	gatesMu.Lock()
	defer gatesMu.Unlock()
	g, ok := gates[commonDir]
	if !ok {
		g = make(chan struct{}, 1)
		gates[commonDir] = g
	}
	return g
}

// LockRepo waits for the repository mutex until ctx is done, then finishes
// any merge a killed holder left between its two steps.
func LockRepo(ctx context.Context, repo *git.Repo) (*Mutex, error) {
	g := gate(filepath.Clean(repo.CommonDir))
	select {
	case g <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("worktree: take the repository mutex: %w", ctx.Err())
	}
	fl := flock.New(filepath.Join(repo.CommonDir, MutexFile))
	ok, err := fl.TryLockContext(ctx, 5*time.Millisecond)
	if err != nil || !ok {
		<-g
		if err == nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("worktree: take the repository mutex: %w", err)
	}
	// A holder killed in the middle of a merge left it half done; the
	// next holder finishes it before anything else.
	if err := finishInterrupted(context.WithoutCancel(ctx), repo); err != nil {
		_ = fl.Unlock()
		<-g
		return nil, err
	}
	return &Mutex{fl: fl, gate: g}, nil
}

// Unlock releases the mutex; a second call does nothing.
func (m *Mutex) Unlock() {
	if m.gate == nil {
		return
	}
	_ = m.fl.Unlock()
	<-m.gate
	m.gate = nil
}
