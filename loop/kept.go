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
	if err := r.tickLandedFinished(ctx); err != nil {
		return err
	}
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

// tickLandedFinished ticks the open stories an earlier run finished in a
// worktree and whose branch reached the target without the landing being
// recorded: its merge moved the target (or the next holder of the
// repository mutex finished that merge, worktree.finishInterrupted) and
// then failed - a full disk during the tree's update - before the story
// was ticked, and that run removed the worktree. The branch, merged, is
// no kept one any more (Kept lists only those the target does not
// contain), so without this the story went to an agent again and its
// work was applied twice. A story is taken as landed only when its last
// journal record is that done attempt, with no landing after it, and the
// commit the attempt ended at is in the target: it is ticked and the tick
// committed, no agent runs, and its branch, if still there, goes.
func (r *run) tickLandedFinished(ctx context.Context) error {
	stories, err := r.opts.Plan.Stories()
	if err != nil {
		return err
	}
	waiting := map[string]bool{}
	for _, u := range r.unlanded {
		waiting[u.story.ID] = true
	}
	repo := r.st.Repo
	target := strings.TrimPrefix(r.branch, "refs/heads/")
	for i := range stories {
		s := &stories[i]
		if s.Done || waiting[s.ID] {
			continue
		}
		f, ok := r.led.finishedAt(s.ID)
		if !ok || f.Head == "" || f.Unlanded != "" {
			continue
		}
		in, err := repo.OK(ctx, "merge-base", "--is-ancestor", f.Head, r.branch)
		if err != nil || !in {
			continue
		}
		tip, err := repo.Line(ctx, "rev-parse", "--verify", "--quiet", r.branch+"^{commit}")
		if err != nil {
			return fmt.Errorf("run: read %s: %w", target, err)
		}
		if err := r.tickMerged(ctx, s, f.Branch, tip); err != nil {
			return err
		}
		if b, err := repo.Line(ctx, "rev-parse", "--verify", "--quiet", f.Branch+"^{commit}"); err == nil && b == f.Head {
			_, _ = repo.Run(ctx, "update-ref", "-d", f.Branch, b)
		}
		s.Done = true
		r.addCompleted(s.ID)
		r.event("merged", map[string]any{"story": s.ID, "branch": f.Branch, "commit": tip, "resumed": true})
		r.disp.printf("⇢ %s: its branch %s was merged into %s before the last run stopped, which did not tick it; ticked it now, no agent ran",
			s.ID, strings.TrimPrefix(f.Branch, "refs/heads/"), target)
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
