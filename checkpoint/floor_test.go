package checkpoint

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// old is the mtime every file starts with, so a rewrite is visible.
var old = time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)

// ageFiles gives every file of the working tree the mtime old and lets git
// record it (as any git status would).
func (r *testRepo) ageFiles() {
	r.t.Helper()
	filepath.Walk(r.dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.IsDir() && fi.Name() == ".git" {
			return filepath.SkipDir
		}
		if err == nil && fi.Mode().IsRegular() {
			os.Chtimes(p, old, old)
		}
		return nil
	})
	r.git("update-index", "-q", "--refresh")
}

func (r *testRepo) mtime(rel string) time.Time {
	r.t.Helper()
	fi, err := os.Lstat(filepath.Join(r.dir, rel))
	if err != nil {
		r.t.Fatal(err)
	}
	return fi.ModTime()
}

// TestRollbackWritesOnlyWhatItChanges: after a rollback every file whose
// content is the same as before it keeps its mtime (make and other
// timestamp-driven tools rebuild nothing), while changed files are back to
// the checkpoint, new files are gone, and the index and status are what
// they were at the checkpoint.
func TestRollbackWritesOnlyWhatItChanges(t *testing.T) {
	for _, dirtyCheckpoint := range []bool{false, true} {
		for _, agentCommits := range []bool{false, true} {
			t.Run(fmt.Sprintf("dirty checkpoint %v, agent commits %v", dirtyCheckpoint, agentCommits), func(t *testing.T) {
				r := newRepo(t)
				for i := 0; i < 30; i++ {
					r.write(fmt.Sprintf("src/f%02d.txt", i), fmt.Sprintf("file %d\n", i))
				}
				r.git("add", "-A")
				r.git("commit", "-q", "-m", "files")
				if dirtyCheckpoint {
					r.write("src/f05.txt", "changed before the checkpoint\n")
					r.write("notes.txt", "untracked before the checkpoint\n")
				}
				r.ageFiles()
				mustSave(t, r, "")
				want := r.fingerprint()
				wantStatus := r.git("status", "--porcelain", "--untracked-files=all")

				// The agent's attempt.
				r.write("src/f01.txt", "agent edit\n")
				if agentCommits {
					r.git("commit", "-q", "-am", "agent")
				}
				r.write("src/f02.txt", "agent edit, uncommitted\n")
				r.write("src/new/n.txt", "new\n")
				if dirtyCheckpoint {
					r.write("src/f05.txt", "agent changed it again\n")
				}
				if _, err := r.st.Rollback(ctx, RollbackOptions{}); err != nil {
					t.Fatal(err)
				}
				if got := r.fingerprint(); got != want {
					t.Fatalf("not back at the checkpoint:\nwant\n%s\ngot\n%s", want, got)
				}
				if got := r.git("status", "--porcelain", "--untracked-files=all"); got != wantStatus {
					t.Fatalf("status %q, want %q", got, wantStatus)
				}
				if r.exists("src/new") {
					t.Fatal("the emptied directory of a new file is left")
				}
				for i := 0; i < 30; i++ {
					rel := fmt.Sprintf("src/f%02d.txt", i)
					changed := i == 1 || i == 2 || (dirtyCheckpoint && i == 5)
					if m := r.mtime(rel); !changed && !m.Equal(old) {
						t.Errorf("%s was rewritten (mtime %s) though its content never changed", rel, m)
					}
				}
				if dirtyCheckpoint && !r.mtime("notes.txt").Equal(old) {
					t.Error("the checkpoint's untracked file was rewritten")
				}
			})
		}
	}
}

// TestRollbackCheckpointDirtyFileUntouchedKeepsItsMtime: a file dirty at
// checkpoint time that the agent never touched is not rewritten either.
func TestRollbackCheckpointDirtyFileUntouchedKeepsItsMtime(t *testing.T) {
	r := newRepo(t)
	r.write("README", "changed before the checkpoint\n")
	r.ageFiles()
	mustSave(t, r, "")
	r.write("other.txt", "agent\n")
	if _, err := r.st.Rollback(ctx, RollbackOptions{}); err != nil {
		t.Fatal(err)
	}
	if !r.mtime("README").Equal(old) || r.read("README") != "changed before the checkpoint\n" || r.exists("other.txt") {
		t.Fatal("README was rewritten, or the rollback did not happen")
	}
}

