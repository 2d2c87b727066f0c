package git

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// holdIndex has a real git take the index lock of dir and keep it until
// the returned func is called: git add reads its pathspecs from stdin
// after it has taken the lock.
func holdIndex(t *testing.T, dir string) (release func()) {
	t.Helper()
	cmd := exec.Command("git", "add", "--pathspec-from-file=-")
	cmd.Dir = dir
	return holdLock(t, cmd, filepath.Join(dir, ".git", "index.lock"))
}

// holdLock starts cmd, a git that reads its stdin while it holds lock,
// and waits for the lock; release (also run at the test's end) lets it
// finish.
func holdLock(t *testing.T, cmd *exec.Cmd, lock string) (release func()) {
	t.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if _, err := os.Stat(lock); err == nil {
			break
		}
		if i == 500 {
			t.Fatal("git never took the index lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
	done := false
	release = func() {
		if !done {
			done = true
			in.Close()
			_ = cmd.Wait()
		}
	}
	t.Cleanup(release)
	return release
}

func quickStaleCheck(t *testing.T, wait time.Duration) *[]string {
	t.Helper()
	oldAfter, oldWait, oldOn := StaleLockAfter, IndexLockWait, OnStaleLock
	t.Cleanup(func() { StaleLockAfter, IndexLockWait, OnStaleLock = oldAfter, oldWait, oldOn })
	StaleLockAfter, IndexLockWait = 100*time.Millisecond, wait
	var told []string
	OnStaleLock = func(path string, _ time.Duration) { told = append(told, path) }
	return &told
}

// A git killed mid-command (an agent's, when its run's --timeout stopped
// it) left index.lock: every later command that writes the index failed
// on it - an unattended run's commit and rollback too, and the run
// stopped. With no git left that could hold it, the lock is removed,
// said so, and the command run again.
func TestStaleIndexLockIsRemoved(t *testing.T) {
	dir := testRepo(t)
	told := quickStaleCheck(t, 5*time.Second)
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(r.GitDir, "index.lock")
	if err := os.WriteFile(lock, []byte("half an index"), 0o644); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "a.txt", "changed\n")
	if _, err := r.Run(ctx, "add", "a.txt"); err != nil {
		t.Fatalf("git add over a stale index lock: %v", err)
	}
	if _, err := os.Stat(lock); err == nil {
		t.Fatal("the stale lock is still there")
	}
	if len(*told) != 1 || (*told)[0] != lock {
		t.Fatalf("told of %v, want %s", *told, lock)
	}
	if got := gitT(t, dir, "diff", "--cached", "--name-only"); got != "a.txt" {
		t.Fatalf("staged: %q", got)
	}
}

// A lock a live git holds is never removed, however long it holds it (a
// pre-commit hook can run for minutes): the command fails after
// IndexLockWait, as before, and works once that git is done.
func TestLiveGitsIndexLockIsWaitedOut(t *testing.T) {
	dir := testRepo(t)
	told := quickStaleCheck(t, 700*time.Millisecond)
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	release := holdIndex(t, dir)
	write(t, dir, "a.txt", "changed\n")
	if _, err := r.Run(ctx, "add", "a.txt"); !IndexLocked(err) {
		t.Fatalf("git add while a live git holds the index: %v, want the lock's error", err)
	}
	if _, err := os.Stat(filepath.Join(r.GitDir, "index.lock")); err != nil {
		t.Fatal("the live git's lock was removed")
	}
	if len(*told) != 0 {
		t.Fatalf("told of %v", *told)
	}
	release()
	if _, err := r.Run(ctx, "add", "a.txt"); err != nil {
		t.Fatalf("git add after the other git ended: %v", err)
	}
}

// A git that works in the repository from elsewhere - run with --git-dir
// and --work-tree, or GIT_DIR and GIT_WORK_TREE, from another directory -
// holds the index lock as any other: it is never taken for a dead git's
// and removed (hunt12 #6: the person's staging was lost, "Unable to write
// new index file").
func TestGitFromElsewhereKeepsItsIndexLock(t *testing.T) {
	for _, how := range []string{"arguments", "environment"} {
		t.Run(how, func(t *testing.T) {
			dir := testRepo(t)
			gitDir := filepath.Join(dir, ".git")
			cmd := exec.Command("git", "--git-dir="+gitDir, "--work-tree="+dir, "update-index", "--index-info")
			if how == "environment" {
				cmd = exec.Command("git", "update-index", "--index-info")
				cmd.Env = append(os.Environ(), "GIT_DIR="+gitDir, "GIT_WORK_TREE="+dir)
			}
			cmd.Dir = t.TempDir() // not the repository
			lock := filepath.Join(gitDir, "index.lock")
			holdLock(t, cmd, lock)
			if ClearStaleLock(lock, dir, gitDir) {
				t.Fatal("the lock of a live git working from elsewhere was removed")
			}
			if _, err := os.Stat(lock); err != nil {
				t.Fatalf("the live git's lock is gone: %v", err)
			}
		})
	}
}

// Read-only git commands - wiggum's own long-lived children, an agent's
// pager open on git log - never count as a lock's holder; those that lock
// refs only never count as the index's.
func TestHolds(t *testing.T) {
	for _, c := range []struct {
		cmdline    string
		index, ref bool
	}{
		{"git\x00cat-file\x00--batch\x00", false, false},
		{"/usr/bin/git\x00-C\x00/r\x00update-ref\x00--stdin\x00", false, true},
		{"git\x00-c\x00core.pager=less\x00log\x00", false, false},
		{"/usr/lib/git-core/git\x00log\x00", false, false},
		{"git\x00add\x00-A\x00", true, true},
		{"git\x00status\x00", true, true},
		{"git\x00commit\x00-m\x00x\x00", true, true},
		{"git\x00fetch\x00origin\x00", false, true},
		{"git\x00", true, true},
		{"/usr/lib/git-core/git-remote-https\x00origin\x00https://h/r\x00", true, true},
	} {
		if got := holds([]byte(c.cmdline), true); got != c.index {
			t.Errorf("holds(%q, index) = %v, want %v", strings.ReplaceAll(c.cmdline, "\x00", " "), got, c.index)
		}
		if got := holds([]byte(c.cmdline), false); got != c.ref {
			t.Errorf("holds(%q, ref) = %v, want %v", strings.ReplaceAll(c.cmdline, "\x00", " "), got, c.ref)
		}
	}
}

// A ref's lock and HEAD's that a killed git left are removed after the
// attempt (ClearStaleLocks); one a live git holds is not; wiggum's own
// update-ref started ahead, idle until its input, holds none.
func TestClearStaleLocks(t *testing.T) {
	dir := testRepo(t)
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.ClearStaleLocks("refs/heads/main"); len(got) != 0 {
		t.Fatalf("removed %v with no lock", got)
	}
	ahead := r.Start(ctx, nil, "update-ref", "--stdin")
	defer ahead.Abandon()
	head := filepath.Join(r.GitDir, "HEAD.lock")
	branch := filepath.Join(r.CommonDir, "refs", "heads", "main.lock")
	for _, p := range []string{head, branch} {
		if err := os.WriteFile(p, []byte("0000\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := r.ClearStaleLocks("refs/heads/main")
	if len(got) != 2 || !strings.HasPrefix(got[0].String(), head+" (last written ") || got[1].Path != branch {
		t.Fatalf("removed %v", got)
	}
	if _, err := r.Run(ctx, "commit", "-q", "--allow-empty", "-m", "after"); err != nil {
		t.Fatalf("commit after the stale locks went: %v", err)
	}
	release := holdIndex(t, dir)
	if got := r.ClearStaleLocks("refs/heads/main"); len(got) != 0 {
		t.Fatalf("removed %v while a live git holds the index", got)
	}
	release()
}

// ClearStaleRefLocks removes the refs' stale locks and never the index's:
// its caller (a rollback's ref transaction) holds that lock itself, and no
// git process does.
func TestClearStaleRefLocksSparesTheIndexLock(t *testing.T) {
	dir := testRepo(t)
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	index, head := filepath.Join(r.GitDir, "index.lock"), filepath.Join(r.GitDir, "HEAD.lock")
	for _, p := range []string{index, head} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	removed := r.ClearStaleRefLocks("refs/heads/main")
	if len(removed) != 1 || removed[0].Path != head {
		t.Fatalf("removed %v, want only %s", removed, head)
	}
	if _, err := os.Stat(index); err != nil {
		t.Fatalf("the index lock was removed: %v", err)
	}
}
