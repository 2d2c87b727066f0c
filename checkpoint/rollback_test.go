package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wiggum-dev/wiggum/internal/layout"
)

var ctx = context.Background()

func mustSave(t *testing.T, r *testRepo, session string) *Checkpoint {
	t.Helper()
	cp, err := r.st.Save(ctx, session, SaveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

func wantRefused(t *testing.T, r *testRepo, opts RollbackOptions, reason string) {
	t.Helper()
	before := r.fingerprint() + r.git("for-each-ref")
	calls := r.watchRefTransactions()
	_, err := r.st.Rollback(ctx, opts)
	var re *RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("rollback: got %v, want a refusal", err)
	}
	if !strings.Contains(re.Reason, reason) {
		t.Fatalf("refusal %q does not say %q", re.Reason, reason)
	}
	if after := r.fingerprint() + r.git("for-each-ref"); after != before {
		t.Fatalf("a refused rollback changed the repository:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// The ref transaction's git, started ahead, was stopped before it
	// read a line: not even an empty transaction reached the hooks.
	if got := calls(); got != "" {
		t.Fatalf("a refused rollback ran ref transactions:\n%s", got)
	}
}

// watchRefTransactions installs a reference-transaction hook that records
// each state git announces, and returns what it recorded so far. It leaves
// out what depends on git's version: the "preparing" state (git 2.46 and
// later announce it before "prepared") and the line for HEAD when HEAD
// only follows its branch (git 2.39 names it, newer gits do not).
func (r *testRepo) watchRefTransactions() func() string {
	r.t.Helper()
	log := filepath.Join(r.t.TempDir(), "transactions")
	hook := filepath.Join(r.st.Repo.HooksDir, "reference-transaction")
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		r.t.Fatal(err)
	}
	script := "#!/bin/sh\n[ \"$1\" = preparing ] && { cat > /dev/null; exit 0; }\n{ echo \"$1\"; grep -v ' HEAD$'; } >> '" + log + "'\nexit 0\n"
	if err := os.WriteFile(hook, []byte(script), 0o755); err != nil {
		r.t.Fatal(err)
	}
	return func() string {
		data, err := os.ReadFile(log)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			r.t.Fatal(err)
		}
		return string(data)
	}
}

// A rollback moves its refs in one transaction, in the git it started
// ahead of knowing the transaction: the backup ref and the branch (git
// 2.39 names HEAD too, which points at it), nothing else, once.
func TestRollbackIsOneRefTransaction(t *testing.T) {
	r := newRepo(t)
	cp := mustSave(t, r, "")
	r.commit("agent.txt", "agent\n", "agent")
	head := r.git("rev-parse", "HEAD")
	calls := r.watchRefTransactions()
	res, err := r.st.Rollback(ctx, RollbackOptions{DiscardForeign: true})
	if err != nil {
		t.Fatal(err)
	}
	backup := r.git("rev-parse", res.BackupRef)
	zero := strings.Repeat("0", len(head))
	update := zero + " " + backup + " " + res.BackupRef + "\n" + head + " " + cp.Head + " refs/heads/main\n"
	if want := "prepared\n" + update + "committed\n" + update; calls() != want {
		t.Fatalf("ref transactions:\n%s\nwant:\n%s", calls(), want)
	}
}

func TestRollbackRefusesWithoutCheckpoint(t *testing.T) {
	r := newRepo(t)
	wantRefused(t, r, RollbackOptions{}, "no checkpoint")
}

// A checkpoint record deleted after the checkpoint (an agent's patch in
// .ralph/wiggum) is not "no checkpoint": the refusal told the agent to run
// `wiggum checkpoint`, which would move the rollback point past its own
// failed work.
func TestRollbackRefusesDeletedCheckpointRecord(t *testing.T) {
	r := newRepo(t)
	mustSave(t, r, "s1")
	if err := os.Remove(r.st.RuntimePath(layout.CheckpointFile)); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, r, RollbackOptions{Session: "s1"}, "was deleted after the checkpoint was taken")
	_, err := r.st.Rollback(ctx, RollbackOptions{Session: "s1"})
	if strings.Contains(err.Error(), "run 'wiggum checkpoint'") {
		t.Fatalf("the refusal asks for a new checkpoint: %v", err)
	}
}

