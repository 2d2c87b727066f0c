package loop

import (
	"context"
	"slices"
	"sync"

	"github.com/wiggum-dev/wiggum/internal/killpoint"
	"github.com/wiggum-dev/wiggum/internal/plan"
	"github.com/wiggum-dev/wiggum/worktree"
)

// ahead makes the worktrees of the next stories while the agents run, so a
// worker that hands a finished story over starts its next agent at once
// instead of waiting for git worktree add (and for the landings queued
// before it on the repository mutex). It keeps at most one ready worktree
// per worker; any worker takes the first one ready, so a story made ahead
// never waits for one particular worker. After each landing it brings the
// ready ones to the target's new tip, off the workers' path, so a story
// still starts from what has landed before it (worktree.Refresh).
//
// Nothing made ahead is unaccounted for: each worktree is leased from
// before a pruner can see it (worktree.CreateMany) and its story is in
// flight, so no other worker picks it; one no worker takes is removed when
// the run ends; one a SIGKILL leaves behind is a killed run's worktree like
// any other - its branch has no commit beyond its base, so the next run or
// `wiggum worktree prune` removes it, saves nothing, and the story is
// still open.
type ahead struct {
	workers int
	cancel  context.CancelFunc // stops the maker's waits
	done    chan struct{}      // closed when the maker has returned

	mu     sync.Mutex
	cond   *sync.Cond
	ready  []*made // made, in the order of their stories, not yet taken
	making int     // stories reserved or being made
	// exhausted: the plan has no free story left to make one for (none
	// becomes free again in this run but for a stop).
	exhausted bool
	closed    bool // the run ends: nothing more is made or moved
	moved     bool // the target moved since the ready ones were brought to it
}

// made is a worktree made ahead; while refreshing, the maker is moving it
// to the target's new tip and no worker may take it.
type made struct {
	started
	refreshing bool
}

// newAhead is the state of the worktrees made ahead, made before the merge
// coordinator starts (it tells of its landings); startAhead starts making
// them.
func newAhead(workers int) *ahead {
	a := &ahead{workers: workers, done: make(chan struct{})}
	a.cond = sync.NewCond(&a.mu)
	return a
}

// startAhead starts making worktrees ahead, once the first round's own
// worktrees (first) are made: those start agents now, these later.
func (p *parallel) startAhead(ctx context.Context, first []*started) {
	a := p.ah
	if a == nil {
		return
	}
	ctx, a.cancel = context.WithCancel(ctx)
	go func() {
		defer close(a.done)
		defer a.stop()
		for _, f := range first {
			<-f.ready
		}
		for p.makeAhead(ctx, a) {
		}
	}()
}

// landed tells the maker that the target moved: the worktrees ready now
// start from an older tip.
func (a *ahead) landed() {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.moved = true
	a.mu.Unlock()
	a.cond.Broadcast()
}

// makeAhead makes one batch - as many worktrees as there are workers
// without one ready - or, after a landing, brings the ready ones to the
// target's new tip. It reports false once nothing more is to be made.
func (p *parallel) makeAhead(ctx context.Context, a *ahead) bool {
	a.mu.Lock()
	for !a.closed && !a.moved && (a.exhausted || len(a.ready)+a.making >= a.workers) {
		a.cond.Wait()
	}
	if a.closed {
		a.mu.Unlock()
		return false
	}
	if a.moved {
		a.moved = false
		p.refreshAhead(a)
		a.mu.Unlock()
		return true
	}
	// Reserved before the stories are claimed: a worker that finds no
	// ready worktree waits for these rather than find the plan empty
	// (their stories in flight) and leave.
	want := a.workers - len(a.ready) - a.making
	a.making += want
	a.mu.Unlock()
	var stories []*plan.Story
	for range want {
		s := p.claim(ctx)
		if s == nil {
			break
		}
		stories = append(stories, s)
	}
	a.mu.Lock()
	a.making -= want - len(stories)
	if len(stories) == 0 {
		a.exhausted = true
	}
	a.mu.Unlock()
	a.cond.Broadcast()
	if len(stories) == 0 {
		return true
	}
	reqs := make([]worktree.Request, len(stories))
	for i, s := range stories {
		reqs[i] = worktree.Request{Story: s.ID, Target: p.target}
	}
	worktree.CreateMany(ctx, p.r.st.Repo, reqs, p.r.opts.Command, func(i int, w *worktree.Worker, err error) {
		if err == nil {
			killpoint.At("worktree-ahead")
		}
		a.mu.Lock()
		a.making--
		a.ready = append(a.ready, &made{started: started{story: stories[i], w: w, err: err}})
		a.mu.Unlock()
		a.cond.Broadcast()
	})
	return true
}

