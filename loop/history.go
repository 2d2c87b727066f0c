package loop

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
)

// An agent that amends the last commit (`git commit --amend`: "fix the
// typo in the last commit"), squashes with `git reset --soft HEAD~2` or
// rebases rewrote the previous story's commit: the run went on from the
// rewritten one, so that story's commit - the one its report and journal
// name - left the branch, and its work came back under another story's
// message (or under none, after a `git reset HEAD~1`). A run killed in
// such an attempt could not be resumed: the rollback is refused when the
// checkpoint is no longer an ancestor of HEAD (the contract's rule).

// rewrite is what restoreHistory found and did: the commits of the branch
// made before the attempt that it no longer held (dropped, a count), and
// whether what replaced them was all committed during the attempt (own).
// Saved holds the rewritten state; zero when nothing was rewritten.
type rewrite struct {
	Branch, Dropped, Saved string
	Own                    bool
}

// reason says what the attempt did.
func (w rewrite) reason() string {
	return fmt.Sprintf("the agent rewrote %s commit(s) of %s made before its attempt", w.Dropped, w.Branch)
}

// restoreHistory keeps the commits made before an attempt on its branch:
// when the branch (branch, "" for a detached HEAD) no longer holds base,
// the attempt's starting commit, its state is saved under
// refs/wiggum/backup/ and the branch goes back to base, with the tree and
// index as they are - what the attempt changed stays, to be committed or
// rolled back. Reading the branch's ref file costs no git process, so an
// attempt that did not move the branch pays nothing; one that committed
// on top of base pays one `git merge-base`.
func restoreHistory(ctx context.Context, st *checkpoint.State, base, branch string, since time.Time) (rewrite, error) {
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
	if fork, ferr := repo.Line(ctx, "merge-base", base, head); ferr == nil {
		w.Own, err = madeSince(ctx, repo, fork, head, since)
	} else {
		w.Own, err = allMadeSince(ctx, repo, head, since)
	}
	if err != nil {
		return rewrite{}, err
	}
	if w.Saved, err = st.Backup(ctx, w.reason()); err != nil {
		return rewrite{}, err
	}
	if _, err := repo.Run(ctx, "update-ref", "-m", "wiggum: the commits made before the attempt, back on "+w.Branch, ref, base, head); err != nil {
		return rewrite{}, err
	}
	return w, nil
}

// keepHistory is restoreHistory after the agent: its own rewrite is
// judged as the story's work; one onto commits that are not the attempt's
// (another branch, a fetched upstream) fails the attempt.
func (e *executor) keepHistory(ctx context.Context) (detail string, err error) {
	w, err := restoreHistory(ctx, e.st, e.attemptHead, e.attemptBranch, e.attemptStarted)
	if err != nil || w.Saved == "" {
		return "", err
	}
	e.run.addBackup(w.Saved)
	e.event("history_rewritten", map[string]any{"branch": w.Branch, "commits": w.Dropped, "kept": w.Own, "backup": w.Saved})
	if w.Own {
		e.disp.printf("  %s (git commit --amend, a rebase or a reset); they are back as they were, and what the agent changed is in the tree, judged as this story's work (its commits are saved in %s)", w.reason(), w.Saved)
		return "", nil
	}
	return fmt.Sprintf("%s onto commits that are not its own (a rebase onto another branch?), so its work cannot land; that state is saved in %s and %s is back at %.12s",
		w.reason(), w.Saved, w.Branch, e.attemptHead), nil
}
