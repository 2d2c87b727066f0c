package loop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wiggum-dev/wiggum/internal/killpoint"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/events"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/plan"
	"github.com/wiggum-dev/wiggum/internal/session"
	"github.com/wiggum-dev/wiggum/internal/telemetry"
	"github.com/wiggum-dev/wiggum/worktree"
)

// MaxWorkers bounds --workers: each worker is an agent and a worktree.
// Readers of the event log refuse a worker number past it.
const MaxWorkers = events.MaxWorkers

// parallel is the parallel driver: up to Options.Workers stories at once,
// each in its own worktree, branch, lease and agent, run by the shared
// executor; a finished branch is merged into the target branch, and the
// story ticked in the main tree's plan, by the merge coordinator under the
// repository mutex - one story at a time, across processes.
type parallel struct {
	r      *run   // the main tree: agent lock, plan, committer, records
	target string // the branch checked out in the main tree
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
	lost     []string // stories whose worktree lost its .git

	coord Coordinator        // a run shared with other machines; nil when local
	held  map[string]Claimed // the shared stories this process works on
	// sharedLandings are the shared stories landing now.
	sharedLandings sync.WaitGroup

	lq *landings  // finished stories waiting for the merge coordinator
	cr *creations // worktrees wanted at the same moment, made together
	ah *ahead     // worktrees made for the next stories; nil when none are
}

func runParallel(ctx context.Context, st *checkpoint.State, opts Options) (*Summary, error) {
	out := &syncWriter{w: opts.Out}
	r, err := open(ctx, st, opts, newDisplay(out, false, opts.Quiet, nil))
	if err != nil {
		return nil, err
	}
	defer r.close()
	// preflight read it, and refused a detached HEAD.
	target := r.branch
	p := &parallel{r: r, target: target, out: out, inflight: map[string]bool{}, skip: map[string]bool{}, lq: newLandings(), cr: newCreations()}
	r.reopen = p.lq.reopen
	if opts.Coordinator != nil {
		p.share(ctx, opts.Coordinator)
	}
	if p.coord == nil && opts.Workers > 1 {
		p.ah = newAhead(opts.Workers)
	}
	r.begin(opts.Workers)
	r.writeMainRun("")
	// The merge coordinator lands what workers finish while they go on
	// to their next stories; a signal stops the workers, not the
	// landing of a story committed before it.
	coordinated := make(chan struct{})
	go func() {
		defer close(coordinated)
		p.coordinate(context.WithoutCancel(ctx))
	}()
	p.landResumed(ctx)
	first := p.prepare(ctx, opts.Workers)
	// The first agents' supervisors start while git makes their worktrees.
	r.pool.Warm(len(first))
	p.startAhead(ctx, first)
	var wg sync.WaitGroup
	for i := range opts.Workers {
		wg.Go(func() {
			// next: this worker said, as it handed its last story over,
			// that it is about to create a worktree (landings.next).
			next := false
			if i < len(first) {
				<-first[i].ready
				next = p.work(ctx, first[i].story, i+1, first[i].w, first[i].err, false)
			}
			for {
				if next && !p.r.gate.open() {
					p.lq.end()
					next = false
				}
				gen := p.lq.generation()
				s, w, err := p.take(ctx)
				if s == nil {
					if next {
						p.lq.end()
						next = false
					}
					// A landing still under way may give it more.
					if p.lq.waitIdle(ctx, gen) {
						continue
					}
					return
				}
				next = p.work(ctx, s, i+1, w, err, next)
			}
		})
	}
	wg.Wait()
	p.drain(ctx)
	p.sharedLandings.Wait()
	p.lq.close()
	<-coordinated
	if p.coord != nil {
		p.follow(ctx)
	}
	err = p.result(ctx)
	if p.coord != nil {
		err = p.sharedResult(ctx, err)
	}
	for _, u := range p.unmerged {
		r.disp.printf("not merged: %s", u)
	}
	r.finish(ctx, err)
	return &r.sum, err
}

// claim picks the next open story nobody works on, or nil when there is
// none or the run is stopping.
func (p *parallel) claim(ctx context.Context) *plan.Story {
	if p.r.gate.wait(ctx) != nil {
		return nil
	}
	if p.coord != nil {
		return p.claimShared(ctx)
	}
	return p.pick(ctx)
}

