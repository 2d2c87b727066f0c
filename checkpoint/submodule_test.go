package checkpoint

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// addSubmodule adds a checked-out submodule at vendor/lib, from a
// repository of its own with one commit, and commits it.
func (r *testRepo) addSubmodule() {
	r.t.Helper()
	lib := r.t.TempDir()
	if err := os.WriteFile(filepath.Join(lib, "lib.txt"), []byte("lib\n"), 0o644); err != nil {
		r.t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "lib.txt"}, {"commit", "-q", "-m", "lib"}} {
		if out, err := exec.Command("git", append([]string{"-C", lib}, args...)...).CombinedOutput(); err != nil {
			r.t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	r.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "vendor/lib")
	r.git("commit", "-q", "-m", "add vendor/lib")
}

// wantReturned checks a submodule at dir after a rollback: file holds
// want again, the new.txt the test left there is gone, and the whole tree
// is clean.
func (r *testRepo) wantReturned(dir, file, want string) {
	r.t.Helper()
	if got := r.read(dir + "/" + file); got != want {
		r.t.Errorf("%s/%s after the rollback: %q, want %q", dir, file, got, want)
	}
	if r.exists(dir + "/new.txt") {
		r.t.Errorf("%s/new.txt is still there", dir)
	}
	if st := r.git("status", "--porcelain", "--ignore-submodules=none"); st != "" {
		r.t.Errorf("status after the rollback:\n%s", st)
	}
}

func (r *testRepo) sub(args ...string) string {
	r.t.Helper()
	return r.git(append([]string{"-C", "vendor/lib"}, args...)...)
}

