package layout

import (
	"context"
	"errors"
	"os"
	"testing"

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
	if err != nil || fixed != "the agent lock file "+LockFile+" and the holder record "+HolderFile {
		t.Fatalf("Keep = %q, %v", fixed, err)
	}
	if fixed, err := l.Keep(); err != nil || fixed != "" {
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