// pick is claim past the usage-limit gate, for a run of this machine only.
func (p *parallel) pick(ctx context.Context) *plan.Story {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stop != nil || p.failed != nil || ctx.Err() != nil || p.r.noDispatch.Load() {
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
	for {
		s := plan.Next(stories, busy)
		if s == nil {
			return nil
		}
		if p.r.led.failed(s.ID) > p.r.opts.Retries || p.r.led.storyOver(s.ID) != "" {
			busy[s.ID], p.skip[s.ID] = true, true
			p.r.sum.Skipped = append(p.r.sum.Skipped, s.ID)
			continue
		}
		if why := p.r.led.runOver(); why != "" {
			if p.stop == nil {
				p.stop = p.r.budgetReached(why)
			}
			return nil
		}
		p.inflight[s.ID] = true
		return s
	}
}

// nextIter numbers the next iteration, or returns 0 when none may start.
func (p *parallel) nextIter(ctx context.Context) int {
	if p.r.gate.wait(ctx) != nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stop != nil || p.failed != nil || p.r.noDispatch.Load() {
		return 0
	}
	if why := p.r.led.runOver(); why != "" {
		p.stop = p.r.budgetReached(why)
		return 0
	}
	if p.r.capReached(p.iter) {
		p.stop = &StopError{Reason: fmt.Sprintf("stopped at the iteration cap (--max-iterations %d)", p.r.opts.MaxIter)}
		return 0
	}
	p.iter++
	p.r.sum.Iterations = p.iter
	return p.r.iterBase + p.iter
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

// started is a first story with the worktree made for it at start-up.
type started struct {
	story *plan.Story
	ready chan struct{} // closed once w or err is set
	w     *worktree.Worker
	err   error
}

// prepare claims the first story of each worker and makes their worktrees
// together, in one hold of the repository mutex, instead of one worker
// after the other; each worker starts as soon as its own is leased. A run
// shared with other machines starts each on its own.
func (p *parallel) prepare(ctx context.Context, workers int) []*started {
	if p.coord != nil || workers < 2 {
		return nil
	}
	var first []*started
	var reqs []worktree.Request
	for range workers {
		s := p.claim(ctx)
		if s == nil {
			break
		}
		first = append(first, &started{story: s, ready: make(chan struct{})})
		reqs = append(reqs, worktree.Request{Story: s.ID, Target: p.target})
	}
	if len(reqs) == 0 {
		return nil
	}
	p.lq.begin()
	go func() {
		defer p.lq.end()
		worktree.CreateMany(ctx, p.r.st.Repo, reqs, p.r.opts.Command, func(i int, w *worktree.Worker, err error) {
			first[i].w, first[i].err = w, err
			close(first[i].ready)
		})
	}()
	return first
}

// work runs story's attempts in a fresh worktree - w, made beforehand, or
// one it makes - then hands the worktree to the merge coordinator, which
// lands or discards the branch; a story shared with other machines lands
// here.
//
// begun says the worker already counts as creating a worktree (it said so
// when it handed its last story over, so that the coordinator, woken by
// that hand-over, did not take the mutex from under its next creation);
// work reports whether it leaves such a creation begun for the next call.
func (p *parallel) work(ctx context.Context, story *plan.Story, worker int, w *worktree.Worker, err error, begun bool) bool {
	main := p.r.st.Repo
	held, start := p.heldClaim(story.ID)
	newWorktree := func() (*worktree.Worker, error) {
		if start == "" {
			return p.createWorktree(ctx, story.ID)
		}
		return worktree.CreateAt(ctx, main, story.ID, p.target, start, p.r.opts.Command)
	}
	if w == nil && err == nil {
		create := func() { w, err = newWorktree() }
		if begun {
			create()
			p.lq.end()
		} else {
			p.lq.create(create)
		}
	} else if begun {
		p.lq.end()
	}
	if err != nil {
		if held != nil {
			p.giveBack(ctx, held)
		}
		if ctx.Err() == nil {
			p.halt(p.noWorktree(story.ID, err))
		}
		p.mu.Lock()
		delete(p.inflight, story.ID)
		p.mu.Unlock()
		return false
	}
	killpoint.At("worktree-created")
	for _, n := range w.Notes {
		p.r.disp.printf("  %s: %s", story.ID, n)
	}
	ex := p.executor(w, story)
	ex.worker = worker
	// A shared story stops when another machine takes its claim over.
	sctx, unshare := p.storyContext(ctx, held, w, ex)
	defer unshare()
	done, leave := false, false
	for !done {
		iter := p.nextIter(ctx)
		if iter == 0 {
			break
		}
		res, err := ex.attempt(sctx, iter, story)
		if ex.setAside {
			// Its worktree is gone (putAside): the story goes on, or
			// lands unfinished, in a new one.
			var cerr error
			p.lq.create(func() { w, cerr = newWorktree() })
			if cerr != nil {
				if held != nil {
					p.giveBack(ctx, held)
				}
				if ctx.Err() == nil {
					p.halt(p.noWorktree(story.ID, fmt.Errorf("a new worktree for its next attempt: %w", cerr)))
				}
				p.landed(&landing{story: story})
				return false
			}
			keep := ex.keep
			ex = p.executor(w, story)
			ex.worker, ex.keep = worker, keep
			if held != nil {
				held.Follow(w.Branch)
			}
		}
		if err != nil {
			var lost *LostGitError
			pw := stoppedUncommitted(err)
			switch {
			case errors.As(err, &lost):
				p.lostGit(lost)
			case pw != nil:
				// A shared story's worktree goes with its claim.
				leave = held == nil
				pw.Worktree, pw.Kept = w.Path, leave
				p.halt(err)
			case !errors.Is(err, context.Canceled):
				p.halt(err)
			}
			break
		}
		done = res.done
		if done || sctx.Err() != nil {
			break
		}
		if res.limit != nil {
			if err := p.r.limited(ctx, res); err != nil {
				if !errors.Is(err, context.Canceled) {
					p.halt(err)
				}
				break
			}
			continue
		}
		if res.skipped {
			p.mu.Lock()
			p.skip[story.ID] = true
			p.r.sum.Skipped = append(p.r.sum.Skipped, story.ID)
			p.mu.Unlock()
			p.failedIteration()
			break
		}
		if p.failedIteration() {
			break
		}
	}
	// A story committed before a signal is merged all the same.
	j := &landing{w: w, story: story, done: done, queued: time.Now(), leave: leave}
	if held == nil {
		w.Settle(ctx)
		// The worker goes on to its next story's worktree at once: it
		// counts as creating before the coordinator hears of this
		// landing, unless a usage limit holds the workers back.
		next := p.r.gate.open()
		if next {
			p.lq.begin()
		}
		p.lq.put(*j)
		return next
	}
	// A shared story lands while its worker goes on to the next one
	// (claimed ahead): a landing's round trips, and its retries when
	// other machines land first, are not between two agents.
	p.lq.hold()
	p.sharedLandings.Go(func() {
		defer p.lq.finish()
		p.landShared(context.WithoutCancel(ctx), w, story, done, held)
		p.landed(j)
	})
	return false
}

// noWorktree is the run-stopping error of a worktree that could not be
// made for story: a NoRoomError when the disk is full.
func (p *parallel) noWorktree(story string, err error) error {
	if DiskFull(err) {
		return &NoRoomError{Story: story, Dir: filepath.Join(p.r.st.Repo.Root, filepath.FromSlash(worktree.Dir)), Err: err}
	}
	return fmt.Errorf("run: %s: %w", story, err)
}

// lostGit fails the story whose worktree lost its .git, and only that
// story: it is not picked again in this run and stays open; its worktree
// goes to the coordinator like any unfinished one, whose removal saves its
// files under refs/wiggum/backup/ (worktree.Release).
func (p *parallel) lostGit(lost *LostGitError) {
	p.mu.Lock()
	p.skip[lost.Story] = true
	p.lost = append(p.lost, lost.Story)
	p.mu.Unlock()
	p.r.event("worktree_lost", map[string]any{"story": lost.Story, "worktree": lost.Path, "error": lost.Error()})
	p.r.disp.printf("✘ %s", lost)
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

// executor runs story's attempts in w, recording into the main tree.
func (p *parallel) executor(w *worktree.Worker, story *plan.Story) *executor {
	prefix := &prefixWriter{out: p.out, prefix: "[" + story.ID + "] "}
	env := []string{layout.SessionEnv + "=" + w.Lease.Holder.Session}
	ex := &executor{
		run: p.r, st: w.State, lock: w.Lease, session: w.Lease.Holder.Session,
		disp: newDisplay(prefix, false, p.r.opts.Quiet, nil),
		// The plan is the coordinator's: an agent's edit to the
		// worktree's copy must not reach the branch and conflict.
		commit:   p.r.newCommitter(w.State.Repo, env, []string{p.r.planRel}),
		worktree: w.Path, branch: w.Branch,
	}
	if w.TakeClean() {
		ex.cleanHead = w.Base
	}
	ex.aside = func(ctx context.Context, why string) ([]string, error) {
		return w.SetAside(ctx, p.r.st.Repo, why)
	}
	return ex
}

// mergeLocked is the first half of the merge coordinator's step for one
// story, under the repository mutex the caller holds: merge its branch
// (when the story is done) and tick the story in the main tree's plan.
// nil when nothing merged.
func (p *parallel) mergeLocked(ctx context.Context, j *landing) *worktree.Merged {
	if !j.done {
		return nil
	}
	m, unticked := p.merge(ctx, j.w, j.story)
	j.untickedErr = unticked
	if m != nil {
		j.w.Landed(m.Tip)
	}
	return m
}

// releaseLocked is the second half, still under the mutex: remove the
// worktree - still holding its lease - keeping any branch the target does
// not contain, and report the landing. It touches only the story's own
// worktree and branch, so it may run beside the next story's merge.
func (p *parallel) releaseLocked(ctx context.Context, j *landing, m *worktree.Merged, began time.Time) {
	w, story := j.w, j.story
	if j.leave {
		_ = w.Lease.Release()
		p.r.disp.printf("  %s: its worktree %s is left as it is, for the next run to commit and land", story.ID, relPath(p.r.st.Repo.Root, w.Path))
		return
	}
	// The removal too is under the mutex: a pruner holding it must find
	// each worktree either whole or gone, never half removed.
	rem, err := w.Release(ctx, p.r.st.Repo)
	if err != nil {
		p.halt(fmt.Errorf("run: remove the worktree of %s: %w", story.ID, err))
		return
	}
	if rem.Backup != "" {
		p.r.disp.printf("  %s: uncommitted work in its worktree is saved in %s", story.ID, rem.Backup)
	}
	for _, b := range rem.Submodules {
		p.r.disp.printf("  %s: %s", story.ID, b)
	}
	if m == nil {
		return
	}
	if !m.Already {
		// After the removal, which saved the story's submodule commits
		// in the main tree's checkouts; beside the next story's merge,
		// whose read-tree leaves submodule checkouts alone.
		for _, note := range worktree.FollowSubmodules(ctx, p.r.st.Repo, p.target, m.Old, m.Commit) {
			p.r.disp.printf("  %s: %s", story.ID, note)
		}
	}
	took := time.Since(began)
	p.r.sumMu.Lock()
	p.r.sum.MergeTime += took
	p.r.sumMu.Unlock()
	how := mergedHow(m)
	fields := map[string]any{"story": story.ID, "branch": w.Branch, "commit": m.Commit, "fast_forward": m.FastForward,
		"land_ms": ms(took), "queued_ms": ms(began.Sub(j.queued))}
	if len(m.Appended) > 0 {
		fields["appended"] = m.Appended
	}
	p.r.event("merged", fields)
	p.r.disp.printf("⇢ %s merged into %s (%s)", story.ID, strings.TrimPrefix(p.target, "refs/heads/"), how)
	if j.untickedErr != nil {
		p.r.disp.printf("✘ %s: git would not commit its tick in %s (%s); the tick is left in the plan, uncommitted, and the run stops", story.ID, p.r.planRel, oneLine(signingWords(j.untickedErr), 300))
	}
}

// tickMerged ticks story, whose branch merged into the target at commit,
// in the main tree's plan, commits the tick, and records the landing in
// the journal.
func (r *run) tickMerged(ctx context.Context, story *plan.Story, branch, commit string) error {
	r.addStoriesOf(story.ID)
	if err := r.opts.Plan.MarkDone(story.ID); err != nil {
		return fmt.Errorf("run: mark %s done: %w", story.ID, err)
	}
	killpoint.At("merge-ticked")
	// Another git holding the index for a moment is waited out by each
	// of the commit's git commands.
	if _, err := r.commitTick(ctx, story); err != nil {
		// The landing stands: the journal says so, for the resume to
		// tick the story again and commit it, never to do it again.
		_ = r.led.record(journalRec{T: "merge", Story: story.ID, Branch: branch, Commit: commit}, true)
		return r.tickRefused(ctx, story, commit, err)
	}
	killpoint.At("land-ticked")
	_ = r.led.record(journalRec{T: "merge", Story: story.ID, Branch: branch, Commit: commit}, false)
	return nil
}

// mergedHow says how a merge landed.
func mergedHow(m *worktree.Merged) string {
	how := "merge commit " + m.Commit[:12]
	switch {
	case m.Already:
		how = "nothing new"
	case m.FastForward:
		how = "fast-forward to " + m.Commit[:12]
	}
	if len(m.Appended) > 0 {
		how += "; " + strings.Join(m.Appended, ", ") + ": both sides added to the end, both kept"
	}
	return how
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// merge merges w's branch and ticks story in the plan; nil when the branch
// could not land.
func (p *parallel) merge(ctx context.Context, w *worktree.Worker, story *plan.Story) (*worktree.Merged, error) {
	msg := fmt.Sprintf("Merge %s\n\nwiggum merged %s (branch %s).\n", p.r.msg.story(story), story.ID, strings.TrimPrefix(w.Branch, "refs/heads/"))
	sp := p.r.storySpan(story).Start(telemetry.SpanMerge, telemetry.Attrs{telemetry.AttrStory: story.ID, "wiggum.branch": w.Branch})
	m, err := worktree.Merge(ctx, p.r.st.Repo, p.target, w.Branch, msg)
	if err != nil {
		sp.End(telemetry.Attrs{telemetry.AttrOutcome: "not merged"}, err.Error())
	} else {
		sp.End(telemetry.Attrs{telemetry.AttrOutcome: "merged", "wiggum.commit": m.Commit, "wiggum.fast_forward": m.FastForward}, "")
	}
	var conflict *worktree.ConflictError
	var blocked *worktree.BlockedError
	switch {
	case errors.As(err, &conflict) && p.retryConflict(ctx, w.Branch, story, conflict):
		return nil, nil
	case errors.As(err, &conflict), errors.As(err, &blocked):
		p.mu.Lock()
		p.skip[story.ID] = true
		p.unmerged = append(p.unmerged, err.Error())
		p.kept = append(p.kept, strings.TrimPrefix(w.Branch, "refs/heads/"))
		p.mu.Unlock()
		p.r.keptUnmerged(story.ID, w.Branch)
		fields := map[string]any{"story": story.ID, "branch": w.Branch, "error": err.Error()}
		if conflict != nil {
			fields["paths"] = conflict.Paths
		}
		p.r.event("merge_failed", fields)
		p.r.disp.printf("✘ %s", err)
		if err := p.markKept(ctx, w.Branch, story); err != nil {
			p.r.disp.printf("  %s: %v", strings.TrimPrefix(w.Branch, "refs/heads/"), err)
		}
		return nil, nil
	case err != nil:
		p.halt(fmt.Errorf("run: merge %s: %w", story.ID, err))
		return nil, nil
	}
	p.settleRetried(ctx, story)
	if err := p.r.tickMerged(ctx, story, w.Branch, m.Commit); err != nil {
		// Landed all the same: said as a landing, and the run stops.
		p.halt(err)
		return m, err
	}
	p.mu.Lock()
	p.stalled = 0
	p.mu.Unlock()
	return m, nil
}

func (p *parallel) result(ctx context.Context) error {
	stories, err := p.r.opts.Plan.Stories()
	if err == nil {
		p.r.sum.Left = plan.Open(stories)
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
		// A reached budget is said with what the run spent in the end:
		// the attempts running then have finished since.
		var hit *budgetHit
		if now := p.r.led.runOver(); now != "" && errors.As(p.stop, &hit) {
			why = append(why, budgetReason(now))
		} else {
			why = append(why, p.stop.Error())
		}
	}
	if n := len(p.unmerged); n > 0 {
		why = append(why, fmt.Sprintf("%d branch(es) could not be merged and are kept (%s)", n, strings.Join(p.kept, ", ")))
	}
	p.r.lookMu.Lock()
	if n := len(p.r.toLand); n > 0 {
		why = append(why, fmt.Sprintf("%d finished story(ies) not landed, kept for the next run to land (%s)", n, strings.Join(p.r.toLand, ", ")))
	}
	p.r.lookMu.Unlock()
	if n := len(p.lost); n > 0 {
		why = append(why, fmt.Sprintf("%d story(ies) whose worktree lost its .git or was removed (%s): their files are saved under refs/wiggum/backup/, and they stay open", n, strings.Join(p.lost, ", ")))
	}
	if n := len(p.r.sum.Skipped); n > 0 {
		why = append(why, fmt.Sprintf("%d story(ies) skipped (failed attempts, budget, or a kept branch that does not merge): %s", n, strings.Join(p.r.sum.Skipped, ", ")))
	}
	var lim *limitStop
	if errors.As(p.stop, &lim) && len(p.unmerged) == 0 {
		return p.stop
	}
	if len(why) > 0 {
		return &StopError{Reason: strings.Join(why, "; ") + fmt.Sprintf("; %d story(ies) open", p.r.sum.Left)}
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

// markKept makes sure a branch kept for the person to resolve holds a
// commit of its story's message, which is how the next run knows it for
// the story's (landKept): an agent that committed all its work itself
// left none - nothing was left for wiggum to commit - and the next run had
// an agent do the story again beside the branch, resolved or not, which
// then stayed behind for good. The marker is an empty commit on top.
func (p *parallel) markKept(ctx context.Context, branch string, story *plan.Story) error {
	repo := p.r.st.Repo
	msg := p.r.msg.story(story)
	subject := firstLine(msg)
	subjects, err := repo.Run(ctx, "log", "--format=%s", p.target+".."+branch, "--")
	if err != nil {
		return err
	}
	if slices.Contains(strings.Split(subjects, "\n"), subject) {
		return nil
	}
	tip, err := repo.Line(ctx, "rev-parse", "--verify", branch+"^{commit}")
	if err != nil {
		return err
	}
	tree, err := repo.Line(ctx, "rev-parse", tip+"^{tree}")
	if err != nil {
		return err
	}
	marker, err := repo.CommitTree(ctx, tree, []string{tip}, msg, repo.Sign)
	if err != nil {
		return fmt.Errorf("mark it with %s's message: %w", story.ID, err)
	}
	_, err = repo.Run(ctx, "update-ref", "-m", "wiggum: mark the kept branch with its story's message", branch, marker, tip)
	return err
}

// retryConflict gives story another attempt when its finished branch
// conflicts with what landed on the target meanwhile (--retry-conflicts)
// and --retries leaves it one: the branch is kept, as always, and marked
// with the story's message (conflictRetry says the rest). It reports
// false - the branch kept, the story left open for the person -
// otherwise. (Not in a run shared with other machines.)
func (p *parallel) retryConflict(ctx context.Context, branch string, story *plan.Story, c *worktree.ConflictError) bool {
	r := p.r
	if !r.mayRetryConflict(story.ID, branch) || p.coord != nil {
		return false
	}
	if err := p.markKept(ctx, branch, story); err != nil {
		return false
	}
	r.conflictRetry(story, branch, c)
	r.reopen()
	return true
}

// mayRetryConflict reports whether the conflict of story id's finished
// branch gives it another attempt: --retry-conflicts, a parallel run, an
// attempt left - the one it counted already, when a resume finds the
// branch it kept conflicting still.
func (r *run) mayRetryConflict(id, branch string) bool {
	if !r.opts.RetryConflicts || r.opts.Workers <= 1 {
		return false
	}
	if r.led.counted(id, branch) {
		return r.led.failed(id) <= r.opts.Retries
	}
	return r.led.failed(id) < r.opts.Retries
}

// conflictRetry records that story's finished branch, kept, conflicts
// with the target, and that the story goes on: the conflict counts as a
// failed attempt, and the next attempt's prompt says which branch to
// merge in and where it conflicts; the branch is settled when the story
// lands (settleRetried).
func (r *run) conflictRetry(story *plan.Story, branch string, c *worktree.ConflictError) {
	short := strings.TrimPrefix(branch, "refs/heads/")
	target := strings.TrimPrefix(r.branch, "refs/heads/")
	where := strings.Join(c.Paths, ", ")
	if !r.led.counted(story.ID, branch) {
		// Once a branch: a resume finding it conflicting again has the
		// record and the prompt's failure already.
		r.conflictCounted(story, branch, short, target, where)
	}
	r.addedMu.Lock()
	if r.retried == nil {
		r.retried = map[string][]string{}
	}
	r.retried[story.ID] = append(r.retried[story.ID], branch)
	r.addedMu.Unlock()
	// Not done after all: counted when its next attempt is.
	r.uncount(story.ID)
	r.event("merge_failed", map[string]any{"story": story.ID, "branch": branch, "error": c.Error(), "paths": c.Paths, "retry": true})
	r.disp.printf("✘ %s: %s conflicts with %s in %s; the branch is kept, and %s gets another attempt on %s as it is now, told to merge it in (--retry-conflicts)", story.ID, short, target, where, story.ID, target)
}

// conflictCounted records, once for the kept branch, that its conflict
// counts as a failed attempt of story, and the failure the next attempt's
// prompt gives its agent.
func (r *run) conflictCounted(story *plan.Story, branch, short, target, where string) {
	_ = r.led.record(journalRec{T: "unmerged", Story: story.ID, Branch: branch, Note: "conflicts with " + target + " in " + where}, true)
	_ = session.AppendFailure(r.st, session.Failure{Time: time.Now().UTC(), Story: story.ID, Source: "merge", Command: "git merge " + short,
		Output: fmt.Sprintf("The previous attempt finished this story, and its work is on the branch %s, but it could not land: it conflicts with work that landed on %s meanwhile, in %s. "+
			"Bring that work in - run `git merge %s`, resolve the conflicts so that both changes do what they meant to, and commit - then finish and check the story as usual; or redo it on the code as it is now.", short, target, where, short)})
}

// settleRetried, as story lands, deletes the kept branches of its earlier
// attempts that conflicted (retryConflict): one the landing holds - its
// agent merged it in - is deleted; one it does not is saved under
// refs/wiggum/backup/ first. Left as branches, the next run would land
// them again as the story's work.
func (p *parallel) settleRetried(ctx context.Context, story *plan.Story) {
	p.r.addedMu.Lock()
	kept := p.r.retried[story.ID]
	delete(p.r.retried, story.ID)
	p.r.addedMu.Unlock()
	repo := p.r.st.Repo
	for _, b := range kept {
		short := strings.TrimPrefix(b, "refs/heads/")
		tip, err := repo.Line(ctx, "rev-parse", "--verify", "-q", b+"^{commit}")
		if err != nil {
			continue
		}
		saved := ""
		if in, _ := repo.OK(ctx, "merge-base", "--is-ancestor", tip, p.target); !in {
			if saved, err = p.r.st.BackupCommit(ctx, tip); err != nil {
				p.r.disp.printf("  %s: %s, its earlier attempt's branch, is kept: it could not be saved (%v)", story.ID, short, err)
				continue
			}
		}
		if _, err := repo.Run(ctx, "update-ref", "-d", b, tip); err != nil {
			p.r.disp.printf("  %s: %s, its earlier attempt's branch, could not be deleted: %v", story.ID, short, err)
			continue
		}
		if saved == "" {
			p.r.disp.printf("  %s: %s, its earlier attempt's branch, is in %s now (its agent merged it): deleted", story.ID, short, strings.TrimPrefix(p.target, "refs/heads/"))
		} else {
			p.r.disp.printf("  %s: %s, its earlier attempt's branch, was redone rather than merged in: saved in %s and deleted", story.ID, short, saved)
		}
	}
}