// TestRollbackFileKinds: a file that became a directory, a symlink, an
// executable bit and a deleted file, each changed at checkpoint time and
// again by the agent, all come back.
func TestRollbackFileKinds(t *testing.T) {
	r := newRepo(t)
	r.write("kind/file-then-dir", "a file\n")
	r.write("kind/run.sh", "#!/bin/sh\n")
	r.write("kind/gone.txt", "deleted later\n")
	if err := os.Symlink("run.sh", filepath.Join(r.dir, "kind/link")); err != nil {
		t.Fatal(err)
	}
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "kinds")
	// Uncommitted at checkpoint time: exec bit on, a link retargeted.
	os.Chmod(filepath.Join(r.dir, "kind/run.sh"), 0o755)
	os.Remove(filepath.Join(r.dir, "kind/link"))
	os.Symlink("gone.txt", filepath.Join(r.dir, "kind/link"))
	mustSave(t, r, "")
	want := r.fingerprint()
	wantStatus := r.git("status", "--porcelain", "--untracked-files=all")

	os.Remove(filepath.Join(r.dir, "kind/file-then-dir"))
	r.write("kind/file-then-dir/inside.txt", "now a directory\n")
	os.Chmod(filepath.Join(r.dir, "kind/run.sh"), 0o644)
	os.Remove(filepath.Join(r.dir, "kind/gone.txt"))
	os.Remove(filepath.Join(r.dir, "kind/link"))
	r.write("kind/link", "a plain file now\n")
	res, err := r.st.Rollback(ctx, RollbackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.fingerprint(); got != want {
		t.Fatalf("not back at the checkpoint:\nwant\n%s\ngot\n%s", want, got)
	}
	if got := r.git("status", "--porcelain", "--untracked-files=all"); got != wantStatus {
		t.Fatalf("status %q, want %q", got, wantStatus)
	}
	fi, err := os.Lstat(filepath.Join(r.dir, "kind/run.sh"))
	if err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Fatal("the executable bit is lost")
	}
	if target, err := os.Readlink(filepath.Join(r.dir, "kind/link")); err != nil || target != "gone.txt" {
		t.Fatalf("link: %q %v", target, err)
	}
	// The backup holds the agent's directory.
	if got := r.git("show", res.BackupRef+":kind/file-then-dir/inside.txt"); got != "now a directory" {
		t.Fatalf("backup: %q", got)
	}
}

// TestRollbackRefusesWhileGitHoldsTheIndex: another git command holding
// index.lock for longer than git.IndexLockWait makes the rollback refuse
// before anything moves.
func TestRollbackRefusesWhileGitHoldsTheIndex(t *testing.T) {
	defer func(w, a time.Duration) { git.IndexLockWait, git.StaleLockAfter = w, a }(git.IndexLockWait, git.StaleLockAfter)
	git.IndexLockWait, git.StaleLockAfter = 300*time.Millisecond, 50*time.Millisecond
	for _, dirty := range []bool{false, true} {
		r := newRepo(t)
		mustSave(t, r, "")
		r.commit("a.txt", "a\n", "agent")
		if dirty {
			r.write("b.txt", "b\n")
		}
		lock := filepath.Join(r.dir, ".git", "index.lock")
		// A real git holds it: git add takes the lock, then reads its
		// pathspecs from stdin.
		other := exec.Command("git", "add", "--pathspec-from-file=-")
		other.Dir = r.dir
		in, err := other.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := other.Start(); err != nil {
			t.Fatal(err)
		}
		for i := 0; !r.exists(".git/index.lock"); i++ {
			if i == 500 {
				t.Fatal("git never took the index lock")
			}
			time.Sleep(10 * time.Millisecond)
		}
		wantRefused(t, r, RollbackOptions{}, "index is locked")
		if _, err := os.Stat(lock); err != nil {
			t.Fatal("the other command's lock was removed")
		}
		in.Close()
		_ = other.Wait()
		if _, err := r.st.Rollback(ctx, RollbackOptions{}); err != nil {
			t.Fatal(err)
		}
		if entries, _ := filepath.Glob(filepath.Join(r.dir, ".git", "wiggum-index*")); len(entries) > 0 || r.exists(".git/index.lock") {
			t.Fatalf("left behind: %v", entries)
		}
	}
}