func TestRollbackRefusesForeignCommitWithJournal(t *testing.T) {
	r := newRepo(t)
	r.installJournalHook()
	mustSave(t, r, "s1")
	r.sessionCommit("s1", "agent.txt", "agent\n")
	r.sessionCommit("", "user.txt", "the user's precious work\n") // made outside the session
	r.write("scratch.txt", "uncommitted\n")
	wantRefused(t, r, RollbackOptions{Session: "s1"}, "outside any wiggum session")
}

func TestRollbackRefusesOtherSessionsCommit(t *testing.T) {
	r := newRepo(t)
	r.installJournalHook()
	mustSave(t, r, "s1")
	r.sessionCommit("s2", "other.txt", "other loop\n")
	wantRefused(t, r, RollbackOptions{Session: "s1"}, "another wiggum session")
}

func TestRollbackRefusesUnjournaledCommit(t *testing.T) {
	r := newRepo(t)
	r.installJournalHook()
	mustSave(t, r, "s1")
	r.commit("x.txt", "x\n", "not journaled")
	wantRefused(t, r, RollbackOptions{Session: "s1"}, "not in the commit journal")
}

func TestRollbackRefusesDivergedHistory(t *testing.T) {
	r := newRepo(t)
	r.commit("a.txt", "a\n", "a")
	mustSave(t, r, "")
	// Someone resets below the checkpoint and commits again.
	r.git("reset", "-q", "--hard", "HEAD~1")
	r.commit("b.txt", "b\n", "b")
	wantRefused(t, r, RollbackOptions{}, "no longer an ancestor")
}

func TestRollbackRefusesAmendedCheckpoint(t *testing.T) {
	r := newRepo(t)
	mustSave(t, r, "")
	r.write("README", "amended\n")
	r.git("commit", "-q", "-a", "--amend", "-m", "amended")
	wantRefused(t, r, RollbackOptions{}, "no longer an ancestor")
}

func TestRollbackRefusesBranchSwitch(t *testing.T) {
	r := newRepo(t)
	mustSave(t, r, "")
	r.git("switch", "-q", "-c", "feature")
	r.commit("f.txt", "f\n", "feature work")
	wantRefused(t, r, RollbackOptions{}, "branch changed")
}

func TestRollbackRefusesDuringRebase(t *testing.T) {
	r := newRepo(t)
	r.commit("c.txt", "base\n", "base")
	r.git("switch", "-q", "-c", "topic")
	r.commit("c.txt", "topic\n", "topic change")
	r.git("switch", "-q", "main")
	r.commit("c.txt", "main\n", "main change")
	r.git("switch", "-q", "topic")
	mustSave(t, r, "")
	cmd := []string{"rebase", "main"}
	if _, err := r.st.Repo.Run(ctx, cmd...); err == nil {
		t.Fatal("rebase should stop on the conflict")
	}
	if r.st.Repo.InProgress() == "" {
		t.Fatal("no rebase in progress")
	}
	wantRefused(t, r, RollbackOptions{}, "rebase")
}

func TestRollbackRefusesDuringMerge(t *testing.T) {
	r := newRepo(t)
	r.commit("m.txt", "base\n", "base")
	r.git("switch", "-q", "-c", "other")
	r.commit("m.txt", "other\n", "other")
	r.git("switch", "-q", "main")
	mustSave(t, r, "")
	r.commit("m.txt", "mine\n", "mine")
	if _, err := r.st.Repo.Run(ctx, "merge", "other"); err == nil {
		t.Fatal("merge should conflict")
	}
	wantRefused(t, r, RollbackOptions{}, "merge")
}

