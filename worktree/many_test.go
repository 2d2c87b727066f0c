package worktree

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/git"
)

// CreateMany makes every worktree in one hold of the mutex: each is
// registered, leased by this process and on its own branch at the target's
// tip; a story asked for twice, or a hostile id, fails alone.
func TestCreateManyLeasesEach(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	tip := strings.TrimSpace(gitT(t, repo.Root, "rev-parse", "main"))
	reqs := []Request{{Story: "US-1", Target: "refs/heads/main"}, {Story: "US-2", Target: "refs/heads/main"},
		{Story: "US-1", Target: "refs/heads/main"}, {Story: "", Target: "refs/heads/main"}, {Story: "US-3", Target: "refs/heads/main"}}
	var mu sync.Mutex
	answers := map[int]int{}
	ws, errs := CreateMany(ctx, repo, reqs, nil, func(i int, w *Worker, err error) {
		mu.Lock()
		defer mu.Unlock()
		answers[i]++
		if (w == nil) == (err == nil) {
			t.Errorf("request %d answered with %v and %v", i, w, err)
		}
	})
	for i := range reqs {
		if answers[i] != 1 {
			t.Errorf("request %d answered %d times", i, answers[i])
		}
	}
	for _, i := range []int{2, 3} {
		if errs[i] == nil || ws[i] != nil {
			t.Errorf("request %d (%q): want an error alone, got %v %v", i, reqs[i].Story, ws[i], errs[i])
		}
	}
	for _, i := range []int{0, 1, 4} {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		w := ws[i]
		defer w.Lease.Release()
		if w.Story != reqs[i].Story || w.Branch != BranchPrefix+reqs[i].Story || w.Base != tip {
			t.Errorf("request %d: %+v", i, w.Meta)
		}
		if got := strings.TrimSpace(gitT(t, w.Path, "rev-parse", "--abbrev-ref", "HEAD")); got != "wiggum/"+reqs[i].Story {
			t.Errorf("%s is on %s", w.Path, got)
		}
	}
	infos, err := List(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 3 {
		t.Fatalf("list: %+v", infos)
	}
	for _, in := range infos {
		if !in.Held || !in.Registered || in.Dirty {
			t.Errorf("%s: %+v", in.Name, in)
		}
	}
	// A pruner finds every one of them live.
	res, err := Prune(ctx, repo, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Action != "live" {
			t.Errorf("prune: %s %s", r.Name, r.Action)
		}
	}
}

// Pruners in other processes run while one process creates worktrees in
// batches and releases them: no pruner removes a leased worktree (each
// appears to a pruner already leased), none fails, and nothing is left.
func TestCreateManyRacesPrune(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	var mu sync.Mutex
	var outs []string
	stop := beside(2, func() bool {
		out, err := runPruner(t, repo.Root)
		if err != nil {
			t.Errorf("pruner: %v", err)
		}
		mu.Lock()
		outs = append(outs, out)
		mu.Unlock()
		return true
	})
	for round := range 4 {
		ws := createRound(t, repo, round, 3)
		for _, w := range ws {
			if !exists(w.Path) {
				t.Fatalf("%s is gone while leased", w.Path)
			}
			write(t, w.Path, "f", w.Story)
			gitT(t, w.Path, "add", "f")
			gitT(t, w.Path, "commit", "-q", "-m", w.Story)
		}
		for _, w := range ws {
			w.Settle(ctx)
			mu2, err := LockRepo(ctx, repo)
			if err != nil {
				t.Fatal(err)
			}
			r, err := w.Release(ctx, repo)
			mu2.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			if r.Action != "removed" || !r.BranchKept || r.Backup != "" {
				t.Errorf("%s: %+v", w.Name, r)
			}
		}
	}
	stop()
	for _, o := range outs {
		if strings.Contains(o, "removed") {
			t.Errorf("a pruner removed a worktree: %q", o)
		}
	}
	if out := gitT(t, repo.Root, "worktree", "list", "--porcelain"); strings.Count(out, "worktree ") != 1 {
		t.Errorf("worktrees left:\n%s", out)
	}
}

// Settle reads the worktree's state before the mutex: uncommitted work
// is still saved by Release; Landed lets Release delete the merged branch
// at the tip it was merged at, and keep one that moved since.
func TestSettledRelease(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	ws, errs := CreateMany(ctx, repo, []Request{{Story: "dirty", Target: "refs/heads/main"}, {Story: "moved", Target: "refs/heads/main"}}, nil, nil)
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	dirty, moved := ws[0], ws[1]
	write(t, dirty.Path, "work.txt", "unsaved\n")
	dirty.Settle(ctx)
	tip := strings.TrimSpace(gitT(t, repo.Root, "rev-parse", "main"))
	dirty.Landed(tip)
	r, err := dirty.Release(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if r.Backup == "" || r.BranchKept || exists(dirty.Path) {
		t.Errorf("dirty: %+v", r)
	}
	if out := gitT(t, repo.Root, "show", r.Backup+":work.txt"); out != "unsaved\n" {
		t.Errorf("backup holds %q", out)
	}
	if out := gitT(t, repo.Root, "branch", "--list", "wiggum/dirty"); out != "" {
		t.Errorf("merged branch kept: %s", out)
	}
	// The branch moved after the merge the caller reports: it stays.
	moved.Settle(ctx)
	moved.Landed(tip)
	gitT(t, moved.Path, "commit", "-q", "--allow-empty", "-m", "later")
	r, err = moved.Release(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if !r.BranchKept {
		t.Errorf("a branch that moved after its merge was deleted: %+v", r)
	}
}

// A file the merge changes whose stat data is stale in the main tree's
// index (rewritten with the same content) does not block the merge: the
// index is refreshed and the merge goes on.
func TestMergeRefreshesStaleStat(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	w, err := Create(ctx, repo, "US-1", "refs/heads/main", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Lease.Release()
	write(t, w.Path, "README", "worker\n")
	gitT(t, w.Path, "commit", "-q", "-am", "worker")
	// The same content, with a modification time the index does not have
	// (in the past, so git cannot take it for racily clean and compare).
	write(t, repo.Root, "README", "hello\n")
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(repo.Root, "README"), past, past); err != nil {
		t.Fatal(err)
	}
	m, err := Merge(ctx, repo, "refs/heads/main", w.Branch, "Merge US-1")
	if err != nil || !m.FastForward {
		t.Fatalf("merge: %+v %v", m, err)
	}
	if out := gitT(t, repo.Root, "status", "--porcelain"); out != "" {
		t.Errorf("status:\n%s", out)
	}
}

// A lister does not wait for the repository mutex, so it runs while
// worktrees are added and removed under it: git worktree list then finds
// an entry half written (an empty commondir) or half deleted (a locked
// file gone between git's look and its read) and fails. List asks again
// once that moment has passed, and never fails for it.
func TestListRacesCreateAndRemove(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	var lists atomic.Int64
	stop := beside(2, func() bool {
		if _, err := List(ctx, repo); err != nil {
			t.Errorf("list: %v", err)
			return false
		}
		lists.Add(1)
		return true
	})
	for round := range 6 {
		for _, w := range createRound(t, repo, round, 4) {
			w.Settle(ctx)
			mu, err := LockRepo(ctx, repo)
			if err != nil {
				t.Fatal(err)
			}
			_, err = w.Release(ctx, repo)
			mu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	stop()
	if lists.Load() == 0 {
		t.Fatal("no list ran beside the creations")
	}
}

// beside runs body in n goroutines, each again and again until body
// returns false or stop is called; stop waits for them.
func beside(n int, body func() bool) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if !body() {
					return
				}
			}
		})
	}
	return func() {
		close(done)
		wg.Wait()
	}
}

