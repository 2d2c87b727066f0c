package loop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/plan"
	"github.com/wiggum-dev/wiggum/worktree"
)

// MaxWorkers bounds --workers: each worker is an agent and a worktree.
const MaxWorkers = 32

// parallel runs up to Options.Workers stories at once. Each story gets its
// own worktree, branch, lease and agent, and runs the serial loop's
// iterations there; a finished branch is merged into the target branch,
// and the story ticked in the main tree's plan, by the merge coordinator
// under the repository mutex - one story at a time, across processes.
type parallel struct {
	r      *runner // the main tree: agent lock, plan, committer, records
	target string  // the branch checked out in the main tree
	out    *syncWriter

	mu       sync.Mutex
	inflight map[string]bool
	skip     map[string]bool // skipped or unmerged: not picked again this run
	iter     int
	stalled  int
	stop     error    // why no new iteration starts (work left)
	failed   error    // a hard error
	unmerged []string // why each kept branch did not merge
	kept     []string // those branches
	sum      Summary
}

func runParallel(ctx context.Context, st *checkpoint.State, opts Options) (*Summary, error) {
	out := &syncWriter{w: opts.Out}
	r, err := start(ctx, st, opts, newDisplay(out, false, opts.Quiet, 0))
	if err != nil {
		return nil, err
	}
	defer r.lock.Release()
	if err := r.preflight(ctx); err != nil {
		return nil, err
	}
	target, err := st.Repo.Branch(ctx)
	if err != nil {
		return nil, fmt.Errorf("run: read branch: %w", err)
	}
	p := &parallel{r: r, target: target, out: out, inflight: map[string]bool{}, skip: map[string]bool{}}
	appendLine(r.logPath, fmt.Sprintf("\n## run %s · plan %s · agent %s · %d workers", r.started.UTC().Format(time.RFC3339), r.planRel, strings.Join(opts.Agent.Argv, " "), opts.Workers))
	r.event("run_start", planCounts(opts.Plan, map[string]any{"plan": r.planRel, "agent": opts.Agent.Argv, "pid": os.Getpid(), "workers": opts.Workers}))
	var wg sync.WaitGroup
	for i := range opts.Workers {
		wg.Go(func() {
			for {
				s := p.claim(ctx)
				if s == nil {
					return
				}
				p.work(ctx, s, i+1)
				p.mu.Lock()
				delete(p.inflight, s.ID)
				p.mu.Unlock()
			}
		})
	}
	wg.Wait()
	err = p.result(ctx)
	r.sum = p.sum
	for _, u := range p.unmerged {
		r.disp.printf("not merged: %s", u)
	}
	r.finish(err)
	return &r.sum, err
}

// claim picks the next open story nobody works on, or nil when there is
// none or the run is stopping.
func (p *parallel) claim(ctx context.Context) *plan.Story {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stop != nil || p.failed != nil || ctx.Err() != nil {
		return nil
	}
	stories, err := p.r.opts.Plan.Stories()
	if err != nil {
		p.failed = err
		return nil
	}
	busy := map[string]bool{}
	for id := range p.skip {
		busy[id] = true
	}
	for id := range p.inflight {
		busy[id] = true
	}
	s := plan.Next(stories, busy)
	if s == nil {
		return nil
	}
	p.inflight[s.ID] = true
	return s
}

// nextIter numbers the next iteration, or returns 0 when none may start.
func (p *parallel) nextIter() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stop != nil || p.failed != nil {
		return 0
	}
	if p.iter >= p.r.opts.MaxIter {
		p.stop = &StopError{Reason: fmt.Sprintf("stopped at the iteration cap (--max-iterations %d)", p.r.opts.MaxIter)}
		return 0
	}
	p.iter++
	p.sum.Iterations = p.iter
	return p.iter
}

func (p *parallel) halt(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var stop *StopError
	switch {
	case errors.As(err, &stop):
		if p.stop == nil {
			p.stop = err
		}
	case p.failed == nil:
		p.failed = err
	}
}