func TestRollbackRefusesMissingCheckpointCommit(t *testing.T) {
	r := newRepo(t)
	cp := mustSave(t, r, "")
	cp.Head = strings.Repeat("ab", 20)
	path, _ := r.st.Runtime(layout.CheckpointFile)
	data := `{"head":"` + cp.Head + `","branch":"refs/heads/main","time":"2026-01-01T00:00:00Z"}`
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, r, RollbackOptions{}, "no longer exists")
}

func TestRollbackCorruptCheckpointIsAnError(t *testing.T) {
	r := newRepo(t)
	mustSave(t, r, "")
	path, _ := r.st.Runtime(layout.CheckpointFile)
	for _, bad := range []string{"", "{", `{"head":"nope","time":"2026-01-01T00:00:00Z"}`, "\x00\x01garbage", `{"head":"` + strings.Repeat("a", 40) + `"}`} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		before := r.fingerprint()
		_, err := r.st.Rollback(ctx, RollbackOptions{})
		var ce *CorruptError
		if !errors.As(err, &ce) {
			t.Fatalf("corrupt checkpoint %q: got %v, want a CorruptError", bad, err)
		}
		if _, err := r.st.Load(); errors.Is(err, ErrNoCheckpoint) {
			t.Fatalf("corrupt checkpoint %q read as no checkpoint", bad)
		}
		if r.fingerprint() != before {
			t.Fatal("a corrupt checkpoint changed the repository")
		}
	}
}

