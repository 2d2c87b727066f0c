package layout

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gofrs/flock"
)

// An agent's script that deletes the lock file and the holder record under
// a live session: the session's own processes still see the session (the
// hooks must not stand down), other processes do not; Keep locks the file
// now at the path and writes the record again, after which no one else can
// take the lock and every probe sees the session.
func TestSessionFilesDeletedUnderALiveSession(t *testing.T) {
	root := t.TempDir()
	tr := At(root)
	l, err := tr.Acquire(context.Background(), AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	for _, f := range []string{LockFile, HolderFile} {
		if err := os.Remove(tr.Path(f)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(SessionEnv, "")
	if s := tr.Session(); s.Active {
		t.Fatal("a process outside the session sees a session without its files")
	}
	t.Setenv(SessionEnv, l.Holder.Session)
	t.Setenv(RootEnv, root)
	if s := tr.Session(); !s.Active || !s.Mine {
		t.Fatalf("a process of the session is told there is none: %+v", s)
	}
	t.Setenv(RootEnv, t.TempDir())
	if s := tr.Session(); s.Active {
		t.Fatal("the session of another tree counts here")
	}
	t.Setenv(SessionEnv, "")

	// Without Keep, another wiggum takes the lock through a new file.
	other := flock.New(tr.Path(LockFile))
	if ok, err := other.TryLock(); err != nil || !ok {
		t.Fatalf("the naive design: a second holder gets in? %v %v", ok, err)
	}
	if _, err := l.Keep(); !errors.As(err, new(*HeldError)) {
		t.Fatalf("Keep with another holder of the new file: %v, want a HeldError", err)
	}
	other.Unlock()
	os.Remove(tr.Path(LockFile))

	fixed, err := l.Keep()
	if err != nil || fixed.String() != "the agent lock file "+LockFile+" and the holder record "+HolderFile {
		t.Fatalf("Keep = %q, %v", fixed, err)
	}
	if fixed, err := l.Keep(); err != nil || fixed.String() != "" {
		t.Fatalf("a second Keep repairs %q, %v", fixed, err)
	}
	if s := tr.Session(); !s.Active || s.Session != l.Holder.Session {
		t.Fatalf("after Keep the session is not seen: %+v", s)
	}
	if held, err := tr.Probe(); err != nil || !held {
		t.Fatalf("probe after Keep: %v %v", held, err)
	}
	if _, err := tr.Acquire(context.Background(), AcquireOptions{}); !errors.As(err, new(*HeldError)) {
		t.Fatalf("another acquire after Keep: %v, want a HeldError", err)
	}
}

// The same deletion in a git working tree, before the holder's Keep: the
// lock's second name in .git still carries the holder's lock, so another
// acquirer - which would otherwise make a new lock file and take it - is
// refused, and probes see the session; once the holder releases, the next
// acquirer gets the lock and both names name its file again.
func TestLockFileDeletedSecondNameRefusesAnotherAcquirer(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	tr := At(root)
	l, err := tr.Acquire(context.Background(), AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(tr.Path(StateDir)); err != nil {
		t.Fatal(err)
	}
	t.Setenv(SessionEnv, "")
	if held, err := tr.Probe(); err != nil || !held {
		t.Fatalf("probe with the lock file gone: %v %v, want held", held, err)
	}
	if pid := tr.LockPID(); pid != os.Getpid() {
		t.Fatalf("LockPID = %d, want %d", pid, os.Getpid())
	}
	if _, err := tr.Acquire(context.Background(), AcquireOptions{}); !errors.As(err, new(*HeldError)) {
		t.Fatalf("another acquire with the lock file gone: %v, want a HeldError", err)
	}
	start := time.Now()
	if _, err := tr.Acquire(context.Background(), AcquireOptions{Wait: 150 * time.Millisecond}); !errors.As(err, new(*HeldError)) {
		t.Fatalf("another acquire that waits: %v, want a HeldError", err)
	}
	if time.Since(start) < 150*time.Millisecond {
		t.Fatal("the waiting acquire gave up before its wait")
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l2, err := tr.Acquire(context.Background(), AcquireOptions{})
	if err != nil {
		t.Fatalf("acquire after the holder released: %v", err)
	}
	defer l2.Release()
	a, err1 := os.Stat(tr.Path(LockFile))
	b, err2 := os.Stat(filepath.Join(root, ".git", LeaseLinkName))
	if err1 != nil || err2 != nil || !os.SameFile(a, b) {
		t.Fatalf("the two names do not name one file: %v %v", err1, err2)
	}
	// A bash loop's flock on the tree's file alone still refuses.
	l2.Release()
	os.Remove(tr.Path(LockFile))
	bash := flock.New(tr.Path(LockFile))
	if ok, err := bash.TryLock(); !ok || err != nil {
		t.Fatal(ok, err)
	}
	defer bash.Unlock()
	if _, err := tr.Acquire(context.Background(), AcquireOptions{}); !errors.As(err, new(*HeldError)) {
		t.Fatalf("acquire beside a bash loop's lock: %v, want a HeldError", err)
	}
}