// work runs story's iterations in a fresh worktree, then lands or discards
// the branch.
func (p *parallel) work(ctx context.Context, story *plan.Story, worker int) {
	main := p.r.st.Repo
	w, err := worktree.Create(ctx, main, story.ID, p.target, p.r.opts.Command)
	if err != nil {
		if ctx.Err() == nil {
			p.halt(fmt.Errorf("run: %s: %w", story.ID, err))
		}
		return
	}
	wr := p.worker(w, story)
	wr.worker = worker
	done := false
	for !done {
		iter := p.nextIter()
		if iter == 0 {
			break
		}
		ok, err := wr.iteration(ctx, iter, story)
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				p.halt(err)
			}
			break
		}
		done = ok
		if done || ctx.Err() != nil {
			break
		}
		if wr.waited {
			wr.waited = false
			continue
		}
		if p.failedIteration() || wr.skip[story.ID] {
			break
		}
	}
	p.mu.Lock()
	p.sum.Backups = append(p.sum.Backups, wr.sum.Backups...)
	p.sum.Skipped = append(p.sum.Skipped, wr.sum.Skipped...)
	if wr.skip[story.ID] {
		p.skip[story.ID] = true
	}
	p.mu.Unlock()
	// A story committed before a signal is merged all the same.
	p.land(context.WithoutCancel(ctx), w, story, done)
}

// failedIteration counts an iteration that completed no story and reports
// whether the no-progress breaker tripped.
func (p *parallel) failedIteration() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled++
	if p.stalled >= p.r.opts.NoProgress && p.stop == nil {
		p.stop = &StopError{Reason: fmt.Sprintf("stopped: no story completed in %d iterations in a row (--no-progress %d)", p.stalled, p.r.opts.NoProgress)}
	}
	return p.stop != nil
}

// worker is a runner for one story in w: the iteration logic of the serial
// loop, acting on the worktree and recording into the main tree.
func (p *parallel) worker(w *worktree.Worker, story *plan.Story) *runner {
	prefix := &prefixWriter{out: p.out, prefix: "[" + story.ID + "] "}
	env := []string{checkpoint.SessionEnv + "=" + w.Lease.Holder.Session}
	return &runner{
		st: w.State, rec: p.r.st, opts: p.r.opts, lock: w.Lease, session: w.Lease.Holder.Session,
		disp: newDisplay(prefix, false, p.r.opts.Quiet, 0),
		// The plan is the coordinator's: an agent's edit to the
		// worktree's copy must not reach the branch and conflict.
		commit:  newCommitter(w.State.Repo, env, []string{p.r.planRel}),
		planRel: p.r.planRel, started: p.r.started, logPath: p.r.logPath,
		tries: map[string]int{}, skip: map[string]bool{}, coordinated: true,
	}
}

// land is the merge coordinator's step for one worker: under the
// repository mutex, merge its branch (when the story is done) and tick the
// story in the main tree's plan, then remove the worktree - still holding
// its lease - keeping any branch the target does not contain.
func (p *parallel) land(ctx context.Context, w *worktree.Worker, story *plan.Story, done bool) {
	main := p.r.st.Repo
	mu, err := worktree.LockRepo(ctx, main)
	if err != nil {
		_ = w.Lease.Release()
		p.halt(err)
		return
	}
	defer mu.Unlock()
	began := time.Now()
	var m *worktree.Merged
	if done {
		m = p.merge(ctx, w, story)
	}
	// The removal too is under the mutex: a pruner holding it must find
	// each worktree either whole or gone, never half removed.
	rem, err := w.Release(ctx, main)
	if err != nil {
		p.halt(fmt.Errorf("run: remove the worktree of %s: %w", story.ID, err))
		return
	}
	if rem.Backup != "" {
		p.r.disp.printf("  %s: uncommitted work in its worktree is saved in %s", story.ID, rem.Backup)
	}
	if m == nil {
		return
	}
	took := time.Since(began)
	p.mu.Lock()
	p.sum.MergeTime += took
	p.mu.Unlock()
	how := "merge commit " + m.Commit[:12]
	switch {
	case m.Already:
		how = "nothing new"
	case m.FastForward:
		how = "fast-forward to " + m.Commit[:12]
	}
	p.r.event("merged", map[string]any{"story": story.ID, "branch": w.Branch, "commit": m.Commit, "fast_forward": m.FastForward, "land_ms": float64(took.Microseconds()) / 1000})
	p.r.disp.printf("⇢ %s merged into %s (%s)", story.ID, strings.TrimPrefix(p.target, "refs/heads/"), how)
}

