package loop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/wiggum-dev/wiggum/worktree"
)

// landKept lands the finished stories an earlier parallel run could not
// merge: it kept each one's branch (wiggum/<story>) and left the story
// open, and the next run gave it to an agent all over again - the
// finished work left on a branch beside the new. Now a kept branch of an
// open story is merged first, before any agent runs: the story is ticked
// done and the branch goes. One that still does not merge is reported
// again and its story left alone (it is skipped, exit 5), until the
// person resolves it on the branch (the next run lands it) or deletes
// the branch (the next run does the story again).
//
// A branch is the story's when it is named after it and holds a commit
// with the message this run gives the story: a branch of another plan's
// story of the same id is not taken for it. A --remote run has its own
// (the server's conflict markers).
func (r *run) landKept(ctx context.Context) error {
	if r.opts.Coordinator != nil {
		return nil
	}
	repo := r.st.Repo
	kept, err := worktree.Kept(ctx, repo, r.branch)
	if err != nil || len(kept) == 0 {
		return err
	}
	stories, err := r.opts.Plan.Stories()
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for _, s := range stories {
		if n, err := worktree.Name(s.ID); err == nil {
			names[n] = true
		}
	}
	target := strings.TrimPrefix(r.branch, "refs/heads/")
	for i := range stories {
		s := &stories[i]
		if s.Done {
			continue
		}
		name, err := worktree.Name(s.ID)
		if err != nil {
			continue
		}
		subject := firstLine(r.msg.story(s))
		for _, k := range kept {
			if !keptFor(k.Name(), name, names) || !slices.Contains(k.Subjects, subject) {
				continue
			}
			branch := strings.TrimPrefix(k.Ref, "refs/heads/")
			msg := fmt.Sprintf("Merge %s\n\nwiggum merged %s (branch %s, kept by an earlier run that could not merge it).\n", r.msg.story(s), s.ID, branch)
			m, err := worktree.Merge(ctx, repo, r.branch, k.Ref, msg)
			var conflict *worktree.ConflictError
			var blocked *worktree.BlockedError
			switch {
			case errors.As(err, &conflict) && r.mayRetryConflict(s.ID, k.Ref):
				// --retry-conflicts: its agent merges the branch in.
				r.conflictRetry(s, k.Ref, conflict)
			case errors.As(err, &conflict), errors.As(err, &blocked):
				problem := fmt.Sprintf("does not merge into %s (%s)", target, strings.TrimPrefix(err.Error(), "merge: "))
				if conflict != nil {
					problem = fmt.Sprintf("still conflicts with %s in %s", target, strings.Join(conflict.Paths, ", "))
				}
				why := fmt.Sprintf("its finished work on %s, kept by an earlier run, %s: resolve it on that branch (the next run lands it) or delete the branch (git branch -D %s) to have the story done again",
					branch, problem, branch)
				r.led.hold(s.ID, why)
				r.event("merge_failed", map[string]any{"story": s.ID, "branch": k.Ref, "error": why})
				r.disp.printf("✘ %s: %s", s.ID, why)
			case err != nil:
				return fmt.Errorf("run: merge %s, kept by an earlier run: %w", branch, err)
			default:
				if err := r.tickMerged(ctx, s, k.Ref, m.Commit); err != nil {
					return err
				}
				_, _ = repo.Run(ctx, "update-ref", "-d", k.Ref, k.Tip)
				r.addCompleted(s.ID)
				r.event("merged", map[string]any{"story": s.ID, "branch": k.Ref, "commit": m.Commit, "fast_forward": m.FastForward, "kept": true})
				r.disp.printf("⇢ %s merged into %s from %s, which an earlier run kept when it could not merge it (%s); no agent ran", s.ID, target, branch, mergedHow(m))
				// The run that kept the branch saved its submodule
				// commits in the main tree's checkouts.
				for _, note := range worktree.FollowSubmodules(ctx, repo, r.branch, m.Old, m.Commit) {
					r.disp.printf("  %s: %s", s.ID, note)
				}
			}
			break
		}
	}
	return nil
}

// keptFor reports whether the branch name b is the one a worker of the
// story named name had: name itself, or name-N when name was taken and
// name-N is no story's own.
func keptFor(b, name string, names map[string]bool) bool {
	if b == name {
		return true
	}
	n, ok := strings.CutPrefix(b, name+"-")
	if !ok || names[b] {
		return false
	}
	_, err := strconv.Atoi(n)
	return err == nil
}