// refreshAhead brings each ready worktree to the target's tip, one at a
// time, off the workers' path: a worker takes one not being moved, and
// waits only when every ready one is. a.mu is held on entry and exit.
func (p *parallel) refreshAhead(a *ahead) {
	if !slices.ContainsFunc(a.ready, func(m *made) bool { return m.w != nil }) {
		return
	}
	a.mu.Unlock()
	tip, err := p.r.st.Repo.Line(context.Background(), "rev-parse", "--verify", "--quiet", p.target+"^{commit}")
	a.mu.Lock()
	if err != nil {
		p.r.disp.printf("  the worktrees made ahead stay where they were made: resolve %s: %v", p.target, err)
		return
	}
	for _, m := range append([]*made(nil), a.ready...) {
		// One a worker took meanwhile is its agent's now.
		if m.w == nil || !slices.Contains(a.ready, m) {
			continue
		}
		m.refreshing = true
		a.mu.Unlock()
		_, err := m.w.Refresh(context.Background(), tip)
		if err != nil {
			// Not a reason to stop: the story starts from the tip its
			// worktree was made at, as if nothing had landed since.
			p.r.disp.printf("  %s: %v; it starts from %s", m.story.ID, err, m.w.Base[:12])
		}
		a.mu.Lock()
		m.refreshing = false
		a.cond.Broadcast()
	}
}

// take gives a worker its next story: the first one made ahead and not
// being moved to the target's tip; else, when nothing is on its way, a
// story the worker claims and makes itself (w and err nil). A nil story:
// nothing is left to start.
func (p *parallel) take(ctx context.Context) (*plan.Story, *worktree.Worker, error) {
	a := p.ah
	if a == nil {
		return p.claim(ctx), nil, nil
	}
	if p.r.gate.wait(ctx) != nil {
		return nil, nil, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for !p.stopping(ctx) {
		for i, m := range a.ready {
			if !m.refreshing {
				a.ready = append(a.ready[:i:i], a.ready[i+1:]...)
				a.cond.Broadcast()
				return m.story, m.w, m.err
			}
		}
		if len(a.ready) == 0 && a.making == 0 {
			break
		}
		a.cond.Wait()
	}
	// Nothing is on its way: pick a story as before (nil when stopping),
	// still holding a.mu, so the maker cannot claim the last free story
	// between this look at it and this pick - and leave a worktree made
	// for it after every worker has gone.
	return p.pick(ctx), nil, nil
}

// stopping reports whether no new story may start.
func (p *parallel) stopping(ctx context.Context) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stop != nil || p.failed != nil || ctx.Err() != nil || p.r.noDispatch.Load()
}

// stop ends the making (a wait for a paused gate or for the repository
// mutex returns at once) and wakes the workers waiting for it.
func (a *ahead) stop() {
	if a.cancel != nil {
		a.cancel()
	}
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.cond.Broadcast()
}

// drain, once no worker takes any more, stops the making, waits for it,
// and hands every worktree nobody took to the merge coordinator to be
// removed; its story goes back to the plan's open ones.
func (p *parallel) drain(ctx context.Context) {
	a := p.ah
	if a == nil {
		return
	}
	a.stop()
	<-a.done
	for _, s := range a.ready {
		if s.w == nil {
			p.mu.Lock()
			delete(p.inflight, s.story.ID)
			p.mu.Unlock()
			continue
		}
		s.w.Settle(ctx)
		p.lq.put(landing{w: s.w, story: s.story, unused: true})
	}
	a.ready = nil
}
