package loop

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
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
func (r *run) finishedThere(ctx context.Context, lo worktree.Leftover, target string, inPlan map[string]*plan.Story) (bool, string) {
	f, ok := r.led.finishedAt(lo.Story)
	if s := inPlan[lo.Story]; !ok || s == nil || s.Done {
		return false, ""
	}
	switch {
	case lo.Branch != f.Branch:
		return false, fmt.Sprintf("its attempt ended on %s, and this worktree is on %s", checkpoint.BranchName(f.Branch), checkpoint.BranchName(lo.Branch))
	case lo.Target != target:
		return false, fmt.Sprintf("it was to land on %s, and the main tree is on %s now", checkpoint.BranchName(lo.Target), checkpoint.BranchName(target))
	case lo.Tip != f.Head:
		return false, fmt.Sprintf("its branch %s moved after the attempt ended (it is at %.12s, the attempt recorded %.12s)", checkpoint.BranchName(lo.Branch), lo.Tip, f.Head)
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
	var stray []string
	for _, p := range tree.Dirty {
		if p != r.planRel && !strings.HasPrefix(p, r.planRel+"/") && !holderTemp(p) {
			stray = append(stray, p)
		}
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