// createRound makes n worktrees in one CreateMany, for stories
// US-<round>-<i> on main; any failure fails the test.
func createRound(t *testing.T, repo *git.Repo, round, n int) []*Worker {
	t.Helper()
	var reqs []Request
	for i := range n {
		reqs = append(reqs, Request{Story: fmt.Sprintf("US-%d-%d", round, i), Target: "refs/heads/main"})
	}
	ws, errs := CreateMany(context.Background(), repo, reqs, nil, nil)
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// A worktree CreateMany checked out says it is clean at Base on its branch
// once, and the checkpoint taken on that word without a status is the one
// a status-read checkpoint records there; so after Refresh moves it. A
// post-checkout hook, which may write anything, takes the word away.
func TestTakeCleanMatchesStatus(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	write(t, repo.Root, "dir/b.txt", "b\n")
	write(t, repo.Root, "run.sh", "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(repo.Root, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, repo.Root, "add", "-A")
	gitT(t, repo.Root, "commit", "-q", "-m", "more")
	ws := createRound(t, repo, 1, 2)
	defer ws[0].Lease.Release()
	defer ws[1].Lease.Release()
	// Main moves on; the second worktree follows it as one made ahead does.
	write(t, repo.Root, "c.txt", "c\n")
	gitT(t, repo.Root, "add", "-A")
	gitT(t, repo.Root, "commit", "-q", "-m", "c")
	tip := strings.TrimSpace(gitT(t, repo.Root, "rev-parse", "main"))
	if moved, err := ws[1].Refresh(ctx, tip); err != nil || !moved {
		t.Fatalf("refresh: %v %v", moved, err)
	}
	for _, w := range ws {
		if !w.TakeClean() {
			t.Fatalf("%s: not known clean after its checkout", w.Name)
		}
		if w.TakeClean() {
			t.Errorf("%s: known clean twice", w.Name)
		}
		if st := gitT(t, w.Path, "status", "--porcelain", "--untracked-files=all", "--ignore-submodules=none"); st != "" {
			t.Errorf("%s said clean, git says:\n%s", w.Name, st)
		}
		known, err := w.State.StartSaveClean(ctx, w.Base, w.Branch).Finish(w.Lease.Holder.Session, checkpoint.SaveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		read, err := w.State.Save(ctx, w.Lease.Holder.Session, checkpoint.SaveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if known.Head != read.Head || known.Branch != read.Branch || known.Snapshot != read.Snapshot || len(known.Untracked) != len(read.Untracked) {
			t.Errorf("%s: checkpoint without status %+v, with %+v", w.Name, known, read)
		}
	}
	if ws[1].Base != tip {
		t.Errorf("refreshed to %s, want %s", ws[1].Base, tip)
	}

	hook := filepath.Join(repo.CommonDir, "hooks", "post-checkout")
	write(t, repo.CommonDir, "hooks/post-checkout", "#!/bin/sh\necho built > built.txt\n")
	if err := os.Chmod(hook, 0o755); err != nil {
		t.Fatal(err)
	}
	hooked := createRound(t, repo, 2, 1)[0]
	defer hooked.Lease.Release()
	if hooked.TakeClean() {
		t.Error("a worktree a post-checkout hook ran in is known clean")
	}
	if !exists(filepath.Join(hooked.Path, "built.txt")) {
		t.Error("the post-checkout hook did not run")
	}
}

// A merge whose git read-tree died writing the files (a full disk, the
// OOM killer) left them in the main tree, untracked: the retry failed on
// them ("Untracked working tree file ... would be overwritten"), the
// landing was reported blocked, and the next run took wiggum's own files
// for the person's uncommitted changes (hunt12 #7). Its work is finished,
// as a killed wiggum's is, and the merge lands. The stand-in for the
// dying git is a git earlier on PATH that writes the merge's first new
// file and kills itself, once.
func TestMergeFinishesAReadTreeThatDied(t *testing.T) {
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	repo := newRepo(t)
	ctx := context.Background()
	w, err := Create(ctx, repo, "US-1", "refs/heads/main", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Lease.Release()
	write(t, w.Path, "US-1.txt", "the story's work\n")
	gitT(t, w.Path, "add", "-A")
	gitT(t, w.Path, "commit", "-q", "-m", "US-1")
	bin, once := t.TempDir(), filepath.Join(t.TempDir(), "kill-once")
	write(t, filepath.Dir(once), filepath.Base(once), "")
	wrapper := fmt.Sprintf(`#!/bin/sh
if [ "$1" = read-tree ] && [ "$2" = -m ] && [ "$3" = -u ] && [ -e %[2]s ]; then
  rm -f %[2]s
  f=$(%[1]s diff --name-only --diff-filter=A "$4" "$5" | head -1)
  [ -n "$f" ] && %[1]s show "$5:$f" > "$f"
  kill -9 $$
fi
exec %[1]s "$@"
`, realGit, once)
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	m, err := Merge(ctx, repo, "refs/heads/main", w.Branch, "Merge US-1")
	if err != nil {
		t.Fatalf("merge after its read-tree died: %v", err)
	}
	if exists(once) {
		t.Fatal("the dying read-tree never ran")
	}
	if tip := strings.TrimSpace(gitT(t, repo.Root, "rev-parse", "main")); tip != m.Commit {
		t.Errorf("main is at %s, want %s", tip, m.Commit)
	}
	if out := gitT(t, repo.Root, "status", "--porcelain"); out != "" {
		t.Errorf("status:\n%s", out)
	}
}
