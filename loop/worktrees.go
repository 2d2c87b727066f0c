package loop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

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
		if within(dir, filepath.Join(repo.Root, filepath.FromSlash(layout.WorktreesDir))) {
			continue
		}
		m := madeWorktree{Path: dir}
		if rel, err := filepath.Rel(repo.Root, dir); err == nil {
			m.Path = rel
		}
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

// within reports whether dir is base or inside it.
func within(dir, base string) bool {
	rel, err := filepath.Rel(base, dir)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// say is what the run prints of m.
func (m madeWorktree) say() string {
	what := "detached HEAD"
	if m.Branch != "" {
		what = "branch " + m.Branch
	}
	work := "nothing the attempt's branch does not have"
	if m.Ahead > 0 {
		work = fmt.Sprintf("%d commit(s) the attempt's branch does not have, which the loop neither commits nor rolls back", m.Ahead)
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