// TestRollbackRemovesAStaleIndexLock: index.lock left by a git that no
// longer runs (killed mid-command: an agent's, stopped by --timeout) made
// the rollback refuse, and an unattended run stop. No git that could hold
// it runs: it is removed, and the rollback goes on.
func TestRollbackRemovesAStaleIndexLock(t *testing.T) {
	defer func(w, a time.Duration) { git.IndexLockWait, git.StaleLockAfter = w, a }(git.IndexLockWait, git.StaleLockAfter)
	git.IndexLockWait, git.StaleLockAfter = 5*time.Second, 100*time.Millisecond
	r := newRepo(t)
	mustSave(t, r, "")
	r.commit("a.txt", "a\n", "agent")
	r.write("b.txt", "b\n")
	if err := os.WriteFile(filepath.Join(r.dir, ".git", "index.lock"), []byte("half an index"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.st.Rollback(ctx, RollbackOptions{}); err != nil {
		t.Fatalf("rollback over a stale index lock: %v", err)
	}
	if r.exists("a.txt") || r.exists("b.txt") || r.exists(".git/index.lock") {
		t.Fatal("the rollback did not return to the checkpoint")
	}
}

func TestCheckpointSnapshotLeavesTheIndexAlone(t *testing.T) {
	r := newRepo(t)
	r.write("staged.txt", "staged\n")
	r.git("add", "staged.txt")
	r.write("README", "unstaged\n")
	r.write("new.txt", "untracked\n")
	before := r.git("ls-files", "-s", "--debug")
	cp := mustSave(t, r, "")
	if got := r.git("ls-files", "-s", "--debug"); got != before {
		t.Fatalf("the index changed:\n%s\n%s", before, got)
	}
	tree := r.git("ls-tree", "-r", "--name-only", cp.Snapshot)
	for _, p := range []string{"README", "staged.txt", "new.txt", ".gitignore"} {
		if !strings.Contains("\n"+tree+"\n", "\n"+p+"\n") {
			t.Fatalf("snapshot lacks %s:\n%s", p, tree)
		}
	}
	if r.git("show", cp.Snapshot+":README") != "unstaged" {
		t.Fatal("the snapshot holds the index's README, not the working tree's")
	}
	if entries, _ := filepath.Glob(filepath.Join(r.dir, ".git", "wiggum-index*")); len(entries) > 0 {
		t.Fatalf("left behind: %v", entries)
	}
}

// TestRollbackRestoresATrackedFileNowIgnored: the agent untracks a file
// that matches an ignore rule and leaves its own version in place; the
// rollback brings the checkpoint's back, as reset --hard would.
func TestRollbackRestoresATrackedFileNowIgnored(t *testing.T) {
	r := newRepo(t)
	r.write("keep.log", "tracked although ignored\n")
	r.git("add", "-f", "keep.log")
	r.git("commit", "-q", "-m", "a tracked log")
	mustSave(t, r, "")
	want := r.fingerprint()
	r.git("rm", "-q", "--cached", "keep.log")
	r.git("commit", "-q", "-m", "untrack it")
	r.write("keep.log", "the agent's, ignored now\n")
	if _, err := r.st.Rollback(ctx, RollbackOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := r.fingerprint(); got != want {
		t.Fatalf("not back at the checkpoint:\nwant\n%s\ngot\n%s", want, got)
	}
}

// TestRollbackWaitsForAMomentaryIndexLock: another git holding index.lock
// for a moment - an editor's git status, set off by the agent's edits -
// refused the rollback, and an unattended run stopped (exit 4) over a lock
// let go of milliseconds later. The rollback waits for it.
func TestRollbackWaitsForAMomentaryIndexLock(t *testing.T) {
	for _, dirty := range []bool{false, true} {
		r := newRepo(t)
		mustSave(t, r, "")
		r.commit("a.txt", "a\n", "agent")
		if dirty {
			r.write("b.txt", "b\n")
		}
		lock := filepath.Join(r.dir, ".git", "index.lock")
		if err := os.WriteFile(lock, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		released := make(chan struct{})
		time.AfterFunc(300*time.Millisecond, func() { os.Remove(lock); close(released) })
		res, err := r.st.Rollback(ctx, RollbackOptions{})
		<-released
		if err != nil {
			t.Fatalf("dirty=%v: %v", dirty, err)
		}
		if res.BackupRef == "" || r.exists("a.txt") || r.exists("b.txt") {
			t.Fatalf("dirty=%v: not rolled back: %+v", dirty, res)
		}
	}
}
