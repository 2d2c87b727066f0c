package loop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/killpoint"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/plan"
	"github.com/wiggum-dev/wiggum/worktree"
)

// unlanded is a story a killed parallel run finished in its worktree and
// never landed: the worktree, leased again by this run, waits for the
// merge coordinator.
type unlanded struct {
	w     *worktree.Worker
	story *plan.Story
}

// finishedThere judges a worktree a killed run left, on resume: its story
// is landed rather than redone only when the story's last journal record
// is a done attempt in a worktree with no landing after it, and the
// worktree is exactly as that attempt left it - on the branch the attempt
// ran on, whose tip is the very commit the attempt recorded (nothing
// committed after it), for the branch the main tree is on, no git
// operation in progress, and nothing uncommitted but the plan (a worker's
// commits leave the plan out; its landing saves such an edit, as it always
// does) and wiggum's own files git is not told to ignore (a lock holder
// record's temporary file, left by a kill mid-write). Otherwise the worktree is saved and the story redone; why says
// what changed when the story had finished.
//
// An attempt whose end a kill kept from being recorded, but whose checks
// passed (its pass record), finished too when its branch is at the commit
// the pass recorded (the agent committed its work itself) or on the one
// commit the loop makes of the rest, on top of it, and the worktree is
// otherwise as above; its end is recorded when it is kept (landPassed).
// At the commit the pass recorded, what the agent left uncommitted is the
// rest of that attempt - the kill came before the loop's commit - and is
// committed here, as the killed run was about to.
func (r *run) finishedThere(ctx context.Context, lo worktree.Leftover, target string, inPlan map[string]*plan.Story) (bool, string) {
	f, ok := r.led.finishedAt(lo.Story)
	passed := false
	if !ok {
		f, _, ok = r.led.passedThere(lo.Story)
		passed = ok
	}
	s := inPlan[lo.Story]
	if !ok || s == nil || s.Done {
		return false, ""
	}
	switch {
	case lo.Branch != f.Branch:
		return false, fmt.Sprintf("its attempt ended on %s, and this worktree is on %s", checkpoint.BranchName(f.Branch), checkpoint.BranchName(lo.Branch))
	case lo.Target != target:
		return false, fmt.Sprintf("it was to land on %s, and the main tree is on %s now", checkpoint.BranchName(lo.Target), checkpoint.BranchName(target))
	case lo.Tip != f.Head && !passed:
		return false, fmt.Sprintf("its branch %s moved after the attempt ended (it is at %.12s, the attempt recorded %.12s)", checkpoint.BranchName(lo.Branch), lo.Tip, f.Head)
	case lo.Tip != f.Head:
		// One git process, on resume only: the tip's parents and subject.
		out, err := r.st.Repo.Run(ctx, "log", "-n", "1", "--format=%P%x09%s", lo.Tip)
		if err != nil {
			return false, err.Error()
		}
		parents, subject, _ := strings.Cut(strings.TrimRight(out, "\n"), "\t")
		if parents != f.Head || subject != firstLine(r.msg.story(s)) {
			return false, fmt.Sprintf("its branch %s moved after its checks passed (it is at %.12s, they passed at %.12s)", checkpoint.BranchName(lo.Branch), lo.Tip, f.Head)
		}
	}
	tree, err := lo.Tree(ctx)
	switch {
	case err != nil:
		return false, err.Error()
	case tree.HeadBranch != lo.Branch || tree.Head != lo.Tip:
		return false, fmt.Sprintf("its worktree left %s after the attempt ended", checkpoint.BranchName(lo.Branch))
	case tree.Busy != "":
		return false, fmt.Sprintf("a %s is in progress in its worktree", tree.Busy)
	}
	var stray, own []string
	for _, p := range tree.Dirty {
		switch {
		case p == r.planRel || strings.HasPrefix(p, r.planRel+"/"):
		case holderTemp(p):
			own = append(own, p)
		default:
			stray = append(stray, p)
		}
	}
	if len(stray) > 0 && passed && lo.Tip == f.Head {
		// The kill came after the checks passed on this tree and before
		// the loop's commit of what the agent left uncommitted: it is
		// committed now, as the killed run was about to (as a serial
		// run's resume does), under the lease Reclaim holds.
		c := r.newCommitter(tree.Repo, []string{layout.SessionEnv + "=" + r.session}, append([]string{r.planRel}, own...))
		sha, err := c.commitAll(ctx, r.msg.story(s))
		if err != nil {
			return false, fmt.Sprintf("the work its agent left uncommitted when its checks passed could not be committed (%v)", err)
		}
		r.disp.printf("%s: committed the work its agent left uncommitted when its checks passed, before the crash (%s)", s.ID, sha)
		return true, ""
	}
	if len(stray) > 0 {
		return false, fmt.Sprintf("its worktree has changes made after the attempt ended (%s)", summarize(stray, 5))
	}
	return true, ""
}

