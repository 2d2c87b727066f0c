package worktree

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/killpoint"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// Merged is what a merge did.
type Merged struct {
	Commit      string // target's new tip
	Old         string // target's tip before (FollowSubmodules)
	Tip         string // the branch's tip that was merged
	FastForward bool
	Already     bool // target already contained the branch
	// Appended: files both sides only added lines to the end of, merged
	// keeping both additions (git.Repo.MergeTree).
	Appended []string
}

// ConflictError is a branch that cannot merge cleanly. Nothing changed: the
// branch, the target and the working tree are as they were.
type ConflictError struct {
	Branch, Target string
	Paths          []string
}

func (e *ConflictError) Error() string {
	b, t := checkpoint.BranchName(e.Branch), checkpoint.BranchName(e.Target)
	return fmt.Sprintf("%s conflicts with %s in %s; the branch is kept: resolve it there (git switch %s && git merge %s, then commit) and the next run lands it, or delete it (git branch -D %s) to have the story done again",
		b, t, strings.Join(e.Paths, ", "), b, t, b)
}

// BlockedError is a clean merge the checked-out target could not take: the
// working tree has changes it would overwrite, or it left the target
// branch. Nothing changed.
type BlockedError struct {
	Branch, Target, Reason string
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("%s was not merged into %s: %s; the branch is kept, and the next run lands it", checkpoint.BranchName(e.Branch), checkpoint.BranchName(e.Target), e.Reason)
}

