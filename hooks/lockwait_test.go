package hooks

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gofrs/flock"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/session"
)

// holdLock takes the flock another process (the agent) would hold on a
// state file's lock, for the rest of the test.
func holdLock(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	l := flock.New(path)
	if err := l.Lock(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Unlock() })
}

// runOrHang runs a hook, failing the test when it has not answered within
// a minute: the wait it must not make is one without bound.
func runOrHang(t *testing.T, in string, opts Options) []byte {
	t.Helper()
	done := make(chan []byte, 1)
	go func() {
		var out bytes.Buffer
		Run(context.Background(), "claude", strings.NewReader(in), &out, opts)
		done <- out.Bytes()
	}()
	select {
	case out := <-done:
		checkValidOutput(t, in, out)
		return out
	case <-time.After(time.Minute):
		t.Fatal("the hook waits without bound on a lock the agent holds")
		return nil
	}
}

// TestDenialWithTheEventLogLocked: an agent holding the event log's lock
// does not make a denial wait past the agent's hook timeout (a timed-out
// PreToolUse lets the call through): the hook still denies, and the
// debug log says the denial is not in the event log.
func TestDenialWithTheEventLogLocked(t *testing.T) {
	dir := repo(t)
	inSession(t, dir)
	t.Setenv(layout.RootEnv, dir)
	rt := filepath.Join(dir, filepath.FromSlash(layout.RuntimeDir))
	holdLock(t, filepath.Join(rt, layout.EventFile+".lock"))
	var log bytes.Buffer
	out := runOrHang(t, claudeEvent(t, "PreToolUse", dir, "git reset --hard HEAD~1", nil), Options{Verbose: &log})
	if !bytes.Contains(out, []byte(`"permissionDecision":"deny"`)) {
		t.Fatalf("git reset --hard with the event log locked: %s", out)
	}
	if !strings.Contains(log.String(), "still stands, but it is not in the event log") {
		t.Fatalf("the debug log does not say the denial went unrecorded:\n%s", log.String())
	}
}

// TestRollbackWithItsLockHeld: an agent holding the test hook's rollback
// lock (and the failure log's) does not make a failing test run's hook
// wait past its timeout and record nothing: past the wait the rollback
// fails, the agent is told, and the failure is recorded as a failed
// rollback, which fails the attempt.
func TestRollbackWithItsLockHeld(t *testing.T) {
	defer func(w time.Duration) { rollbackLockWait = w }(rollbackLockWait)
	rollbackLockWait = 200 * time.Millisecond
	dir := repo(t)
	st := inSession(t, dir)
	t.Setenv(layout.RootEnv, dir)
	if _, err := st.Save(context.Background(), os.Getenv(layout.SessionEnv), checkpoint.SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	rt := filepath.Join(dir, filepath.FromSlash(layout.RuntimeDir))
	holdLock(t, filepath.Join(rt, "hook-rollback.lock"))
	holdLock(t, filepath.Join(rt, layout.FailureFile+".lock"))
	out := runOrHang(t, claudeEvent(t, "PostToolUseFailure", dir, "go test ./...",
		map[string]any{"error": "Exit code 1\n--- FAIL: TestX\nFAIL\n"}), Options{})
	if !bytes.Contains(out, []byte("Rolling back failed")) || !bytes.Contains(out, []byte("held by another process")) {
		t.Fatalf("the agent is not told the rollback failed: %s", out)
	}
	fs, err := session.Failures(st, "")
	if err != nil || len(fs) != 1 || !strings.HasPrefix(fs[0].Rollback, "failed: ") {
		t.Fatalf("failure log: %+v %v", fs, err)
	}
}