// holderTemp reports whether rel (repository-relative) is the temporary
// file of a lock holder record - wiggum's own, outside what git is told to
// ignore: a kill between writing the record and renaming it into place (a
// resumed run leasing a worktree again, say) leaves it.
func holderTemp(rel string) bool {
	dir, base := path.Split(layout.HolderFile)
	return strings.HasPrefix(rel, dir+"."+base) && rel != layout.HolderFile
}

// landPassed records the end of the attempt at story whose checks passed in
// its worktree and whose end a kill kept from being recorded, when Reclaim
// kept that worktree for landing (finishedThere): done, at its branch's
// tip, with what its agent cost - as the killed run was about to.
func (r *run) landPassed(ctx context.Context, w *worktree.Worker) {
	_, pass, ok := r.led.passedThere(w.Story)
	if !ok {
		return
	}
	tip := headFromFiles(w.State.Repo.GitDir, w.State.Repo.CommonDir)
	if tip == "" {
		tip, _ = w.State.Repo.Head(ctx)
	}
	_ = r.led.record(journalRec{T: "end", Story: w.Story, Attempt: pass.Attempt, Iter: pass.Iter, Outcome: "done", Head: tip,
		Cost: pass.Cost, In: pass.In, Out: pass.Out, Note: "its checks passed before the crash; landed on resume"}, true)
}

// keepFinished adds a worktree Reclaim kept for landing, without the
// holder records' temporary files a kill left in it (its lease is held:
// nobody writes one there now; missing is fine).
func (r *run) keepFinished(w *worktree.Worker, inPlan map[string]*plan.Story) {
	dir, base := path.Split(layout.HolderFile)
	tmps, _ := filepath.Glob(filepath.Join(w.Path, filepath.FromSlash(dir), "."+base+"*"))
	for _, tmp := range tmps {
		if rel, err := filepath.Rel(w.Path, tmp); err == nil && holderTemp(filepath.ToSlash(rel)) {
			_ = os.Remove(tmp)
		}
	}
	r.unlanded = append(r.unlanded, unlanded{w: w, story: inPlan[w.Story]})
}

// landResumed hands the stories the killed run finished and never landed
// to the merge coordinator, as their workers would have handed them over:
// each is landed - merged, ticked once - and never given to an agent
// again. Call it before any worker claims a story.
func (p *parallel) landResumed(ctx context.Context) {
	if p.coord != nil {
		p.landResumedShared(ctx)
		return
	}
	for _, u := range p.r.unlanded {
		p.mu.Lock()
		p.inflight[u.story.ID] = true
		p.mu.Unlock()
		u.w.Settle(ctx)
		p.r.addCompleted(u.story.ID)
		p.lq.put(landing{w: u.w, story: u.story, done: true, queued: time.Now()})
	}
	p.r.unlanded = nil
}

// releaseUnlanded lets go of the worktrees kept for landing when the run
// ends before its coordinator took them (a failed preflight): they stay,
// and the next run finds them finished again.
func (r *run) releaseUnlanded() {
	for _, u := range r.unlanded {
		_ = u.w.Lease.Release()
	}
	r.unlanded = nil
}

// commitStory ticks story in the plan and commits the main tree's work with
// the tick - one commit per story - or, when the plan is ignored or was
// dirty before the run, commits the work and leaves (or commits) the tick
// on its own. Every step is idempotent, so a resume finishing an attempt
// whose commit a kill cut short commits what is left and never ticks or
// commits twice: a tick already made is no change, a commit already made
// leaves nothing to commit.
func (r *run) commitStory(ctx context.Context, story *plan.Story) (string, error) {
	if err := r.opts.Plan.MarkDone(story.ID); err != nil {
		var gone *plan.NotFoundError
		if errors.As(err, &gone) {
			return "", fmt.Errorf("%s was removed from the plan %s during its own attempt - by the agent, or by you: wiggum cannot tell which; a story is done when it is ticked, not removed, so the attempt fails and its rollback puts the plan back (the attempt is saved). To drop %s, stop the run (Ctrl-C), take it out of the plan, and run again", story.ID, r.planRel, story.ID)
		}
		var bad *plan.BadInputError
		switch {
		case errors.Is(err, os.ErrNotExist):
			return "", fmt.Errorf("the agent deleted the plan %s, the run's record of what is done, so %s cannot be ticked and the attempt fails; leave the plan where it is", r.planRel, story.ID)
		case errors.As(err, &bad):
			// The plan read at the attempt's start: the agent's
			// changes broke it.
			return "", fmt.Errorf("the agent's changes left the plan %s unreadable (%w), so %s cannot be ticked and the attempt fails; keep the plan well formed", r.planRel, err, story.ID)
		}
		return "", fmt.Errorf("mark %s done: %w", story.ID, err)
	}
	killpoint.At("serial-ticked")
	sha, err := r.commit.commitAll(ctx, r.msg.story(story))
	if err == nil && !r.tickInTree() {
		killpoint.At("serial-work-committed")
		_, _ = r.commitTick(ctx, story)
	}
	return sha, err
}

