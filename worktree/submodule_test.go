package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/git"
)

// withSubmodule adds a submodule at vendor/sub to repo (checked out in the
// main tree) from a repository of its own with one commit, and returns
// that repository's path.
func withSubmodule(t *testing.T, repo *git.Repo) string {
	t.Helper()
	sub := t.TempDir()
	gitT(t, sub, "init", "-q", "-b", "main")
	write(t, sub, "lib.txt", "lib\n")
	gitT(t, sub, "add", "-A")
	gitT(t, sub, "commit", "-q", "-m", "lib")
	gitT(t, repo.Root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "vendor/sub")
	gitT(t, repo.Root, "commit", "-q", "-m", "add the submodule")
	return sub
}

// worktreeWithSubmodule makes a worktree for story and checks its
// submodule out, as a post-checkout hook running git submodule update
// would.
func worktreeWithSubmodule(t *testing.T, repo *git.Repo, story string) *Worker {
	t.Helper()
	ws, errs := CreateMany(context.Background(), repo, []Request{{Story: story, Target: "refs/heads/main"}}, nil, nil)
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	w := ws[0]
	gitT(t, w.Path, "-c", "protocol.file.allow=always", "submodule", "update", "--init", "--quiet")
	if !exists(filepath.Join(w.Path, "vendor/sub/lib.txt")) {
		t.Fatal("the worktree's submodule is not checked out")
	}
	return w
}

