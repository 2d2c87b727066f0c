package loop

import (
	"context"
	"fmt"
	"strings"

	"github.com/wiggum-dev/wiggum/checkpoint"
)

// keepHistory keeps the commits made before the attempt on its branch. An
// agent that amends the last commit (`git commit --amend`: "fix the typo
// in the last commit"), squashes with `git reset --soft HEAD~2` or rebases
// rewrote the previous story's commit: the run went on from the rewritten
// one, so that story's commit - the one its report and journal name - left
// the branch, and its work came back under another story's message (or
// under none, after a `git reset HEAD~1`).
//
// When the branch no longer holds the attempt's starting commit and what
// it holds instead was all committed during the attempt, the branch goes
// back to that commit and the agent's tree and index stay as they are: what
// it changed is judged, committed or rolled back, as the story's work, and
// the commits it rewrote are the run's again; its own rewritten commits are
// saved first under refs/wiggum/backup/ (their messages). A branch rebased
// onto commits that are not the attempt's (another branch, a fetched
// upstream) fails the attempt, saved first, with the branch put back for
// the rollback. Reading the branch's ref file costs no git process, so an
// attempt that did not move the branch pays nothing; one that committed on
// top of it pays one `git merge-base`.
func (e *executor) keepHistory(ctx context.Context) (detail string, err error) {
	base, branch := e.attemptHead, e.attemptBranch
	if base == "" {
		return "", nil // an unborn branch: no history to keep
	}
	repo := e.st.Repo
	ref := branch
	if ref == "" {
		ref = "HEAD"
	}
	if v, ok := repo.RefValue(ref); ok && v == base {
		return "", nil
	}
	ctx = context.WithoutCancel(ctx)
	head, err := repo.Head(ctx)
	if err != nil || head == "" || head == base {
		return "", err
	}
	if ok, err := repo.OK(ctx, "merge-base", "--is-ancestor", base, head); ok || err != nil {
		return "", err // the attempt's commits on top of its start
	}
	fork, err := repo.Line(ctx, "merge-base", base, head)
	if err != nil {
		fork = "" // unrelated histories
	}
	dropped, err := repo.Run(ctx, "rev-list", "--count", head+".."+base)
	if err != nil {
		return "", err
	}
	dropped = strings.TrimSpace(dropped)
	// The agent's own rewrite when every commit it put in place of the
	// dropped ones was made during the attempt (an amended root commit
	// has no fork: then all of head's).
	var own bool
	if fork != "" {
		own, err = e.madeSince(ctx, fork, head)
	} else {
		own, err = e.allMadeSince(ctx, head)
	}
	if err != nil {
		return "", err
	}
	where := checkpoint.BranchName(branch)
	reason := fmt.Sprintf("the agent rewrote %s commit(s) of %s made before its attempt", dropped, where)
	saved, err := e.st.Backup(ctx, reason)
	if err != nil {
		return "", err
	}
	e.run.addBackup(saved)
	if _, err := repo.Run(ctx, "update-ref", "-m", "wiggum: the commits made before the attempt, back on "+where, ref, base, head); err != nil {
		return "", err
	}
	e.event("history_rewritten", map[string]any{"branch": where, "commits": dropped, "kept": own, "backup": saved})
	if own {
		e.disp.printf("  %s (git commit --amend, a rebase or a reset); they are back as they were, and what the agent changed is in the tree, judged as this story's work (its commits are saved in %s)", reason, saved)
		return "", nil
	}
	return fmt.Sprintf("%s onto commits that are not its own (a rebase onto another branch?), so its work cannot land; that state is saved in %s and %s is back at %.12s",
		reason, saved, where, base), nil
}