// TestRollbackReturnsSubmodule: an agent changed a file in a submodule
// and left a new one there - which git's reset leaves alone and a backup
// of the main tree records only as the submodule's commit. The rollback
// saves the submodule's state in a backup ref of its own repository and
// returns its files to the checkpoint's; a dry run says so and changes
// nothing.
func TestRollbackReturnsSubmodule(t *testing.T) {
	r := newRepo(t)
	r.addSubmodule()
	mustSave(t, r, "")
	at := r.sub("rev-parse", "HEAD")
	r.write("vendor/lib/lib.txt", "broken by the agent\n")
	r.write("vendor/lib/new.txt", "new\n")

	dry, err := r.st.Rollback(ctx, RollbackOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(dry.Submodules) != 1 || dry.Submodules[0].Commit != at || dry.Submodules[0].Backup != "" || dry.NothingToDo {
		t.Fatalf("dry run: %+v", dry)
	}
	if r.read("vendor/lib/lib.txt") != "broken by the agent\n" {
		t.Fatal("the dry run changed the submodule")
	}

	res, err := r.st.Rollback(ctx, RollbackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.NothingToDo || len(res.Submodules) != 1 || res.Submodules[0].Path != "vendor/lib" || res.Submodules[0].Left != "" {
		t.Fatalf("result: %+v", res)
	}
	r.wantReturned("vendor/lib", "lib.txt", "lib\n")
	ref := res.Submodules[0].Backup
	if got := r.sub("show", ref+":lib.txt"); got != "broken by the agent" {
		t.Errorf("saved lib.txt: %q", got)
	}
	if got := r.sub("show", ref+":new.txt"); got != "new" {
		t.Errorf("saved new.txt: %q", got)
	}
}

// TestRollbackReturnsSubmoduleCommit: the agent committed in the
// submodule and recorded the new commit in the main tree. The main tree's
// rollback returns the recorded commit; the submodule's HEAD returns to
// the checkpoint's commit too, detached, with the agent's commit kept in
// the backup (and its branch, which is never moved).
func TestRollbackReturnsSubmoduleCommit(t *testing.T) {
	r := newRepo(t)
	r.addSubmodule()
	mustSave(t, r, "")
	at := r.sub("rev-parse", "HEAD")
	r.sub("checkout", "-q", "-b", "agent-work")
	r.write("vendor/lib/lib.txt", "the agent's commit\n")
	r.sub("commit", "-q", "-am", "agent in the submodule")
	work := r.sub("rev-parse", "HEAD")
	r.git("commit", "-q", "-am", "bump vendor/lib")

	res, err := r.st.Rollback(ctx, RollbackOptions{DiscardForeign: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Submodules) != 1 || res.Submodules[0].Commit != at {
		t.Fatalf("submodules: %+v", res.Submodules)
	}
	if got := r.sub("rev-parse", "HEAD"); got != at {
		t.Errorf("the submodule is at %s, want the checkpoint's %s", got, at)
	}
	if got := r.sub("rev-parse", res.Submodules[0].Backup+"^"); got != work {
		t.Errorf("the backup's parent is %s, want the agent's commit %s", got, work)
	}
	if got := r.sub("rev-parse", "agent-work"); got != work {
		t.Errorf("the submodule's branch moved to %s", got)
	}
	if st := r.git("status", "--porcelain", "--ignore-submodules=none"); st != "" {
		t.Errorf("status after the rollback:\n%s", st)
	}
}

// TestRollbackLeavesSubmoduleChangedAtCheckpoint: a submodule that
// already had changes when the checkpoint was taken cannot be returned
// to them (the checkpoint records only its commit): it is left as it
// is, and the rollback says so.
func TestRollbackLeavesSubmoduleChangedAtCheckpoint(t *testing.T) {
	r := newRepo(t)
	r.addSubmodule()
	r.write("vendor/lib/lib.txt", "the user's own edit\n")
	cp := mustSave(t, r, "")
	if len(cp.Submodules) != 1 || cp.Submodules[0] != "vendor/lib" {
		t.Fatalf("checkpoint submodules: %v", cp.Submodules)
	}
	r.write("vendor/lib/lib.txt", "the user's own edit, then the agent's\n")
	r.write("agent.txt", "agent\n")
	res, err := r.st.Rollback(ctx, RollbackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Submodules) != 1 || !strings.Contains(res.Submodules[0].Left, "changes at the checkpoint") {
		t.Fatalf("submodules: %+v", res.Submodules)
	}
	if got := r.read("vendor/lib/lib.txt"); got != "the user's own edit, then the agent's\n" {
		t.Errorf("lib.txt: %q", got)
	}
	if r.exists("agent.txt") {
		t.Error("the main tree was not rolled back")
	}
	if refs := r.sub("for-each-ref", "refs/wiggum/"); refs != "" {
		t.Errorf("backups in the submodule:\n%s", refs)
	}
}

// subGit runs git in dir with file submodules allowed.
func subGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	if out, err := exec.Command("git", append([]string{"-C", dir, "-c", "protocol.file.allow=always"}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// nestedSubmodules gives r a committed submodule at vendor/mid holding
// the repository deep as its own submodule inner.
func nestedSubmodules(t *testing.T, r *testRepo, deep string) {
	t.Helper()
	mid := t.TempDir()
	subGit(t, mid, "init", "-q", "-b", "main")
	subGit(t, mid, "submodule", "add", "-q", deep, "inner")
	subGit(t, mid, "commit", "-q", "-m", "mid")
	subGit(t, r.dir, "submodule", "add", "-q", mid, "vendor/mid")
	subGit(t, r.dir, "submodule", "update", "--init", "--recursive", "-q")
	subGit(t, r.dir, "commit", "-q", "-m", "add vendor/mid")
}

// TestRollbackReturnsNestedSubmodule: an edit inside a submodule of a
// submodule is returned too, saved in that nested submodule's own
// repository; the submodule around it, which changed nothing of its own,
// gets no backup.
func TestRollbackReturnsNestedSubmodule(t *testing.T) {
	r := newRepo(t)
	nestedSubmodules(t, r, newUpstream(t, "d.txt"))
	mustSave(t, r, "")
	r.write("vendor/mid/inner/d.txt", "broken deep inside\n")
	r.write("vendor/mid/inner/new.txt", "new\n")

	res, err := r.st.Rollback(ctx, RollbackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Submodules) != 1 || res.Submodules[0].Path != "vendor/mid/inner" || res.Submodules[0].Backup == "" {
		t.Fatalf("submodules: %+v", res.Submodules)
	}
	r.wantReturned("vendor/mid/inner", "d.txt", "d.txt\n")
	if got := r.git("-C", "vendor/mid/inner", "show", res.Submodules[0].Backup+":d.txt"); got != "broken deep inside" {
		t.Errorf("saved d.txt: %q", got)
	}
	if refs := r.git("-C", "vendor/mid", "for-each-ref", "refs/wiggum/"); refs != "" {
		t.Errorf("backups in vendor/mid:\n%s", refs)
	}
}

// TestPruneSubmoduleBackups: wiggum recover --prune deletes old submodule
// backups (saved in the main repository when a worktree's submodule had
// no main-tree checkout to go to) with the tree's own; a dry run only
// lists them.
func TestPruneSubmoduleBackups(t *testing.T) {
	r := newRepo(t)
	commitAt := func(date string) string {
		cmd := exec.Command("git", "commit-tree", "-m", "submodule work", r.git("rev-parse", "HEAD^{tree}"))
		cmd.Dir = r.dir
		cmd.Env = append(os.Environ(), "GIT_COMMITTER_DATE="+date)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	old, recent := SubmoduleBackupPrefix+"20200101T000000Z-old", SubmoduleBackupPrefix+"recent"
	r.git("update-ref", old, commitAt("2020-01-01T00:00:00Z"))
	r.git("update-ref", recent, commitAt(time.Now().Format(time.RFC3339)))

	gone, err := r.st.Prune(ctx, 24*time.Hour, true)
	if err != nil || len(gone) != 1 || gone[0] != old {
		t.Fatalf("dry run: %v, %v", gone, err)
	}
	r.git("rev-parse", "--verify", old)
	gone, err = r.st.Prune(ctx, 24*time.Hour, false)
	if err != nil || len(gone) != 1 || gone[0] != old {
		t.Fatalf("prune: %v, %v", gone, err)
	}
	if refs := r.git("for-each-ref", "--format=%(refname)", SubmoduleBackupPrefix); refs != recent {
		t.Errorf("left: %q", refs)
	}
}

// TestRollbackLeavesNestedRepository: an agent's project generator made a
// new directory holding a git repository of its own. A backup of this tree
// cannot hold its history (git would record it as a bare commit id), so
// the rollback leaves it - files and commits - as it is and says so,
// instead of counting it among the files it removed; the next rollback,
// with nothing else to do, says so too.
func TestRollbackLeavesNestedRepository(t *testing.T) {
	r := newRepo(t)
	mustSave(t, r, "")
	r.write("app/f.txt", "generated\n")
	r.git("-C", "app", "init", "-q")
	r.git("-C", "app", "add", "f.txt")
	r.git("-C", "app", "commit", "-q", "-m", "app")
	r.write("new.txt", "new\n")

	res, err := r.st.Rollback(ctx, RollbackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Removed, ",") != "new.txt" || strings.Join(res.Repositories, ",") != "app/" {
		t.Fatalf("removed %q, repositories %q", res.Removed, res.Repositories)
	}
	if r.exists("new.txt") {
		t.Error("new.txt is still there")
	}
	if r.read("app/f.txt") != "generated\n" || r.git("-C", "app", "log", "--format=%s") != "app" {
		t.Error("the nested repository changed")
	}
	res, err = r.st.Rollback(ctx, RollbackOptions{})
	if err != nil || !res.NothingToDo || strings.Join(res.Repositories, ",") != "app/" {
		t.Fatalf("second rollback: %+v, %v", res, err)
	}
}