// Merge merges branch into target, which must be checked out in tree (the
// main working tree). The caller holds the repository mutex for the whole
// sequence. Conflicts are found with git merge-tree, which touches no
// working tree; a clean result is committed with commit-tree, tree's index
// and files are moved from the old tip to the new one with a two-tree
// read-tree (which refuses to overwrite local changes), and target is moved
// with update-ref against its expected old value. Any refusal leaves
// everything as it was.
// read-tree moves no submodule's checkout: the caller does, with
// FollowSubmodules, once the commits the branch recorded for them are in
// the main tree's checkouts.
func Merge(ctx context.Context, tree *git.Repo, target, branch, message string) (*Merged, error) {
	ctx = context.WithoutCancel(ctx)
	// One rev-parse for both tips, their merge bases (the symmetric
	// difference prints them as ^base) and the checked-out branch.
	out, err := tree.Line(ctx, "rev-parse", target+"^{commit}..."+branch+"^{commit}", "--symbolic-full-name", "HEAD")
	lines := strings.Split(out, "\n")
	if err != nil || len(lines) < 3 {
		return nil, fmt.Errorf("merge: resolve HEAD, %s and %s: %w", target, branch, errOr(err, out))
	}
	// rev-parse prints A...B's B first.
	tip, cur, head := lines[0], lines[1], lines[len(lines)-1]
	var bases []string
	for _, l := range lines[2 : len(lines)-1] {
		bases = append(bases, strings.TrimPrefix(l, "^"))
	}
	if head != target {
		return nil, &BlockedError{Branch: branch, Target: target, Reason: fmt.Sprintf("the working tree %s is on %s now, not on %s", tree.Root, orDetached(head), checkpoint.BranchName(target))}
	}
	if op := tree.InProgress(); op != "" {
		return nil, &BlockedError{Branch: branch, Target: target, Reason: "a " + op + " is in progress in " + tree.Root}
	}
	if len(bases) == 0 {
		return nil, fmt.Errorf("merge: %s and %s have no common commit", checkpoint.BranchName(target), checkpoint.BranchName(branch))
	}
	// One is an ancestor of the other exactly when it is their only
	// merge base.
	base := bases[0]
	if len(bases) > 1 {
		base = ""
	}
	if base == tip {
		return &Merged{Commit: cur, Old: cur, Tip: tip, Already: true}, nil
	}
	res := &Merged{Tip: tip, Old: cur}
	if base == cur {
		res.Commit, res.FastForward = tip, true
	} else {
		m, err := mergeTree(ctx, tree, target, branch, cur, tip)
		if err != nil {
			return nil, err
		}
		res.Appended = m.Appended
		res.Commit, err = tree.CommitTree(ctx, m.Tree, []string{cur, tip}, message, tree.Sign)
		if err != nil {
			return nil, fmt.Errorf("merge: commit: %w", err)
		}
	}
	in := intent{Tree: tree.Root, Target: target, Old: cur, New: res.Commit, Message: message}
	if err := writeIntent(tree, in); err != nil {
		return nil, err
	}
	keepIntent := false
	defer func() {
		if !keepIntent {
			clearIntent(tree)
		}
	}()
	killpoint.At("merge-intent")
	// Another git holding the index for a moment is waited out by
	// tree.Run itself (read-tree takes the lock first).
	_, err = tree.Run(ctx, "read-tree", "-m", "-u", cur, res.Commit)
	var ge *git.Error
	if err != nil && errors.As(err, &ge) && !git.IndexLocked(err) {
		failed := err
		// A read-tree that died writing the files (a full disk, a git
		// killed by the OOM killer) left the index at cur and some of
		// the merge's files written, untracked: the retry below would
		// then fail on them, "Untracked working tree file ... would be
		// overwritten", and they were taken for the person's. Finish its
		// work as a killed wiggum's is finished (finishReadTree); when
		// that fails too (the disk is still full), the merge's record is
		// kept for the next run to finish, and the real error told.
		done, ferr := finishReadTree(ctx, tree, in)
		switch {
		case ferr != nil:
			keepIntent = true
			return nil, fmt.Errorf("merge: updating %s failed (%s), and finishing it failed: %w; its files are part written: the next run finishes the merge", tree.Root, firstLine(ge.Stderr), ferr)
		case done:
			err = nil
		default:
			// Stale stat data makes read-tree think files changed (it
			// checks every path before it writes any): refresh the
			// index and ask once more. The index is fresh after the
			// previous landing's own commit, so this costs a process
			// only when something else touched the tree.
			_, _ = tree.Run(ctx, "update-index", "-q", "--refresh")
			_, err = tree.Run(ctx, "read-tree", "-m", "-u", cur, res.Commit)
			if err != nil && machineFailure(failed) {
				// Not the tree's state but the machine's: told as such,
				// not as a merge the person must resolve.
				keepIntent = true
				return nil, fmt.Errorf("merge: updating %s failed: %w", tree.Root, failed)
			}
		}
	}
	if err != nil {
		var ge *git.Error
		reason := err.Error()
		if errors.As(err, &ge) {
			reason = "updating " + tree.Root + " failed: " + firstLine(ge.Stderr)
		}
		return nil, &BlockedError{Branch: branch, Target: target, Reason: reason}
	}
	killpoint.At("merge-tree-moved")
	if _, err := tree.Run(ctx, "update-ref", "-m", "wiggum: "+firstLine(message), target, res.Commit, cur); err != nil {
		// Someone moved target outside the mutex; put the tree back.
		_, _ = tree.Run(ctx, "read-tree", "-m", "-u", res.Commit, cur)
		return nil, &BlockedError{Branch: branch, Target: target, Reason: checkpoint.BranchName(target) + " moved during the merge (" + firstLine(err.Error()) + ")"}
	}
	killpoint.At("merge-ref-moved")
	return res, nil
}

// machineFailure reports whether git failed for want of the machine's
// resources - a full disk - or was killed by a signal (the OOM killer):
// not for anything in the tree.
func machineFailure(err error) bool {
	if errors.Is(err, syscall.ENOSPC) || strings.Contains(err.Error(), "No space left on device") {
		return true
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		ws, ok := exit.Sys().(syscall.WaitStatus)
		return ok && ws.Signaled()
	}
	return false
}

// mergeTree returns the merge of cur and tip, or a *ConflictError with the
// conflicted paths.
func mergeTree(ctx context.Context, repo *git.Repo, target, branch, cur, tip string) (*git.MergeResult, error) {
	m, err := repo.MergeTree(ctx, cur, tip)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	if len(m.Conflicts) > 0 {
		return nil, &ConflictError{Branch: branch, Target: target, Paths: m.Conflicts}
	}
	return m, nil
}

func errOr(err error, out string) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("unexpected output %q", out)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func orDetached(ref string) string {
	if ref == "" {
		return "a detached HEAD"
	}
	return checkpoint.BranchName(ref)
}
