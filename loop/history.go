package loop

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
)

// An agent that amends the last commit (`git commit --amend`: "fix the
// typo in the last commit"), squashes with `git reset --soft HEAD~2` or
// rebases rewrote the previous story's commit: the run went on from the
// rewritten one, so that story's commit - the one its report and journal
// name - left the branch, and its work came back under another story's
// message (or under none, after a `git reset HEAD~1`). A failed attempt
// that did so, or one a crash interrupted, cannot be rolled back: the
// contract refuses a rollback when the checkpoint is no longer an ancestor
// of HEAD; the run stops with exit 4, and rewriteHint says how to go on.

// rewrite is what restoreHistory found and did: the commits of the branch
// made before the attempt that it no longer held (dropped, a count), and
// whether what replaced them was all committed during the attempt (own).
// Saved holds the rewritten state when it was put back; zero when nothing
// was rewritten.
type rewrite struct {
	Branch, Dropped, Saved string
	Own                    bool
	// Conflicts: what the attempt changed does not apply on the commits
	// it undid (these paths); nothing was moved.
	Conflicts []string
	// OthersCommit: a commit of the rewrite the commit journal says was
	// made outside the attempt's session (OthersBy: by whom); nothing was
	// moved.
	OthersCommit, OthersBy string
}

// reason says what the attempt did.
func (w rewrite) reason() string {
	return fmt.Sprintf("the agent rewrote %s commit(s) of %s made before its attempt", w.Dropped, w.Branch)
}

// restoreHistory keeps the commits made before an attempt on its branch:
// when the branch (branch, "" for a detached HEAD) no longer holds base,
// the attempt's starting commit, and what replaced it was all committed
// since the attempt started, its state is saved under refs/wiggum/backup/
// and the branch goes back to base, with the tree and index as they are:
// what the attempt changed stays, to be committed. A rewrite onto commits
// not the attempt's is only reported (Own false, nothing saved or moved). Reading the branch's ref file costs no git process, so an
// attempt that did not move the branch pays nothing; one that committed
// on top of base pays one `git merge-base`.
func restoreHistory(ctx context.Context, st *checkpoint.State, base, branch, session string, since time.Time) (rewrite, error) {
	if base == "" {
		return rewrite{}, nil // an unborn branch: no history to keep
	}
	repo := st.Repo
	ref := branch
	if ref == "" {
		ref = "HEAD"
	}
	if v, ok := repo.RefValue(ref); ok && v == base {
		return rewrite{}, nil
	}
	ctx = context.WithoutCancel(ctx)
	head, err := repo.Head(ctx)
	if err != nil || head == "" || head == base {
		return rewrite{}, err
	}
	if ok, err := repo.OK(ctx, "merge-base", "--is-ancestor", base, head); ok || err != nil {
		return rewrite{}, err // commits on top of base
	}
	w := rewrite{Branch: checkpoint.BranchName(branch)}
	dropped, err := repo.Run(ctx, "rev-list", "--count", head+".."+base)
	if err != nil {
		return rewrite{}, err
	}
	w.Dropped = strings.TrimSpace(dropped)
	// The attempt's own rewrite when every commit put in place of the
	// dropped ones was made since it started (an amended root commit has
	// no fork: then all of head's).
	revs, put := head, []string{head}
	fork, ferr := repo.Line(ctx, "merge-base", base, head)
	if ferr == nil {
		revs, put = fork+".."+head, []string{head, "^" + fork} // fork is head's ancestor: no need to ask
	}
	w.Own, err = allMadeSince(ctx, repo, revs, since)
	if err != nil || !w.Own {
		return w, err // another's history: not the attempt's to put back
	}
	// Made during the attempt, but by someone else, the commit journal
	// says: a person's git commit --amend in another terminal, which was
	// undone and its change committed as the story's work.
	if w.OthersCommit, w.OthersBy = journaledElsewhere(ctx, st, session, put...); w.OthersCommit != "" {
		w.Own = false
		return w, nil
	}
	if w.Saved, err = st.Backup(ctx, w.reason()); err != nil {
		return rewrite{}, err
	}
	// What the attempt changed is its tree's difference from the commit
	// it went back to (the fork), put on the commits it undid: the saved
	// state merged with base. Its tree as it is would do for an amend or
	// a soft reset, which keep the undone commits' changes in the tree,
	// but after a git reset --hard it lacks them, and committing it
	// deleted the last story's files.
	// An amended root commit has no fork to go back to, and its tree
	// holds what it amended: that tree is the one to commit.
	merged := ""
	if fork != "" {
		saved, err := repo.Line(ctx, "rev-parse", w.Saved+"^{commit}")
		if err != nil {
			return rewrite{}, err
		}
		m, err := repo.MergeTree(ctx, base, saved)
		if err != nil {
			return rewrite{}, err
		}
		if len(m.Conflicts) > 0 {
			w.Own, w.Conflicts = false, m.Conflicts
			return w, nil
		}
		merged = m.Tree
	}
	if _, err := repo.Run(ctx, "update-ref", "-m", "wiggum: the commits made before the attempt, back on "+w.Branch, ref, base, head); err != nil {
		return rewrite{}, err
	}
	if merged != "" {
		if _, err := repo.Run(ctx, "read-tree", "--reset", "-u", merged); err != nil {
			return rewrite{}, fmt.Errorf("put what the agent changed on the commits it undid (all of it is saved in %s): %w", w.Saved, err)
		}
	}
	return w, nil
}

