package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// lostWorktree makes a worktree for story, writes an agent's work in it
// (a new file and an edit to a tracked one, nothing committed) and removes
// its .git, as an agent running rm -rf .git does.
func lostWorktree(t *testing.T, w *Worker) {
	t.Helper()
	write(t, w.Path, "work.txt", "work of "+w.Story+"\n")
	write(t, w.Path, "a.txt", "edited by "+w.Story+"\n")
	if err := os.Remove(filepath.Join(w.Path, ".git")); err != nil {
		t.Fatal(err)
	}
}

// lostSetup makes a repository and a leased worktree for US-1 in it that
// lost its .git (lostWorktree); head is main's tip.
func lostSetup(t *testing.T) (ctx context.Context, repo *git.Repo, head string, w *Worker) {
	t.Helper()
	ctx = context.Background()
	repo = newRepo(t)
	head = strings.TrimSpace(gitT(t, repo.Root, "rev-parse", "HEAD"))
	w, err := Create(ctx, repo, "US-1", "refs/heads/main", nil)
	if err != nil {
		t.Fatal(err)
	}
	lostWorktree(t, w)
	return ctx, repo, head, w
}

// checkSaved verifies that the worktree at path is gone, that backup holds the lost worktree's files on top of
// its branch's tip, and that the main tree is as it was.
func checkSaved(t *testing.T, root, path, backup, tip, story, head string) {
	t.Helper()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the worktree is still there: %v", err)
	}
	if out := gitT(t, root, "worktree", "list", "--porcelain"); strings.Count(out, "worktree ") != 1 {
		t.Errorf("git still lists the worktree:\n%s", out)
	}
	if backup == "" {
		t.Fatal("the worktree's files were not saved")
	}
	if got := strings.TrimSpace(gitT(t, root, "show", backup+":work.txt")); got != "work of "+story {
		t.Errorf("saved work.txt: %q", got)
	}
	if got := strings.TrimSpace(gitT(t, root, "show", backup+":a.txt")); got != "edited by "+story {
		t.Errorf("saved a.txt: %q", got)
	}
	if parent := strings.TrimSpace(gitT(t, root, "rev-parse", backup+"^")); parent != tip {
		t.Errorf("the backup's parent is %s, not the branch's tip %s", parent, tip)
	}
	if out := gitT(t, root, "ls-tree", "-r", "--name-only", backup); strings.Contains(out, ".ralph/") {
		t.Errorf("wiggum's runtime state was saved with the work:\n%s", out)
	}
	if now := strings.TrimSpace(gitT(t, root, "rev-parse", "HEAD")); now != head {
		t.Errorf("main moved from %s to %s", head, now)
	}
	if st := gitT(t, root, "status", "--porcelain"); strings.TrimSpace(st) != "" {
		t.Errorf("the main tree changed:\n%s", st)
	}
}

// A worktree whose .git its agent removed is released with its files
// saved under refs/wiggum/backup/ (through the main repository: git can no
// longer read the worktree) and then removed. Before,
// the save asked git in the worktree, which found no repository, and the
// removal failed.
func TestReleaseSavesAWorktreeThatLostItsGit(t *testing.T) {
	ctx, repo, head, w := lostSetup(t)
	w.Settle(ctx)
	rem, err := w.Release(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	checkSaved(t, repo.Root, w.Path, rem.Backup, w.Base, "US-1", head)
}

// A killed run's worktree that lost its .git is saved - its files with
// its branch - before Reclaim removes it. Before, Reclaim took it for a
// creation killed inside git worktree add, with nothing in it, and
// deleted the files.
func TestReclaimSavesAWorktreeThatLostItsGit(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	head := strings.TrimSpace(gitT(t, repo.Root, "rev-parse", "HEAD"))
	path, tip := killedWorktree(t, repo.Root, "US-1")
	w := &Worker{Meta: Meta{Story: "US-1"}, Path: path}
	lostWorktree(t, w)
	got, err := Reclaim(ctx, repo, "refs/heads/main", ReclaimOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Story != "US-1" {
		t.Fatalf("reclaimed: %+v", got)
	}
	checkSaved(t, repo.Root, path, got[0].Backup, tip, "US-1", head)
	// A second pass finds nothing left to do.
	if got, err := Reclaim(ctx, repo, "refs/heads/main", ReclaimOptions{}); err != nil || len(got) != 0 {
		t.Errorf("second reclaim: %+v, %v", got, err)
	}
}

// wiggum worktree prune saves a worktree that lost its .git the same way
// before removing it.
func TestPruneSavesAWorktreeThatLostItsGit(t *testing.T) {
	ctx, repo, head, w := lostSetup(t)
	if err := w.Lease.Release(); err != nil {
		t.Fatal(err)
	}
	got, err := Prune(ctx, repo, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Action != "removed" {
		t.Fatalf("pruned: %+v", got)
	}
	checkSaved(t, repo.Root, w.Path, got[0].Backup, w.Base, "US-1", head)
}
