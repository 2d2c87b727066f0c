package worktree

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/layout"
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
	start := time.Now()
	ok, err := waitLock(ctx, fl)
	if err != nil || !ok {
		<-g
		if errors.Is(err, context.DeadlineExceeded) {
			// A bounded wait (a maintenance command's) that ran out:
			// name the holder, as a held agent lock is named.
			busy := &layout.BusyError{What: "the repository mutex", Path: fl.Path(), Waited: time.Since(start).Round(time.Second)}
			busy.PID, busy.Command = layout.FlockHolder(fl.Path())
			busy.Stopped = layout.PIDStopped(busy.PID)
			return nil, busy
		}
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

// MutexWait is who LockRepo waits for: the process holding the
// repository mutex (PID 0 when /proc does not say), and whether it is
// stopped (^Z, SIGSTOP), which it holds the mutex through.
type MutexWait struct {
	Path    string
	PID     int
	Command string
	Stopped bool
}

func (w MutexWait) String() string {
	if w.PID == 0 {
		return fmt.Sprintf("waiting for the repository mutex %s, held by a process /proc does not name (another wiggum of this repository, perhaps in a container)", w.Path)
	}
	msg := fmt.Sprintf("waiting for the repository mutex %s, held by pid %d", w.Path, w.PID)
	if w.Command != "" {
		msg += fmt.Sprintf(" (%s)", w.Command)
	}
	if w.Stopped {
		msg += fmt.Sprintf(", which is stopped (^Z or SIGSTOP) and holds it until it runs again: resume it (kill -CONT %d, or fg in its terminal) or end it (kill %d)", w.PID, w.PID)
	}
	return msg
}

// OnMutexWait, when set, is told who holds the repository mutex when
// LockRepo has waited for it longer than any holder's sequence takes
// (mutexPatience), and again whenever that holder changes or stops or
// resumes: a holder stopped with ^Z holds it for as long as it stays
// stopped, and a run or a prune that waited without a word looked hung.
var OnMutexWait func(MutexWait)

// mutexPatience is how long a wait for the mutex goes unsaid: its
// sequences take milliseconds, a merge with a slow hook a few seconds.
const mutexPatience = time.Second

// waitLock takes fl, polling (flock has no wake-up) until ctx is done, and
// says who it waits for past mutexPatience.
func waitLock(ctx context.Context, fl *flock.Flock) (bool, error) {
	poll := time.NewTicker(5 * time.Millisecond)
	defer poll.Stop()
	look := time.Now().Add(mutexPatience)
	var said MutexWait
	for {
		if ok, err := fl.TryLock(); ok || err != nil {
			return ok, err
		}
		if now := time.Now(); OnMutexWait != nil && now.After(look) {
			look = now.Add(mutexPatience)
			w := MutexWait{Path: fl.Path()}
			w.PID, w.Command = layout.FlockHolder(fl.Path())
			w.Stopped = layout.PIDStopped(w.PID)
			if w != said {
				said = w
				OnMutexWait(w)
			}
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-poll.C:
		}
	}
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