// TestReleaseSavesSubmoduleWork: an agent committed in a submodule checked
// out in its worktree, edited a file there and left a new one. git
// worktree remove deletes that submodule's repository with the worktree,
// and the worktree's own backup holds the submodule only as a commit id;
// so the removal first saves the submodule's work - the commit, with the
// edit and the new file on top - into the main tree's checkout of the
// submodule, where `wiggum -C vendor/sub recover` finds it and from which
// the main tree's git submodule update can check the commit out.
func TestReleaseSavesSubmoduleWork(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	withSubmodule(t, repo)
	w := worktreeWithSubmodule(t, repo, "US-1")
	subDir := filepath.Join(w.Path, "vendor/sub")
	write(t, subDir, "lib.txt", "lib, changed and committed\n")
	gitT(t, subDir, "commit", "-q", "-am", "work in the submodule")
	committed := strings.TrimSpace(gitT(t, subDir, "rev-parse", "HEAD"))
	write(t, subDir, "lib.txt", "lib, changed after the commit\n")
	write(t, subDir, "new.txt", "a new file\n")

	rem, err := w.Release(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if exists(w.Path) {
		t.Fatal("worktree not removed")
	}
	if len(rem.Submodules) != 1 || rem.Submodules[0].Path != "vendor/sub" || rem.Submodules[0].Repo != "vendor/sub" {
		t.Fatalf("submodule backups: %+v", rem.Submodules)
	}
	if rem.Backup != "" {
		t.Errorf("the worktree itself, changed only inside its submodule, was backed up too: %s", rem.Backup)
	}
	mainSub := filepath.Join(repo.Root, "vendor/sub")
	ref := rem.Submodules[0].Ref
	if !strings.HasPrefix(ref, "refs/wiggum/backup/") {
		t.Fatalf("backup ref %q", ref)
	}
	if got := gitT(t, mainSub, "show", ref+":lib.txt"); got != "lib, changed after the commit\n" {
		t.Errorf("saved lib.txt: %q", got)
	}
	if got := gitT(t, mainSub, "show", ref+":new.txt"); got != "a new file\n" {
		t.Errorf("saved new.txt: %q", got)
	}
	if got := strings.TrimSpace(gitT(t, mainSub, "rev-parse", ref+"^")); got != committed {
		t.Errorf("the backup's parent is %s, want the submodule's commit %s", got, committed)
	}
	// The main tree's submodule can check the commit out.
	gitT(t, mainSub, "checkout", "-q", committed)
}

// TestReleaseLeavesUntouchedSubmodule: a checked-out submodule nobody
// changed - clean, at a commit the main tree's checkout has - costs no
// backup; a .gitmodules path reaching outside the worktree is not
// followed.
func TestReleaseLeavesUntouchedSubmodule(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	withSubmodule(t, repo)
	w := worktreeWithSubmodule(t, repo, "US-1")
	outside := t.TempDir()
	gitT(t, outside, "init", "-q")
	write(t, outside, "mine.txt", "not the worktree's\n")
	rel, err := filepath.Rel(w.Path, outside)
	if err != nil {
		t.Fatal(err)
	}
	gitT(t, w.Path, "config", "--file", ".gitmodules", "submodule.evil.path", filepath.ToSlash(rel))
	gitT(t, w.Path, "commit", "-q", "-am", "a submodule path outside")
	rem, err := w.Release(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if len(rem.Submodules) != 0 {
		t.Errorf("saved %+v", rem.Submodules)
	}
	for _, dir := range []string{filepath.Join(repo.Root, "vendor/sub"), repo.Root, outside} {
		if refs := gitT(t, dir, "for-each-ref", "refs/wiggum/"); refs != "" {
			t.Errorf("%s: refs made:\n%s", dir, refs)
		}
	}
	if st := gitT(t, outside, "status", "--porcelain"); st != "?? mine.txt\n" {
		t.Errorf("the repository outside: %q", st)
	}
}

// TestReleaseSavesSubmoduleWorkWithoutMainCheckout: the main tree has not
// checked the submodule out, so its commit goes into the main repository,
// under a prefix of its own (it is the submodule's history, not a state of
// the main tree for wiggum recover to restore).
func TestReleaseSavesSubmoduleWorkWithoutMainCheckout(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	withSubmodule(t, repo)
	gitT(t, repo.Root, "submodule", "deinit", "-q", "-f", "vendor/sub")
	if exists(filepath.Join(repo.Root, "vendor/sub/.git")) {
		t.Fatal("the main tree's submodule is still checked out")
	}
	w := worktreeWithSubmodule(t, repo, "US-1")
	subDir := filepath.Join(w.Path, "vendor/sub")
	write(t, subDir, "lib.txt", "committed in the worktree only\n")
	gitT(t, subDir, "commit", "-q", "-am", "work in the submodule")
	committed := strings.TrimSpace(gitT(t, subDir, "rev-parse", "HEAD"))

	rem, err := w.Release(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if len(rem.Submodules) != 1 || rem.Submodules[0].Repo != "" || !strings.HasPrefix(rem.Submodules[0].Ref, SubmoduleBackupPrefix) {
		t.Fatalf("submodule backups: %+v", rem.Submodules)
	}
	if got := strings.TrimSpace(gitT(t, repo.Root, "rev-parse", rem.Submodules[0].Ref+"^")); got != committed {
		t.Errorf("the backup's parent is %s, want %s", got, committed)
	}
	// What wiggum recover lists are states of the main tree (here, the
	// worktree's own backup: its submodule moved).
	for _, ref := range strings.Fields(gitT(t, repo.Root, "for-each-ref", "--format=%(refname)", "refs/wiggum/backup/")) {
		gitT(t, repo.Root, "cat-file", "-e", ref+":README")
	}
	if _, err := os.Stat(w.Path); err == nil {
		t.Error("worktree not removed")
	}
}

// TestReleaseCarriesSubmoduleRollbackBackups: a rollback in the worktree
// saved the submodule's state in the submodule's own repository, which
// goes with the worktree; the removal carries that backup over to the
// main tree's checkout under the same name, though the submodule itself
// is back where it started.
func TestReleaseCarriesSubmoduleRollbackBackups(t *testing.T) {
	for _, mainCheckout := range []bool{true, false} {
		t.Run(fmt.Sprintf("main checkout %v", mainCheckout), func(t *testing.T) {
			ctx := context.Background()
			repo := newRepo(t)
			withSubmodule(t, repo)
			if !mainCheckout {
				gitT(t, repo.Root, "submodule", "deinit", "-q", "-f", "vendor/sub")
			}
			w := worktreeWithSubmodule(t, repo, "US-1")
			if _, err := w.State.Save(ctx, "", checkpoint.SaveOptions{}); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(w.Path, "vendor/sub"), "lib.txt", "broken\n")
			res, err := w.State.Rollback(ctx, checkpoint.RollbackOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Submodules) != 1 || res.Submodules[0].Backup == "" {
				t.Fatalf("rollback: %+v", res.Submodules)
			}
			rolled, where := res.Submodules[0].Backup, filepath.Join(repo.Root, "vendor/sub")
			if !mainCheckout {
				rolled, where = SubmoduleBackupPrefix+strings.TrimPrefix(rolled, checkpoint.BackupPrefix), repo.Root
			}
			rem, err := w.Release(ctx, repo)
			if err != nil {
				t.Fatal(err)
			}
			if len(rem.Submodules) != 1 || len(rem.Submodules[0].Earlier) != 1 || rem.Submodules[0].Earlier[0] != rolled {
				t.Fatalf("submodule backups: %+v", rem.Submodules)
			}
			if got := gitT(t, where, "show", rolled+":lib.txt"); got != "broken\n" {
				t.Errorf("carried-over backup's lib.txt: %q", got)
			}
		})
	}
}

// TestRefreshKeepsWorktreeWithMovedSubmodule: a worktree made ahead, its
// submodule checked out, is not moved past a commit that changes the
// submodule's recorded commit (git reset would leave the submodule
// behind, and the story's commit would undo the change); past any other
// commit it moves as before.
func TestRefreshKeepsWorktreeWithMovedSubmodule(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	withSubmodule(t, repo)
	w := worktreeWithSubmodule(t, repo, "US-1")
	defer w.Lease.Release()
	base := w.Base

	write(t, repo.Root, "other.txt", "landed\n")
	gitT(t, repo.Root, "add", "other.txt")
	gitT(t, repo.Root, "commit", "-q", "-m", "another story")
	tip := strings.TrimSpace(gitT(t, repo.Root, "rev-parse", "HEAD"))
	if moved, err := w.Refresh(ctx, tip); err != nil || !moved {
		t.Fatalf("refresh past a commit that leaves the submodule alone: moved %v, %v", moved, err)
	}

	mainSub := filepath.Join(repo.Root, "vendor/sub")
	write(t, mainSub, "lib.txt", "lib v2\n")
	gitT(t, mainSub, "commit", "-q", "-am", "lib v2")
	gitT(t, repo.Root, "commit", "-q", "-am", "bump vendor/sub")
	bumped := strings.TrimSpace(gitT(t, repo.Root, "rev-parse", "HEAD"))
	moved, err := w.Refresh(ctx, bumped)
	if moved || err == nil || !strings.Contains(err.Error(), "submodule vendor/sub") {
		t.Fatalf("refresh past a submodule bump: moved %v, %v", moved, err)
	}
	if w.Base != tip || strings.TrimSpace(gitT(t, w.Path, "rev-parse", "HEAD")) != tip {
		t.Errorf("the worktree moved: base %s, HEAD %s, want %s (made at %s)", w.Base, gitT(t, w.Path, "rev-parse", "HEAD"), tip, base)
	}
	if st := gitT(t, w.Path, "status", "--porcelain", "--ignore-submodules=none"); st != "" {
		t.Errorf("worktree status:\n%s", st)
	}
}

// TestCreateChecksOutSubmodules: a worktree gets the submodules the main
// tree has checked out, at the commits it records for them, cloned from
// the main tree's checkouts - no network: the submodule's URL here points
// at nothing that answers - with origin pointing where the main tree's
// does; it is clean. One the main tree has not checked out stays empty,
// and one whose recorded commit the main tree's checkout lacks stays
// empty too, with a note saying why.
func TestCreateChecksOutSubmodules(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	lib := withSubmodule(t, repo)
	const nowhere = "http://127.0.0.1:9/nothing-listens-here"
	gitT(t, repo.Root, "config", "--file", ".gitmodules", "submodule.vendor/sub.url", nowhere)
	gitT(t, repo.Root, "config", "submodule.vendor/sub.url", nowhere)
	// A second submodule the main tree never checks out.
	gitT(t, repo.Root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "vendor/other")
	gitT(t, repo.Root, "commit", "-q", "-am", "point the submodules elsewhere")
	gitT(t, repo.Root, "submodule", "deinit", "-q", "-f", "vendor/other")

	ws, errs := CreateMany(ctx, repo, []Request{{Story: "US-1", Target: "refs/heads/main"}}, nil, nil)
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	w := ws[0]
	defer w.Lease.Release()
	if len(w.Notes) != 0 {
		t.Errorf("notes: %q", w.Notes)
	}
	sub := filepath.Join(w.Path, "vendor/sub")
	if got := strings.TrimSpace(gitT(t, sub, "rev-parse", "HEAD")); got != strings.TrimSpace(gitT(t, repo.Root, "rev-parse", "HEAD:vendor/sub")) {
		t.Errorf("the worktree's submodule is at %s", got)
	}
	if got, want := strings.TrimSpace(gitT(t, sub, "remote", "get-url", "origin")), strings.TrimSpace(gitT(t, filepath.Join(repo.Root, "vendor/sub"), "remote", "get-url", "origin")); got != want {
		t.Errorf("origin %q, want the main tree's %q", got, want)
	}
	if ents, _ := os.ReadDir(filepath.Join(w.Path, "vendor/other")); len(ents) != 0 {
		t.Errorf("vendor/other, not checked out in the main tree, has %d entries", len(ents))
	}
	if st := gitT(t, w.Path, "status", "--porcelain", "--ignore-submodules=none"); st != "" {
		t.Errorf("worktree status:\n%s", st)
	}

	// The main tree records a submodule commit its own checkout lacks.
	missing := strings.Repeat("1", 40)
	gitT(t, repo.Root, "update-index", "--cacheinfo", "160000,"+missing+",vendor/sub")
	gitT(t, repo.Root, "commit", "-q", "-m", "record a commit nobody has")
	ws, errs = CreateMany(ctx, repo, []Request{{Story: "US-2", Target: "refs/heads/main"}}, nil, nil)
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	w2 := ws[0]
	defer w2.Lease.Release()
	if len(w2.Notes) != 1 || !strings.Contains(w2.Notes[0], "submodule vendor/sub is not checked out") || !strings.Contains(w2.Notes[0], missing[:12]) {
		t.Errorf("notes: %q", w2.Notes)
	}
	if ents, _ := os.ReadDir(filepath.Join(w2.Path, "vendor/sub")); len(ents) != 0 {
		t.Errorf("vendor/sub, at a commit nobody has, has %d entries", len(ents))
	}
	if st := gitT(t, w2.Path, "status", "--porcelain", "--ignore-submodules=none"); st != "" {
		t.Errorf("worktree status:\n%s", st)
	}
}

// TestNestedSubmodules: a submodule inside a submodule is checked out in a
// new worktree as the main tree has it, and an edit inside it is saved,
// before the worktree goes, into the main tree's checkout of that nested
// submodule - and only there: the submodule around it changed nothing of
// its own.
func TestNestedSubmodules(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	deep, mid := t.TempDir(), t.TempDir()
	gitT(t, deep, "init", "-q", "-b", "main")
	write(t, deep, "d.txt", "deep\n")
	gitT(t, deep, "add", "-A")
	gitT(t, deep, "commit", "-q", "-m", "deep")
	gitT(t, mid, "init", "-q", "-b", "main")
	gitT(t, mid, "-c", "protocol.file.allow=always", "submodule", "add", "-q", deep, "inner")
	gitT(t, mid, "commit", "-q", "-m", "mid")
	gitT(t, repo.Root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", mid, "vendor/mid")
	gitT(t, repo.Root, "-c", "protocol.file.allow=always", "submodule", "update", "--init", "--recursive", "-q")
	gitT(t, repo.Root, "commit", "-q", "-m", "add vendor/mid")

	ws, errs := CreateMany(ctx, repo, []Request{{Story: "US-1", Target: "refs/heads/main"}}, nil, nil)
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	w := ws[0]
	if len(w.Notes) != 0 {
		t.Errorf("notes: %q", w.Notes)
	}
	inner := filepath.Join(w.Path, "vendor/mid/inner")
	if !exists(filepath.Join(inner, "d.txt")) {
		t.Fatal("the nested submodule is not checked out in the worktree")
	}
	write(t, inner, "d.txt", "deep, edited\n")
	rem, err := w.Release(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if len(rem.Submodules) != 1 || rem.Submodules[0].Path != "vendor/mid/inner" || rem.Submodules[0].Repo != "vendor/mid/inner" {
		t.Fatalf("submodule backups: %+v", rem.Submodules)
	}
	if got := gitT(t, filepath.Join(repo.Root, "vendor/mid/inner"), "show", rem.Submodules[0].Ref+":d.txt"); got != "deep, edited\n" {
		t.Errorf("saved d.txt: %q", got)
	}
	if refs := gitT(t, filepath.Join(repo.Root, "vendor/mid"), "for-each-ref", "refs/wiggum/"); refs != "" {
		t.Errorf("backups in vendor/mid:\n%s", refs)
	}
}

// TestReleaseSavesRepositoriesTheAgentMade: an agent's project generator
// ran git init in the worktree. One repository, with a commit, was then
// recorded by the story's commit (git add makes it a bare commit id);
// another has files and no commit yet and was never added. git worktree
// remove deletes both with their files and history; the removal saves
// both first, into the main repository (the main tree has no checkout of
// either), under refs/wiggum/submodule-backup/.
func TestReleaseSavesRepositoriesTheAgentMade(t *testing.T) {
	for _, settle := range []bool{true, false} {
		t.Run(fmt.Sprintf("settled %v", settle), func(t *testing.T) { releaseSavesRepositoriesTheAgentMade(t, settle) })
	}
}

func releaseSavesRepositoriesTheAgentMade(t *testing.T, settle bool) {
	ctx := context.Background()
	repo := newRepo(t)
	ws, errs := CreateMany(ctx, repo, []Request{{Story: "US-1", Target: "refs/heads/main"}}, nil, nil)
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	w := ws[0]
	app := filepath.Join(w.Path, "app")
	write(t, app, "f.txt", "generated and committed\n")
	gitT(t, app, "init", "-q")
	gitT(t, app, "add", "f.txt")
	gitT(t, app, "commit", "-q", "-m", "generated")
	appHead := strings.TrimSpace(gitT(t, app, "rev-parse", "HEAD"))
	write(t, app, "g.txt", "written after\n")
	gitT(t, w.Path, "add", "app")
	gitT(t, w.Path, "commit", "-q", "-m", "the story, with app recorded")
	scratch := filepath.Join(w.Path, "scratch")
	write(t, scratch, "notes.txt", "no commit yet\n")
	gitT(t, scratch, "init", "-q")
	if settle {
		w.Settle(ctx)
	}

	rem, err := w.Release(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]SubmoduleBackup{}
	for _, b := range rem.Submodules {
		got[b.Path] = b
	}
	if len(got) != 2 || got["app"].Repo != "" || got["scratch"].Repo != "" {
		t.Fatalf("saved: %+v", rem.Submodules)
	}
	if p := strings.TrimSpace(gitT(t, repo.Root, "rev-parse", got["app"].Ref+"^")); p != appHead {
		t.Errorf("app's backup sits on %s, want its commit %s", p, appHead)
	}
	if s := gitT(t, repo.Root, "show", got["app"].Ref+":g.txt"); s != "written after\n" {
		t.Errorf("app's g.txt: %q", s)
	}
	if s := gitT(t, repo.Root, "show", got["scratch"].Ref+":notes.txt"); s != "no commit yet\n" {
		t.Errorf("scratch's notes.txt: %q", s)
	}
	for _, b := range got {
		if !strings.HasPrefix(b.Ref, SubmoduleBackupPrefix) {
			t.Errorf("%s saved as %s", b.Path, b.Ref)
		}
	}
}

// TestFollowSubmodules: a landing that moves a submodule's recorded commit
// moves the main tree's checkout with it when the checkout was clean at
// the old commit and has the new one; otherwise it leaves the checkout
// and says what to do, never moving it from where the person put it.
func TestFollowSubmodules(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	src := withSubmodule(t, repo)
	subDir := filepath.Join(repo.Root, "vendor/sub")
	old := strings.TrimSpace(gitT(t, repo.Root, "rev-parse", "HEAD"))
	c1 := strings.TrimSpace(gitT(t, subDir, "rev-parse", "HEAD"))
	write(t, src, "lib.txt", "lib 2\n")
	gitT(t, src, "commit", "-q", "-am", "two")
	c2 := strings.TrimSpace(gitT(t, src, "rev-parse", "HEAD"))
	// The target records c2, which the checkout has not fetched yet.
	gitT(t, repo.Root, "update-index", "--cacheinfo", "160000,"+c2+",vendor/sub")
	gitT(t, repo.Root, "commit", "-q", "-m", "sub two")
	now := strings.TrimSpace(gitT(t, repo.Root, "rev-parse", "HEAD"))

	notes := FollowSubmodules(ctx, repo, "refs/heads/main", old, now)
	if len(notes) != 1 || !strings.Contains(notes[0], "vendor/sub is behind the commit main now records for it ("+c2[:12]+"), which its checkout does not have: run git submodule update -- vendor/sub") {
		t.Fatalf("commit missing: %q", notes)
	}
	if head := strings.TrimSpace(gitT(t, subDir, "rev-parse", "HEAD")); head != c1 {
		t.Fatalf("moved to %s without the commit", head)
	}

	// Put where the person put it: left.
	write(t, subDir, "mine.txt", "mine\n")
	gitT(t, subDir, "add", "mine.txt")
	gitT(t, subDir, "commit", "-q", "-m", "mine")
	mine := strings.TrimSpace(gitT(t, subDir, "rev-parse", "HEAD"))
	gitT(t, subDir, "fetch", "-q", "origin")
	notes = FollowSubmodules(ctx, repo, "refs/heads/main", old, now)
	if len(notes) != 1 || !strings.Contains(notes[0], "vendor/sub is checked out at "+mine[:12]+", not at the commit main recorded for it before") {
		t.Fatalf("moved by the person: %q", notes)
	}

	// Clean at the old commit, with the new one: moved, detached.
	gitT(t, subDir, "checkout", "-q", "--detach", c1)
	notes = FollowSubmodules(ctx, repo, "refs/heads/main", old, now)
	if len(notes) != 1 || !strings.Contains(notes[0], "vendor/sub checked out at "+c2[:12]+", the commit main now records for it") {
		t.Fatalf("clean: %q", notes)
	}
	if head := strings.TrimSpace(gitT(t, subDir, "rev-parse", "HEAD")); head != c2 {
		t.Fatalf("checkout at %s, want %s", head, c2)
	}
	if st := gitT(t, repo.Root, "status", "--porcelain"); st != "" {
		t.Fatalf("main tree not clean: %q", st)
	}
	if got := FollowSubmodules(ctx, repo, "refs/heads/main", old, now); len(got) != 0 {
		t.Fatalf("again: %q", got)
	}
}
