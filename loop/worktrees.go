package loop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/layout"
)

// An agent may make a git worktree of its own for the story (a skill that
// has it "work on a feature branch in a worktree", git worktree add
// ../feature) and commit there. Its work is then on a branch the loop
// never commits, lands or rolls back: the story was ticked with the main
// tree's changes alone, or a failed attempt's work lived on beside the
// retry, and nothing was said. The loop now says so, naming the worktree,
// its branch and what that holds beyond the attempt's branch, and leaves
// it as it is: it is the agent's work, for the person to merge or remove.
// A failed attempt's is rolled back with it: saved, then removed, its
// branch with it, so the retry starts without it.

// worktreeNames lists the linked worktrees git knows of (the entries of
// the common git directory's worktrees/); nil when there are none. One
// directory read, no git process.
func worktreeNames(commonDir string) map[string]bool {
	entries, err := os.ReadDir(filepath.Join(commonDir, "worktrees"))
	if err != nil {
		return nil
	}
	out := make(map[string]bool, len(entries))
	for _, e := range entries {
		out[e.Name()] = true
	}
	return out
}

// madeWorktree is a linked worktree an attempt's agent made.
type madeWorktree struct {
	Dir    string // its directory
	Path   string // as the run shows it: relative to the tree when it can be
	Branch string // checked out there; "" when detached
	Ahead  int    // commits there that the attempt's branch (HEAD) does not have
}

// worktreesMade lists the worktrees made during a serial attempt, but
// wiggum's own: beside the tree (../feature) or inside it, where skills
// put theirs in an ignored directory (.worktrees/feature) that no commit
// sees. In parallel mode other workers' agents make theirs at the same
// time, so none is named there.
func (e *executor) worktreesMade(ctx context.Context) []madeWorktree {
	if e.worktree != "" {
		return nil
	}
	repo := e.st.Repo
	now := worktreeNames(repo.CommonDir)
	var out []madeWorktree
	names := make([]string, 0, len(now))
	for n := range now {
		if !e.worktreesAtStart[n] {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		admin := filepath.Join(repo.CommonDir, "worktrees", n)
		gitFile, err := os.ReadFile(filepath.Join(admin, "gitdir"))
		if err != nil {
			continue
		}
		dir := filepath.Dir(strings.TrimSpace(string(gitFile)))
		if rel, err := filepath.Rel(filepath.Join(repo.Root, filepath.FromSlash(layout.WorktreesDir)), dir); err == nil && filepath.IsLocal(rel) {
			continue // wiggum's own
		}
		m := madeWorktree{Dir: dir, Path: relPath(repo.Root, dir)}
		head, _ := os.ReadFile(filepath.Join(admin, "HEAD"))
		tip := strings.TrimSpace(string(head))
		if ref, ok := strings.CutPrefix(tip, "ref: "); ok {
			m.Branch = strings.TrimPrefix(ref, "refs/heads/")
			tip = ref
		}
		if n, err := repo.Line(ctx, "rev-list", "--count", tip, "^HEAD"); err == nil {
			_, _ = fmt.Sscan(n, &m.Ahead)
		}
		out = append(out, m)
	}
	return out
}

// sameDir reports whether a and b name one directory, symbolic links
// resolved (git names a worktree as it was given, and its top level
// resolved).
func sameDir(a, b string) bool {
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}

// say is what the run prints of m.
func (m madeWorktree) say() string {
	what := "detached HEAD"
	if m.Branch != "" {
		what = "branch " + m.Branch
	}
	work := "nothing the attempt's branch does not have"
	if m.Ahead > 0 {
		work = fmt.Sprintf("%d commit(s) the attempt's branch does not have, which the loop does not land", m.Ahead)
	}
	undo := "git worktree remove " + m.Path
	if m.Branch != "" {
		undo += " && git branch -D " + m.Branch
	}
	merge := ""
	if m.Branch != "" && m.Ahead > 0 {
		merge = "merge it (git merge " + m.Branch + ") or "
	}
	return fmt.Sprintf("the agent made a worktree of its own, %s (%s), holding %s; left as it is - %sremove it (%s)", m.Path, what, work, merge, undo)
}

// removeMade takes out of the repository the worktrees a failed attempt's
// agent made (e.made): each is saved first - its branch's commits and its
// uncommitted files, in one backup under refs/wiggum/backup/ - then
// removed, and the branch it made with it. One that cannot be saved is
// left as it is. It returns what the run says, and the backups.
func (e *executor) removeMade(ctx context.Context, reason string) (notes, backups []string) {
	ctx = context.WithoutCancel(ctx)
	main := e.st.Repo
	for _, m := range e.made {
		wt, err := git.Open(ctx, m.Dir)
		if err == nil && !sameDir(wt.Root, m.Dir) {
			err = fmt.Errorf("it opens as %s", wt.Root)
		}
		if err != nil {
			notes = append(notes, fmt.Sprintf("the agent's worktree %s is left as it is: git cannot read it (%v)", m.Path, err))
			continue
		}
		ref, err := checkpoint.FromRepo(wt).Backup(ctx, reason+" (the agent's worktree "+m.Path+")")
		if err != nil {
			notes = append(notes, fmt.Sprintf("the agent's worktree %s is left as it is: it could not be saved (%v)", m.Path, err))
			continue
		}
		backups = append(backups, ref)
		if _, err := main.Run(ctx, "worktree", "remove", "--force", "--force", m.Dir); err != nil {
			notes = append(notes, fmt.Sprintf("the agent's worktree %s is saved in %s, but could not be removed: %v", m.Path, ref, err))
			continue
		}
		what := "removed"
		if m.Branch != "" {
			if _, err := main.Run(ctx, "branch", "-D", "--quiet", m.Branch); err == nil {
				what = "removed with its branch " + m.Branch
			}
		}
		notes = append(notes, fmt.Sprintf("the agent's worktree %s is %s, as the attempt is rolled back: its commits and files are saved in %s", m.Path, what, ref))
	}
	return notes, backups
}