// keepHistory is restoreHistory for an attempt that passed, before its
// commit: its own rewrite is committed as the story's work. One onto
// commits that are not the attempt's (a rebase onto another branch, a
// fetched upstream) fails the attempt - and its rollback is refused, as
// the contract has it for a checkpoint that is no longer an ancestor of
// HEAD. A failed attempt that rewrote history is left to that refusal too:
// a rollback goes ahead only from a HEAD its checkpoint is an ancestor of.
func (e *executor) keepHistory(ctx context.Context) (detail string, others bool, err error) {
	w, err := restoreHistory(ctx, e.st, e.attemptHead, e.attemptBranch, e.session, e.attemptStarted)
	if err != nil || w.Dropped == "" {
		return "", false, err
	}
	n, _ := strconv.Atoi(w.Dropped)
	e.event("history_rewritten", map[string]any{"branch": w.Branch, "commits": n, "own": w.Own, "backup": w.Saved})
	if w.Own {
		e.run.addBackup(w.Saved)
		e.disp.printf("  %s (git commit --amend, a rebase or a reset); they are back as they were, and what the agent changed is committed as this story's work (its commits are saved in %s)", w.reason(), w.Saved)
		return "", false, nil
	}
	if w.OthersCommit != "" {
		return fmt.Sprintf("the commits of %s made before the attempt were rewritten during it, not by the agent: commit %.12s, put in their place, was made %s (the commit journal says so); wiggum leaves that as it is",
			w.Branch, w.OthersCommit, w.OthersBy), true, nil
	}
	if len(w.Conflicts) > 0 {
		e.disp.printf("  %s; what it changed conflicts with them in %s, so its work cannot land (all of it is saved in %s)", w.reason(), strings.Join(w.Conflicts, ", "), w.Saved)
		return w.reason() + " and what it changed conflicts with them in " + strings.Join(w.Conflicts, ", ") + ", so its work cannot land", false, nil
	}
	return w.reason() + " onto commits that are not its own (a rebase onto another branch?), so its work cannot land", false, nil
}

// rewriteHint is what to do next when a rollback was refused because the
// checkpoint is no longer an ancestor of HEAD: the agent rewrote commits
// made before its attempt. (A parallel worker sets its worktree aside
// instead: putAside.)
func rewriteHint(refused *checkpoint.RefusedError, cp string) string {
	if refused == nil || !strings.Contains(refused.Reason, "no longer an ancestor of HEAD") {
		return ""
	}
	return fmt.Sprintf(". The agent rewrote commits made before its attempt (git commit --amend, a rebase or a reset; git reflog shows what it did). "+
		"To go on, keep what it did (git branch wiggum-rewrite HEAD; git stash -u for its uncommitted files), put the branch back "+
		"(git reset --hard %.12s), then run again", cp)
}
