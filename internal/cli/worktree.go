package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/internal/badinput"
	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/gitlock"
	"github.com/wiggum-dev/wiggum/worktree"
)

// WorktreeCmd is `wiggum worktree`.
type WorktreeCmd struct {
	List  WorktreeListCmd  `cmd:"" help:"List the worktrees of parallel runs: story, branch, lease."`
	Prune WorktreePruneCmd `cmd:"" help:"Remove worktrees nobody holds; never a live one."`
}

// Help is shown by `wiggum worktree --help`.
func (c *WorktreeCmd) Help() string {
	return `wiggum run --workers N gives each story a worktree under
.ralph/wiggum/worktrees/<story> on a branch wiggum/<story>. Its worker holds
an flock lease (the worktree's .ralph/.agent-lock) for its whole life, and a
worktree whose lease is held is never removed - not by prune, not by another
wiggum. Worktrees normally go away when their story lands; prune cleans up
after a worker that was killed.

  wiggum worktree list
  wiggum worktree list --json
  wiggum worktree prune --dry-run
  wiggum worktree prune`
}

// WorktreeListCmd is `wiggum worktree list`.
type WorktreeListCmd struct {
	JSON bool `name:"json" help:"Print a JSON array: name, story, branch, target, path, held, pid, registered, merged, dirty."`
}

// Run lists the worktrees.
func (c *WorktreeListCmd) Run(ctx context.Context, g *Globals) error {
	repo, err := git.Open(ctx, g.WorkDir())
	if err != nil {
		return badinput.Wrap(err)
	}
	repo = worktree.Home(ctx, repo)
	infos, err := worktree.List(ctx, repo)
	if err != nil {
		return err
	}
	if c.JSON {
		if infos == nil {
			infos = []worktree.Info{}
		}
		return writeJSON(g.stdout, infos)
	}
	if len(infos) == 0 {
		fmt.Fprintln(g.stdout, "no worktrees")
		return nil
	}
	for _, in := range infos {
		lease := "free"
		if in.Held {
			lease = "held"
			if in.PID > 0 {
				lease = fmt.Sprintf("held by pid %d", in.PID)
			}
		}
		var notes []string
		switch {
		case in.Foreign && in.Registered:
			notes = append(notes, "not wiggum's: a worktree of an agent's or a person's, left as it is")
		case in.Foreign:
			notes = append(notes, "not wiggum's: a directory of an agent's or a person's, left as it is")
		case !in.Registered:
			notes = append(notes, "unknown to git")
		}
		if in.Merged {
			notes = append(notes, "merged")
		}
		if in.Dirty {
			notes = append(notes, "uncommitted changes")
		}
		note := ""
		if len(notes) > 0 {
			note = " (" + strings.Join(notes, ", ") + ")"
		}
		fmt.Fprintf(g.stdout, "%s\tstory %s\tbranch %s\tlease %s\t%s%s\n", in.Name, orDash(in.Story), orDash(strings.TrimPrefix(in.Branch, "refs/heads/")), lease, in.Path, note)
	}
	return nil
}

// orphanGrace is how long a git a killed wiggum started may go on before
// prune kills it (as the next run would).
const orphanGrace = 2 * time.Second

// WorktreePruneCmd is `wiggum worktree prune`.
type WorktreePruneCmd struct {
	DryRun bool `name:"dry-run" help:"Show what would be removed; change nothing."`
	JSON   bool `name:"json" help:"Print a JSON array of what was done to each worktree."`
}

// Help is shown by `wiggum worktree prune --help`.
func (c *WorktreePruneCmd) Help() string {
	return `Removes every worktree under .ralph/wiggum/worktrees/ whose lease is free,
taking the lease itself (without waiting) and holding it through the removal,
so a live worker keeps its worktree. A git a killed run started that is still
running two seconds on is killed first, and a git lock file that no running
git holds is removed, each said. Uncommitted work is saved under
refs/wiggum/backup/ first (wiggum recover); a branch is deleted only when the
branch it merges into contains it, and kept otherwise. A worktree there that is
not wiggum's - an agent's git worktree add ../NAME run in a worker's worktree
puts it there - is named and left as it is. The repository mutex a run holds
for its merges is waited for 10s at most: past that prune fails (exit 1) and
names the process holding it, and says so when that process is stopped (^Z).`
}

// Run prunes.
func (c *WorktreePruneCmd) Run(ctx context.Context, g *Globals) error {
	repo, err := git.Open(ctx, g.WorkDir())
	if err != nil {
		return badinput.Wrap(err)
	}
	repo = worktree.Home(ctx, repo)
	if !c.DryRun {
		// A killed run's git may still hold a branch's lock, which would
		// fail the removal and the user's own git after it.
		notes := g.stdout
		if c.JSON {
			notes = g.stderr
		}
		say := func(format string, args ...any) { fmt.Fprintf(notes, format+"\n", args...) }
		if err := gitlock.Settle(ctx, gitlock.SettleOptions{Root: repo.Root, CommonDir: repo.CommonDir, Grace: orphanGrace, Say: say}); err != nil {
			return err
		}
	}
	res, err := worktree.Prune(ctx, repo, c.DryRun)
	if c.JSON && err == nil {
		if res == nil {
			res = []worktree.Removal{}
		}
		return writeJSON(g.stdout, res)
	}
	for _, r := range res {
		line := fmt.Sprintf("%s: %s", r.Name, r.Action)
		switch {
		case r.Action == "live":
			line += fmt.Sprintf(" (lease held%s), kept", pidNote(r.PID))
		case r.Foreign:
			line += ": " + r.Info.ForeignNote() + "; left as it is"
		case r.BranchKept && r.Target == "":
			line += fmt.Sprintf("; branch %s kept: not known to be merged", strings.TrimPrefix(r.Branch, "refs/heads/"))
		case r.BranchKept:
			line += fmt.Sprintf("; branch %s kept: it has work %s lacks", strings.TrimPrefix(r.Branch, "refs/heads/"), strings.TrimPrefix(r.Target, "refs/heads/"))
		}
		if r.Backup != "" {
			line += "; uncommitted changes saved in " + r.Backup
		}
		for _, b := range r.Submodules {
			line += "; " + b.String()
		}
		fmt.Fprintln(g.stdout, line)
	}
	if len(res) == 0 && err == nil {
		fmt.Fprintln(g.stdout, "no worktrees")
	}
	return err
}

func pidNote(pid int) string {
	if pid > 0 {
		return fmt.Sprintf(" by pid %d", pid)
	}
	return ""
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
