package worktree

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wiggum-dev/wiggum/internal/killpoint"
	"github.com/wiggum-dev/wiggum/internal/layout"
)

// killedWorktree makes a worktree for story in a helper process, commits
// in it, and SIGKILLs the helper: what a killed run leaves. It returns the
// worktree's path and its branch's tip.
func killedWorktree(t *testing.T, repo string, story string) (string, string) {
	t.Helper()
	cmd, out := startHelper(t, "hold", repo, story)
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	path := strings.TrimSpace(strings.TrimPrefix(line, "ready "))
	write(t, path, "work.txt", "work of "+story+"\n")
	gitT(t, path, "add", "work.txt")
	gitT(t, path, "commit", "-q", "-m", story)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return path, strings.TrimSpace(gitT(t, path, "rev-parse", "HEAD"))
}

// TestReclaimKeepsFinished: a worktree Finished says yes to is kept -
// not saved, not removed, its branch untouched - and leased again by the
// caller, so no pruner can take it; a later Reclaim skipping it leaves it
// alone. One Finished says no to is saved and removed as before, with the
// reason in NotLanded.
func TestReclaimKeepsFinished(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	keepPath, keepTip := killedWorktree(t, repo.Root, "US-1")
	dropPath, _ := killedWorktree(t, repo.Root, "US-2")
	write(t, dropPath, "stray.txt", "left after the end\n")
	var asked []Leftover
	trees := map[string]*LeftTree{}
	finished := func(lo Leftover) (bool, string) {
		asked = append(asked, lo)
		tree, err := lo.Tree(ctx)
		if err != nil {
			t.Fatal(err)
		}
		trees[lo.Story] = tree
		if lo.Story == "US-1" {
			return true, ""
		}
		return false, "changed after it finished"
	}
	got, err := Reclaim(ctx, repo, "refs/heads/main", ReclaimOptions{Finished: finished, Skip: map[string]bool{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 2 {
		t.Fatalf("Finished asked %d time(s), want 2: %+v", len(asked), asked)
	}
	for _, lo := range asked {
		tree := trees[lo.Story]
		if lo.Story == "US-1" && (lo.Tip != keepTip || lo.Path != keepPath || tree.Head != keepTip || tree.HeadBranch != BranchPrefix+"US-1" ||
			lo.Branch != BranchPrefix+"US-1" || len(tree.Dirty) != 0 || tree.Busy != "" || lo.Target != "refs/heads/main") {
			t.Errorf("US-1 described as %+v, %+v", lo, tree)
		}
		if lo.Story == "US-2" && (len(tree.Dirty) != 1 || tree.Dirty[0] != "stray.txt") {
			t.Errorf("US-2's stray file not seen: %+v", tree)
		}
	}
	var kept *Worker
	for _, rc := range got {
		switch rc.Story {
		case "US-1":
			if rc.Worker == nil || rc.Backup != "" {
				t.Fatalf("US-1 not kept: %+v", rc)
			}
			kept = rc.Worker
		case "US-2":
			if rc.Worker != nil || rc.Backup == "" || rc.NotLanded != "changed after it finished" {
				t.Errorf("US-2 not saved with its reason: %+v", rc)
			}
		}
	}
	if kept == nil || kept.Path != keepPath || !exists(keepPath) || exists(dropPath) {
		t.Fatalf("kept %+v; US-1's worktree there: %v, US-2's gone: %v", kept, exists(keepPath), !exists(dropPath))
	}
	if _, err := layout.At(keepPath).TakeLease(); !errors.Is(err, layout.ErrLeaseHeld) {
		t.Fatalf("a pruner could take the kept worktree's lease: %v", err)
	}
	if tip := strings.TrimSpace(gitT(t, repo.Root, "rev-parse", BranchPrefix+"US-1")); tip != keepTip {
		t.Fatalf("the kept branch moved: %s, want %s", tip, keepTip)
	}
	asked = nil
	got, err = Reclaim(ctx, repo, "refs/heads/main", ReclaimOptions{Finished: finished, Skip: map[string]bool{kept.Path: true}})
	if err != nil || len(got) != 0 || len(asked) != 0 {
		t.Fatalf("a second Reclaim touched the kept worktree: %+v, asked %d, %v", got, len(asked), err)
	}
	rem, err := kept.Release(ctx, repo)
	if err != nil || rem.Backup != "" || !rem.BranchKept || exists(keepPath) {
		t.Fatalf("release of the kept worktree: %+v, %v", rem, err)
	}
	if ents, _ := filepath.Glob(filepath.Join(repo.Root, Dir, "*")); len(ents) != 0 {
		t.Fatalf("worktrees left: %v", ents)
	}
}

// A run killed inside a batch of creations, after git registered a
// worktree and before it was leased, leaves no MetaFile: the worktree's
// story is still known from git's lock on it, and what Reclaim saves from
// it (here a file a torn checkout left) names the story.
func TestReclaimNamesTheStoryOfAWorktreeNeverLeased(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	cmd, _ := startHelperEnv(t, []string{killpoint.Env + "=worktree-added"}, "batch", repo.Root, "US 7: odd id", "US-8")
	if err := cmd.Wait(); err == nil {
		t.Fatal("the helper was not killed inside the batch")
	}
	waitOrphans(t, cmd)
	infos, err := List(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	// The batch's adds run together: the kill after the first leaves
	// it, and the other's git, not killed with wiggum, runs on to its
	// end (waited for above: listed while it still ran, its directory
	// could be there before git's entry for it).
	if len(infos) == 0 || len(infos) > 2 {
		t.Fatalf("list: %+v", infos)
	}
	for _, in := range infos {
		if in.Story != "US 7: odd id" && in.Story != "US-8" {
			t.Fatalf("a worktree never leased does not name its story: %+v", in)
		}
		write(t, in.Path, "half.txt", "left by a torn checkout\n")
	}
	got, err := Reclaim(ctx, repo, "refs/heads/main", ReclaimOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(infos) {
		t.Fatalf("reclaimed: %+v", got)
	}
	listed := map[string]bool{}
	for _, in := range infos {
		listed[in.Story] = true
	}
	for _, rc := range got {
		if !listed[rc.Story] || rc.Backup == "" {
			t.Fatalf("reclaimed: %+v", got)
		}
		subject := strings.TrimSpace(gitT(t, repo.Root, "log", "-1", "--format=%s", rc.Backup))
		if !strings.HasSuffix(subject, "(story "+rc.Story+")") {
			t.Errorf("the backup does not name its story: %q", subject)
		}
	}
	if out := gitT(t, repo.Root, "worktree", "list", "--porcelain"); strings.Count(out, "worktree ") != 1 {
		t.Errorf("worktrees left:\n%s", out)
	}
}

// A directory among the worktrees that git never registered and wiggum
// never leased (a worktree add still running, or killed, when its run was
// killed; anyone's mkdir) is removed by Reclaim, and what it holds is
// saved first: nothing names a story there, so the backup names the
// directory.
func TestReclaimSavesADirectoryGitNeverRegistered(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	dir := filepath.Join(repo.Root, Dir, "US-9")
	write(t, dir, "half.txt", "left in a directory git never registered\n")
	write(t, filepath.Join(repo.Root, Dir, "empty"), ".git", "gitdir: /nowhere\n")
	got, err := Reclaim(ctx, repo, "refs/heads/main", ReclaimOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var saved []string
	for _, rc := range got {
		if rc.Backup != "" {
			saved = append(saved, rc.Backup)
		}
	}
	if len(got) != 2 || len(saved) != 1 {
		t.Fatalf("reclaimed: %+v", got)
	}
	if data := gitT(t, repo.Root, "show", saved[0]+":half.txt"); data != "left in a directory git never registered\n" {
		t.Fatalf("the backup holds %q", data)
	}
	if subject := gitT(t, repo.Root, "log", "-1", "--format=%s", saved[0]); !strings.Contains(subject, "US-9 that git never registered") {
		t.Fatalf("the backup does not name the directory: %q", subject)
	}
	if ents, _ := filepath.Glob(filepath.Join(repo.Root, Dir, "*")); len(ents) != 0 {
		t.Fatalf("left: %v", ents)
	}
}

// A run killed after a batch's branches were made and before git added
// any worktree leaves branches no worktree has: Reclaim deletes them, and
// the stories get their own names again, not numbered ones.
func TestReclaimDeletesBranchesMadeAhead(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	cmd, _ := startHelperEnv(t, []string{killpoint.Env + "=worktree-branches"}, "batch", repo.Root, "US-7", "US-8")
	if err := cmd.Wait(); err == nil {
		t.Fatal("the helper was not killed inside the batch")
	}
	if out := gitT(t, repo.Root, "for-each-ref", "--format=%(refname)", BranchPrefix); strings.Count(out, "\n") != 2 {
		t.Fatalf("the batch's branches are not there:\n%s", out)
	}
	if _, err := Reclaim(ctx, repo, "refs/heads/main", ReclaimOptions{}); err != nil {
		t.Fatal(err)
	}
	if out := gitT(t, repo.Root, "for-each-ref", "--format=%(refname)", BranchPrefix); out != "" {
		t.Fatalf("branches left:\n%s", out)
	}
	ws, errs := CreateMany(ctx, repo, []Request{{Story: "US-7", Target: "refs/heads/main"}, {Story: "US-8", Target: "refs/heads/main"}}, nil, nil)
	for i, w := range ws {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		defer w.Lease.Release()
		if w.Branch != BranchPrefix+w.Story {
			t.Errorf("%s got branch %s", w.Story, w.Branch)
		}
	}
}

// A batch whose first name for a story is taken by a directory left
// behind deletes the branch it made ahead for that name and uses the next;
// a batch one of whose branches exists makes each branch on its own.
func TestCreateManyBranchesAheadFallBack(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	write(t, filepath.Join(repo.Root, filepath.FromSlash(Dir), "US-1"), "left.txt", "left\n")
	gitT(t, repo.Root, "branch", "wiggum/US-4")
	for _, batch := range [][]string{{"US-1", "US-2"}, {"US-3", "US-4"}} {
		ws, errs := CreateMany(ctx, repo, []Request{{Story: batch[0], Target: "refs/heads/main"}, {Story: batch[1], Target: "refs/heads/main"}}, nil, nil)
		for i, w := range ws {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			defer w.Lease.Release()
		}
	}
	out := gitT(t, repo.Root, "for-each-ref", "--format=%(refname:short)", BranchPrefix)
	if want := "wiggum/US-1-2\nwiggum/US-2\nwiggum/US-3\nwiggum/US-4\nwiggum/US-4-2\n"; out != want {
		t.Errorf("branches:\n%swant:\n%s", out, want)
	}
}

// TestCreateTakenDirectoryLeavesNoBranch: one request whose directory is
// taken. git worktree add -b creates the branch before it looks at the
// directory and refuses it; the add that then goes on to the next name
// deletes that branch, so no empty wiggum/US-5 is left beside the
// worktree's wiggum/US-5-2. A branch that was there before (US-6's) is
// not the add's own and is kept.
func TestCreateTakenDirectoryLeavesNoBranch(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	write(t, filepath.Join(repo.Root, filepath.FromSlash(Dir), "US-5"), "left.txt", "left\n")
	gitT(t, repo.Root, "branch", "wiggum/US-6")
	for _, story := range []string{"US-5", "US-6"} {
		ws, errs := CreateMany(ctx, repo, []Request{{Story: story, Target: "refs/heads/main"}}, nil, nil)
		if errs[0] != nil {
			t.Fatal(errs[0])
		}
		defer ws[0].Lease.Release()
	}
	out := gitT(t, repo.Root, "for-each-ref", "--format=%(refname:short)", BranchPrefix)
	if want := "wiggum/US-5-2\nwiggum/US-6\nwiggum/US-6-2\n"; out != want {
		t.Errorf("branches:\n%swant:\n%s", out, want)
	}
}

// What is not wiggum's in its worktree directory - an agent's worktree
// (git worktree add ../feature run in a worker's worktree puts it there)
// or a clone - is left by Reclaim and Prune, and named: before, the next
// run saved and removed it as "the killed run's worktree" of no story,
// and deleted the agent's branch with it.
func TestReclaimLeavesWhatIsNotWiggums(t *testing.T) {
	for _, how := range []string{"reclaim", "prune"} {
		t.Run(how, func(t *testing.T) {
			ctx := context.Background()
			repo := newRepo(t)
			agents := filepath.Join(repo.Root, Dir, "feature")
			gitT(t, repo.Root, "worktree", "add", "-q", "-b", "feature", agents, "main")
			write(t, agents, "f.txt", "the agent's\n")
			gitT(t, agents, "add", "f.txt")
			gitT(t, agents, "commit", "-q", "-m", "feature")
			write(t, agents, "wip.txt", "uncommitted\n")
			clone := filepath.Join(repo.Root, Dir, "lib")
			gitT(t, repo.Root, "clone", "-q", repo.Root, clone)
			var foreign []Info
			switch how {
			case "reclaim":
				got, err := Reclaim(ctx, repo, "refs/heads/main", ReclaimOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for _, rc := range got {
					if rc.Foreign == nil || rc.Backup != "" {
						t.Fatalf("reclaimed: %+v", rc)
					}
					foreign = append(foreign, *rc.Foreign)
				}
			case "prune":
				got, err := Prune(ctx, repo, false)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range got {
					if r.Action != "not wiggum's" || !r.Foreign {
						t.Fatalf("pruned: %+v", r)
					}
					foreign = append(foreign, r.Info)
				}
			}
			if len(foreign) != 2 || foreign[0].Name != "feature" || foreign[0].Branch != "refs/heads/feature" || foreign[0].Merged || foreign[1].Name != "lib" || foreign[1].Registered {
				t.Fatalf("named: %+v", foreign)
			}
			if !strings.Contains(foreign[0].ForeignNote(), "branch feature with commits HEAD does not have") {
				t.Errorf("note: %s", foreign[0].ForeignNote())
			}
			for _, f := range []string{filepath.Join(agents, "f.txt"), filepath.Join(agents, "wip.txt"), filepath.Join(clone, ".git", "HEAD")} {
				if !exists(f) {
					t.Errorf("%s is gone", f)
				}
			}
			if out := gitT(t, repo.Root, "log", "-1", "--format=%s", "feature"); out != "feature\n" {
				t.Errorf("the agent's branch: %q", out)
			}
			infos, err := List(ctx, repo)
			if err != nil || len(infos) != 2 || !infos[0].Foreign || !infos[1].Foreign {
				t.Fatalf("list: %+v %v", infos, err)
			}
		})
	}
}