// merge merges w's branch and ticks story in the plan; nil when the branch
// could not land.
func (p *parallel) merge(ctx context.Context, w *worktree.Worker, story *plan.Story) *worktree.Merged {
	msg := fmt.Sprintf("Merge %s\n\nwiggum merged %s (branch %s).\n", commitMessage(story), story.ID, strings.TrimPrefix(w.Branch, "refs/heads/"))
	m, err := worktree.Merge(ctx, p.r.st.Repo, p.target, w.Branch, msg)
	var conflict *worktree.ConflictError
	var blocked *worktree.BlockedError
	switch {
	case errors.As(err, &conflict), errors.As(err, &blocked):
		p.mu.Lock()
		p.skip[story.ID] = true
		p.unmerged = append(p.unmerged, err.Error())
		p.kept = append(p.kept, strings.TrimPrefix(w.Branch, "refs/heads/"))
		p.mu.Unlock()
		fields := map[string]any{"story": story.ID, "branch": w.Branch, "error": err.Error()}
		if conflict != nil {
			fields["paths"] = conflict.Paths
		}
		p.r.event("merge_failed", fields)
		p.r.disp.printf("✘ %s", err)
		return nil
	case err != nil:
		p.halt(fmt.Errorf("run: merge %s: %w", story.ID, err))
		return nil
	}
	if err := p.r.opts.Plan.MarkDone(story.ID); err != nil {
		p.halt(fmt.Errorf("run: mark %s done: %w", story.ID, err))
		return nil
	}
	if err := worktree.RetryLocked(ctx, func() error { _, err := p.r.commitTick(ctx, story); return err }); err != nil {
		p.halt(fmt.Errorf("run: commit the plan with %s done: %w", story.ID, err))
		return nil
	}
	p.mu.Lock()
	p.stalled = 0
	p.sum.Completed = append(p.sum.Completed, story.ID)
	p.mu.Unlock()
	return m
}

func (p *parallel) result(ctx context.Context) error {
	stories, err := p.r.opts.Plan.Stories()
	if err == nil {
		p.sum.Left = plan.Open(stories)
	}
	switch {
	case ctx.Err() != nil:
		return context.Canceled
	case p.failed != nil:
		return p.failed
	case err != nil:
		return err
	}
	var why []string
	if p.stop != nil {
		why = append(why, p.stop.Error())
	}
	if n := len(p.unmerged); n > 0 {
		why = append(why, fmt.Sprintf("%d branch(es) could not be merged and are kept (%s)", n, strings.Join(p.kept, ", ")))
	}
	if n := len(p.sum.Skipped); n > 0 {
		why = append(why, fmt.Sprintf("%d story(ies) skipped after %d failed attempts each: %s", n, p.r.opts.Retries+1, strings.Join(p.sum.Skipped, ", ")))
	}
	if len(why) > 0 {
		return &StopError{Reason: strings.Join(why, "; ") + fmt.Sprintf("; %d story(ies) open", p.sum.Left)}
	}
	return nil
}

// syncWriter serialises whole writes from concurrent workers.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// prefixWriter marks each line with its worker's story.
type prefixWriter struct {
	out    *syncWriter
	prefix string
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	var buf bytes.Buffer
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if len(line) > 0 {
			buf.WriteString(p.prefix)
			buf.Write(line)
		}
	}
	if _, err := p.out.Write(buf.Bytes()); err != nil {
		return 0, err
	}
	return len(b), nil
}
