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
	"github.com/wiggum-dev/wiggum/internal/statefile"
	"github.com/wiggum-dev/wiggum/worktree"
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
	Made   string // where the agent made it (Dir, unless moveOut moved it)
	Path   string // as the run shows it: relative to the main tree when it can be
	Branch string // checked out there; "" when detached
	Ahead  int    // commits there that the attempt's branch (HEAD) does not have
	// Dirty counts its uncommitted files, tracked and untracked (not
	// ignored): work that is there and nowhere else.
	Dirty int
	// Stray: a worker's agent, this one or another's, made it outside
	// every worker's worktree (git worktree add ../NAME): which one
	// cannot be told, so it is named and never rolled back.
	Stray bool
	name  string // its entry in git's worktrees directory
}

// worktreesMade lists the worktrees made during an attempt, but wiggum's
// own: beside the tree (../feature) or inside it, where skills put theirs
// in an ignored directory (.worktrees/feature) that no commit sees. A
// worker's are those inside its worktree (.worktrees/feature there, or
// Claude Code's .claude/worktrees/NAME); one outside every worker's - a
// git worktree add ../NAME from a worker lands in wiggum's worktree
// directory - may be any worker's, and is a Stray, named once in the run.
func (e *executor) worktreesMade(ctx context.Context) []madeWorktree {
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
		gitFile, err := statefile.ReadFile(filepath.Join(admin, "gitdir"))
		if err != nil {
			continue
		}
		dir := filepath.Dir(strings.TrimSpace(string(gitFile)))
		if worktree.Wiggums(admin, dir) {
			continue
		}
		m := madeWorktree{Dir: dir, Made: dir, Path: relPath(e.run.st.Repo.Root, dir), name: n}
		head, _ := statefile.ReadFile(filepath.Join(admin, "HEAD"))
		tip := strings.TrimSpace(string(head))
		if e.worktree != "" && !layout.Within(repo.Root, dir) {
			if strings.Trim(tip, "0") == "" {
				// Another worker's git worktree add, half way: the
				// attempt that sees it whole names it.
				continue
			}
			if e.run.inAWorker(dir) || !e.run.strayOnce(n) {
				continue // that worker's to name; or named already
			}
			m.Stray = true
		}
		if ref, ok := strings.CutPrefix(tip, "ref: "); ok {
			m.Branch = strings.TrimPrefix(ref, "refs/heads/")
			tip = ref
		}
		if n, err := repo.Line(ctx, "rev-list", "--count", tip, "^HEAD"); err == nil {
			_, _ = fmt.Sscan(n, &m.Ahead)
		}
		if st, err := repo.Line(ctx, "-C", dir, "status", "--porcelain", "--untracked-files=all"); err == nil && st != "" {
			m.Dirty = strings.Count(st, "\n") + 1
		}
		out = append(out, m)
	}
	return out
}

// madeAt is the worktree the attempt's agent made at p (relative to the
// executor's tree, where the agent made it), or nil.
func (e *executor) madeAt(p string) *madeWorktree {
	for i := range e.made {
		if relPath(e.st.Repo.Root, e.made[i].Made) == p {
			return &e.made[i]
		}
	}
	return nil
}

// inAWorker reports whether dir is inside one of the run's worktrees
// (wiggum's worktree directory's NAME/...), not beside them.
func (r *run) inAWorker(dir string) bool {
	rel, err := filepath.Rel(filepath.Join(r.st.Repo.Root, filepath.FromSlash(worktree.Dir)), dir)
	return err == nil && filepath.IsLocal(rel) && strings.ContainsRune(rel, filepath.Separator)
}

// strayOnce reports whether the linked worktree name is one no attempt of
// the run has named yet, and marks it named.
func (r *run) strayOnce(name string) bool {
	r.addedMu.Lock()
	defer r.addedMu.Unlock()
	if r.strays[name] {
		return false
	}
	if r.strays == nil {
		r.strays = map[string]bool{}
	}
	r.strays[name] = true
	return true
}

// moveOut moves a passed worker's worktree m, made inside the worker's
// worktree, out to the same place in the main tree - where it would be
// had the story run there - before the worker's worktree goes with its
// landing and takes it along; its branch, commits and files move whole
// (git worktree move). Left where it is, with the reason, when that place
// is taken or git cannot move it.
func (e *executor) moveOut(ctx context.Context, m *madeWorktree) string {
	rel, err := filepath.Rel(e.st.Repo.Root, m.Dir)
	if err != nil || !filepath.IsLocal(rel) {
		return ""
	}
	to := filepath.Join(e.run.st.Repo.Root, rel)
	if _, err := os.Lstat(to); err == nil {
		return fmt.Sprintf("it stays in the worker's worktree, whose removal with the landing saves its files (its branch keeps its commits): %s is taken in the main tree", relPath(e.run.st.Repo.Root, to))
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return "it could not be moved to the main tree: " + err.Error()
	}
	// Named, as this story's: once outside every worker's worktree,
	// another worker's attempt must not name it again as a stray.
	e.run.strayOnce(m.name)
	if _, err := e.run.st.Repo.Run(context.WithoutCancel(ctx), "worktree", "move", m.Dir, to); err != nil {
		return "it could not be moved to the main tree: " + err.Error()
	}
	was := relPath(e.run.st.Repo.Root, m.Dir)
	m.Dir, m.Path = to, relPath(e.run.st.Repo.Root, to)
	return fmt.Sprintf("it was made in the worker's worktree (%s), which goes with the landing: moved to %s in the main tree, branch, commits and files whole", was, m.Path)
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
	var holds []string
	if m.Ahead > 0 {
		holds = append(holds, fmt.Sprintf("%d commit(s) the attempt's branch does not have, which the loop does not land", m.Ahead))
	}
	if m.Dirty > 0 {
		holds = append(holds, fmt.Sprintf("%d uncommitted file(s), there and nowhere else (git -C %s status)", m.Dirty, m.Path))
	}
	work := "nothing the attempt's branch does not have"
	if len(holds) > 0 {
		work = strings.Join(holds, ", and ")
	}
	undo := "git worktree remove " + m.Path
	if m.Branch != "" {
		undo += " && git branch -D " + m.Branch
	}
	merge := ""
	if m.Dirty > 0 {
		// git refuses to remove it as it is; --force would lose them.
		merge = "keep what you want of its files (commit them there, or copy them out), then "
		undo = "git worktree remove --force " + m.Path + strings.TrimPrefix(undo, "git worktree remove "+m.Path)
	}
	if m.Branch != "" && m.Ahead > 0 {
		merge += "merge it (git merge " + m.Branch + ") or "
	}
	if m.Stray {
		return fmt.Sprintf("a worktree not wiggum's appeared while this story ran - its agent's or another worker's: %s (%s), holding %s; left as it is - %sremove it (%s)", m.Path, what, work, merge, undo)
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