func TestRollbackSavesEverythingAndRestoresCheckpoint(t *testing.T) {
	r := newRepo(t)
	r.installJournalHook()
	r.write("pre-existing.txt", "untracked before the checkpoint\n")
	r.write("README", "user edit before the checkpoint\n")
	r.write("build.log", "ignored\n")
	cp := mustSave(t, r, "s1")
	if cp.Snapshot == "" {
		t.Fatal("a dirty tree must be snapshotted")
	}
	want := r.fingerprint()

	// The agent's attempt: commits, staged, unstaged, new and deleted files,
	// and it even commits the pre-existing untracked file.
	r.sessionCommit("s1", "agent1.txt", "agent commit 1\n")
	r.git("add", "pre-existing.txt")
	r.git("commit", "-q", "-m", "agent sweeps it in")
	r.t.Setenv(layout.SessionEnv, "s1")
	if err := r.st.RecordCommit(ctx); err != nil {
		t.Fatal(err)
	}
	r.t.Setenv(layout.SessionEnv, "")
	r.write("staged.txt", "staged content\n")
	r.git("add", "staged.txt")
	r.write("README", "agent edit, unstaged\n")
	r.write("deep/new/dir/new.txt", "brand new\n")
	r.write("bin.dat", "\x00\x01\x02binary\xff")
	r.write("build.log", "ignored, changed\n")
	attempt := map[string]string{
		"agent1.txt": "agent commit 1\n", "staged.txt": "staged content\n", "README": "agent edit, unstaged\n",
		"deep/new/dir/new.txt": "brand new\n", "bin.dat": "\x00\x01\x02binary\xff", "pre-existing.txt": "untracked before the checkpoint\n",
	}
	attemptHead := r.git("rev-parse", "HEAD")

	res, err := r.st.Rollback(ctx, RollbackOptions{Session: "s1", Reason: "tests failed"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Commits) != 2 || res.BackupRef == "" {
		t.Fatalf("result: %+v", res)
	}
	if !strings.HasPrefix(res.BackupRef, BackupPrefix) {
		t.Fatalf("backup ref %s not under %s", res.BackupRef, BackupPrefix)
	}
	// Ignored files are not the rollback's business.
	r.write("build.log", "ignored\n")
	if got := r.fingerprint(); got != want {
		t.Fatalf("tree after rollback differs from the checkpoint:\nwant:\n%s\ngot:\n%s", want, got)
	}
	if r.exists("deep") {
		t.Fatal("emptied directories of new files must go")
	}
	// The backup holds the discarded HEAD and every uncommitted file.
	if p := r.git("rev-parse", res.BackupRef+"^1"); p != attemptHead {
		t.Fatalf("backup parent %s, want the discarded HEAD %s", p, attemptHead)
	}
	for path, content := range attempt {
		if got := r.git("cat-file", "-p", res.BackupRef+":"+path); got != strings.TrimSpace(content) {
			t.Fatalf("backup %s = %q, want %q", path, got, content)
		}
	}
	if strings.Contains(r.git("ls-tree", "-r", "--name-only", res.BackupRef), "build.log") {
		t.Fatal("ignored files must not be in the backup")
	}

	// recover brings the attempt back byte for byte.
	rr, err := r.st.Restore(ctx, strings.TrimPrefix(res.BackupRef, BackupPrefix))
	if err != nil {
		t.Fatal(err)
	}
	if r.git("rev-parse", "HEAD") != attemptHead {
		t.Fatal("recover did not bring back the discarded commits")
	}
	for path, content := range attempt {
		if got := r.read(path); got != content {
			t.Fatalf("recovered %s = %q, want %q", path, got, content)
		}
	}
	if rr.BackupRef == "" {
		t.Fatal("recover must save the state it replaces")
	}
}

func TestRollbackNothingToDo(t *testing.T) {
	r := newRepo(t)
	mustSave(t, r, "")
	res, err := r.st.Rollback(ctx, RollbackOptions{})
	if err != nil || !res.NothingToDo {
		t.Fatalf("got %+v, %v", res, err)
	}
	if out := r.git("for-each-ref", BackupPrefix); out != "" {
		t.Fatalf("no-op rollback made a backup: %s", out)
	}
}

func TestRollbackDryRunChangesNothing(t *testing.T) {
	r := newRepo(t)
	mustSave(t, r, "")
	r.commit("a.txt", "a\n", "a")
	r.write("new.txt", "n\n")
	before := r.fingerprint()
	res, err := r.st.Rollback(ctx, RollbackOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Commits) != 1 || len(res.Removed) != 1 || res.Removed[0] != "new.txt" {
		t.Fatalf("dry run: %+v", res)
	}
	if r.fingerprint() != before {
		t.Fatal("dry run changed the repository")
	}
}

func TestRollbackWithoutJournalTrustsAncestry(t *testing.T) {
	r := newRepo(t)
	cp := mustSave(t, r, "")
	r.commit("a.txt", "a\n", "a")
	res, err := r.st.Rollback(ctx, RollbackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.git("rev-parse", "HEAD") != cp.Head || r.exists("a.txt") {
		t.Fatal("not rolled back")
	}
	if r.git("rev-parse", res.BackupRef+":a.txt") == "" {
		t.Fatal("commit not in backup")
	}
}

func TestRollbackDetached(t *testing.T) {
	r := newRepo(t)
	r.git("switch", "-q", "--detach")
	if _, err := r.st.Save(ctx, "", SaveOptions{}); err == nil {
		t.Fatal("a detached checkpoint needs AllowDetached")
	}
	cp, err := r.st.Save(ctx, "", SaveOptions{AllowDetached: true})
	if err != nil {
		t.Fatal(err)
	}
	r.commit("d.txt", "d\n", "detached work")
	if _, err := r.st.Rollback(ctx, RollbackOptions{}); err != nil {
		t.Fatal(err)
	}
	if r.git("rev-parse", "HEAD") != cp.Head {
		t.Fatal("detached HEAD not rolled back")
	}
}

// A checkpoint moves its record ref in one transaction, in the git it
// started beside its status: the first from nothing, the next from the
// value the first left; a checkpoint refused moves nothing.
func TestSaveIsOneRefTransaction(t *testing.T) {
	r := newRepo(t)
	ref := RecordRef(r.st.Repo.GitDir, r.st.Repo.CommonDir)
	calls := r.watchRefTransactions()
	first := mustSave(t, r, "")
	zero := strings.Repeat("0", len(first.Head))
	want := zero + " " + first.Head + " " + ref + "\n"
	if got, w := calls(), "prepared\n"+want+"committed\n"+want; got != w {
		t.Fatalf("first checkpoint's ref transactions:\n%s\nwant:\n%s", got, w)
	}
	r.write("dirty.txt", "dirty\n")
	second := mustSave(t, r, "")
	next := first.Head + " " + second.Snapshot + " " + ref + "\n"
	if got, w := calls(), "prepared\n"+want+"committed\n"+want+"prepared\n"+next+"committed\n"+next; got != w {
		t.Fatalf("second checkpoint's ref transactions:\n%s\nwant:\n%s", got, w)
	}
	r.git("switch", "-q", "--detach")
	before := calls()
	if _, err := r.st.Save(ctx, "", SaveOptions{}); err == nil || !strings.Contains(err.Error(), "detached") {
		t.Fatalf("got %v", err)
	}
	if got := calls(); got != before {
		t.Fatalf("a refused checkpoint ran ref transactions:\n%s", strings.TrimPrefix(got, before))
	}
}

func TestSaveRefusals(t *testing.T) {
	t.Run("no commits", func(t *testing.T) {
		r := newRepo(t)
		r.git("switch", "-q", "--orphan", "empty")
		if _, err := r.st.Save(ctx, "", SaveOptions{}); err == nil || !strings.Contains(err.Error(), "no commits") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("merge in progress", func(t *testing.T) {
		r := newRepo(t)
		r.commit("m.txt", "base\n", "base")
		r.git("switch", "-q", "-c", "other")
		r.commit("m.txt", "other\n", "other")
		r.git("switch", "-q", "main")
		r.commit("m.txt", "mine\n", "mine")
		r.st.Repo.Run(ctx, "merge", "other")
		if _, err := r.st.Save(ctx, "", SaveOptions{}); err == nil || !strings.Contains(err.Error(), "merge") {
			t.Fatalf("got %v", err)
		}
	})
}

func TestRollbackInLinkedWorktree(t *testing.T) {
	r := newRepo(t)
	wt := filepath.Join(t.TempDir(), "wt")
	r.git("worktree", "add", "-q", "-b", "side", wt)
	st, err := Open(ctx, filepath.Join(wt))
	if err != nil {
		t.Fatal(err)
	}
	if st.Repo.Root != wt {
		t.Fatalf("root %s, want %s", st.Repo.Root, wt)
	}
	cp, err := st.Save(ctx, "", SaveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(wt, "w.txt"), []byte("w\n"), 0o644)
	if _, err := st.Rollback(ctx, RollbackOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(wt, "w.txt")); err == nil {
		t.Fatal("new file in the worktree survived")
	}
	if head, _ := st.Repo.Head(ctx); head != cp.Head {
		t.Fatal("worktree HEAD moved")
	}
	if _, err := os.Stat(filepath.Join(r.dir, layout.RuntimeDir, layout.CheckpointFile)); err == nil {
		t.Fatal("the worktree's checkpoint leaked into the main tree")
	}
	// Dirty checkpoints in both trees keep separate snapshot refs.
	r.write("dirty-main.txt", "m\n")
	mustSave(t, r, "")
	os.WriteFile(filepath.Join(wt, "dirty-wt.txt"), []byte("w\n"), 0o644)
	if _, err := st.Save(ctx, "", SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	refs := r.git("for-each-ref", "--format=%(refname)", "refs/wiggum/checkpoints/")
	if strings.Count(refs, "\n") != 1 || !strings.Contains(refs, "checkpoints/main") || !strings.Contains(refs, "checkpoints/worktree-wt") {
		t.Fatalf("snapshot refs: %q", refs)
	}
}

// A rollback whose ref transaction fails (here git's reference-transaction
// hook rejects it; a branch that moved meanwhile fails it the same way)
// has written no file: the blobs it reads while the refs move are written
// only after they have. With HEAD where it was, that is a failure saying
// git's cause, not a refusal for a HEAD that moved.
func TestRollbackWritesNothingWhenTheRefsDoNotMove(t *testing.T) {
	r := newRepo(t)
	r.write("kept.txt", "dirty at the checkpoint\n")
	mustSave(t, r, "")
	r.commit("agent.txt", "agent\n", "agent")
	r.write("README", "the agent's edit\n")
	r.write("new.txt", "the agent's new file\n")
	hook := filepath.Join(r.st.Repo.HooksDir, "reference-transaction")
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hook, []byte("#!/bin/sh\n[ \"$1\" = prepared ] && exit 1\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := r.fingerprint()
	_, err := r.st.Rollback(ctx, RollbackOptions{DiscardForeign: true})
	var refused *RefusedError
	if err == nil || errors.As(err, &refused) || !strings.Contains(err.Error(), "aborted by hook") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("rollback with its ref transaction rejected: %v, want git's cause and nothing changed", err)
	}
	if after := r.fingerprint(); after != before {
		t.Fatalf("a rollback whose refs did not move changed the tree:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if r.exists(".git/index.lock") {
		t.Fatal("index.lock left behind")
	}
}

// A new directory that is a repository of its own (an agent's git init, a
// generator's) is left as it is by a plain rollback; with SetAsideRepos its
// .git goes under NestedAside, its history whole there, and its files are
// saved and removed: the tree is back at the checkpoint. A repository that
// was there at the checkpoint is never touched.
func TestRollbackSetsAsideNewRepositories(t *testing.T) {
	for _, other := range []bool{false, true} {
		t.Run(fmt.Sprintf("other changes %v", other), func(t *testing.T) {
			r := newRepo(t)
			mkRepo := func(dir, content string) {
				r.write(dir+"/f.txt", content)
				sub := filepath.Join(r.dir, dir)
				for _, args := range [][]string{{"init", "-q"}, {"add", "f.txt"}, {"-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "-m", "generated " + dir}} {
					if out, err := exec.Command("git", append([]string{"-C", sub}, args...)...).CombinedOutput(); err != nil {
						t.Fatalf("git %v: %v\n%s", args, err, out)
					}
				}
			}
			mkRepo("mine", "the person's own\n")
			mustSave(t, r, "")
			mkRepo("gen", "generated\n")
			r.write("gen/after.txt", "written after its commit\n")
			if other {
				r.write("scratch.txt", "the attempt's\n")
			}
			dry, err := r.st.Rollback(ctx, RollbackOptions{DryRun: true, SetAsideRepos: true})
			if err != nil || !slices.Equal(dry.Repositories, []string{"gen/"}) || !r.exists("gen/.git") {
				t.Fatalf("dry run: %+v, %v; gen/.git there: %v", dry, err, r.exists("gen/.git"))
			}
			res, err := r.st.Rollback(ctx, RollbackOptions{SetAsideRepos: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.SetAside) != 1 || res.SetAside[0].Path != "gen" || len(res.Repositories) != 0 {
				t.Fatalf("set aside %+v, left %v", res.SetAside, res.Repositories)
			}
			if r.exists("gen") || r.exists("scratch.txt") {
				t.Fatal("the attempt's files are still in the tree")
			}
			if !r.exists("mine/.git") || r.read("mine/f.txt") != "the person's own\n" {
				t.Fatal("the repository there at the checkpoint was touched")
			}
			aside := res.SetAside[0].Aside
			if !strings.HasPrefix(aside, filepath.Join(r.st.Repo.CommonDir, NestedAside)+string(filepath.Separator)) {
				t.Fatalf("set aside in %s", aside)
			}
			if log := r.git("--git-dir="+aside, "log", "--format=%s"); log != "generated gen" {
				t.Fatalf("the repository's history where it was set aside: %q", log)
			}
			b := res.SetAside[0].Backup
			if r.git("show", b+":gen/f.txt") != "generated" || r.git("show", b+":gen/after.txt") != "written after its commit" {
				t.Fatalf("the files are not in the backup %s", b)
			}
			if other && res.BackupRef == b {
				t.Fatal("the attempt's other changes and the repository share one backup; want the first pass's")
			}
			if !other && res.BackupRef != b {
				t.Fatalf("backup %q, want the repository's %q", res.BackupRef, b)
			}
			if st := r.git("status", "--porcelain"); st != "?? mine/" {
				t.Fatalf("status after: %q", st)
			}
		})
	}
}