// finishPassed finishes, on resume, the main tree's attempt a kill cut
// short after its agent finished and its checks passed (its pass record):
// the work is committed with the story's tick, as the killed run was about
// to do, and the agent is not run again. That needs the tree as the kill
// left it: no git operation in progress, on the attempt's branch, and HEAD
// where the pass recorded it or on the story's own commit (and tick
// commit) on top. Otherwise it changes nothing and returns why, and the
// caller rolls the attempt back (saving it first) like any interrupted
// one.
func (r *run) finishPassed(ctx context.Context, cp *checkpoint.Checkpoint, pass journalRec, s *plan.Story) (string, error) {
	repo := r.st.Repo
	if op := repo.InProgress(); op != "" {
		return fmt.Sprintf("a %s is in progress", op), nil
	}
	branch, err := repo.Branch(ctx)
	if err != nil {
		return "", fmt.Errorf("run: read the branch: %w", err)
	}
	if branch != cp.Branch {
		return fmt.Sprintf("HEAD left %s since", checkpoint.BranchName(cp.Branch)), nil
	}
	if why, err := r.onPassedHead(ctx, pass, s); why != "" || err != nil {
		return why, err
	}
	// What the kill (or a signing program that failed) kept the attempt
	// from taking out of the agent's commits.
	pulled, stateKept := r.cleanAgentCommits(ctx, r.st, cp.Head, cp.Branch, map[string]any{"story": s.ID})
	if stateKept != "" {
		return stateKept, nil
	}
	r.commit = r.newCommitter(repo, []string{layout.SessionEnv + "=" + r.session}, r.led.keepPaths())
	r.commit.pulled = pulled
	defer func() { r.commit = nil }()
	if r.planIgnored, err = repo.OK(ctx, "check-ignore", "-q", "--", r.planRel); err != nil {
		return "", fmt.Errorf("run: %w", err)
	}
	sha, err := r.commitStory(ctx, s)
	if err != nil {
		return "", fmt.Errorf("run: commit %s, whose attempt finished before the crash: %w", s.ID, err)
	}
	how := "committed it with its tick as " + sha
	if sha == "" {
		how = "it was committed before the crash"
	}
	if err := r.led.record(journalRec{T: "end", Story: s.ID, Attempt: pass.Attempt, Iter: pass.Iter, Outcome: "done", Commit: sha,
		Cost: pass.Cost, In: pass.In, Out: pass.Out, Note: "finished before the crash; committed on resume"}, true); err != nil {
		return "", err
	}
	s.Done = true
	r.addCompleted(s.ID)
	r.event("story_recovered", map[string]any{"story": s.ID, "attempt": pass.Attempt, "iteration": pass.Iter, "commit": sha})
	r.disp.printf("%s: its attempt had finished before the crash (the agent exited 0 and its checks passed); %s, not redoing it", s.ID, how)
	return "", nil
}

// onPassedHead says why HEAD is not where the passed attempt could have
// left it - at the commit its pass recorded, or on the story's own commit
// and tick commit made on top of it - or "" when it is.
func (r *run) onPassedHead(ctx context.Context, pass journalRec, s *plan.Story) (string, error) {
	if pass.Head == "" {
		return "its record does not say where HEAD was", nil
	}
	// HEAD and up to two commits under it, each with its parents and
	// subject: one git process, on resume only.
	out, err := r.st.Repo.Run(ctx, "log", "-n", "3", "--format=%H%x09%P%x09%s", "HEAD")
	if err != nil {
		return "", fmt.Errorf("run: read HEAD: %w", err)
	}
	own := map[string]bool{firstLine(r.msg.story(s)): true, firstLine(r.msg.tick(s)): true}
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) < 3 {
			break
		}
		if f[0] == pass.Head {
			return "", nil
		}
		if strings.Contains(f[1], " ") || !own[f[2]] {
			break
		}
	}
	return fmt.Sprintf("HEAD moved since its checks passed (to %.12s; they passed at %.12s)", strings.SplitN(out, "\t", 2)[0], pass.Head), nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
