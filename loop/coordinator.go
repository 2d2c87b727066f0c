package loop

import (
	"context"
	"sync"
	"time"

	"github.com/wiggum-dev/wiggum/internal/plan"
	"github.com/wiggum-dev/wiggum/worktree"
)

// landing is a finished story handed to the merge coordinator: its worker
// has gone on to its next story, and the worktree's lease - still held -
// travels with the landing until the worktree is removed.
type landing struct {
	w      *worktree.Worker
	story  *plan.Story
	done   bool
	queued time.Time
	// unused: made ahead for a story no worker started; only removed.
	unused bool
	// leave: its attempt passed and the run stopped before the commit
	// (SigningError): the worktree is left as it is, its lease let go,
	// for the next run's resume to commit and land (finishedThere).
	leave bool
	// untickedErr: it landed, and git would not commit its tick
	// (TickError); said after the landing.
	untickedErr error
}

// landings is the merge coordinator's queue. Worktree creations in this
// process go before landings: a creation starts an agent (throughput), a
// landing only publishes work already done (latency), so the coordinator
// takes the repository mutex only while no worker of this process is
// waiting for it to create a worktree, and lets go of it between two
// landings when one starts waiting.
type landings struct {
	mu       sync.Mutex
	cond     *sync.Cond
	queue    []landing
	creating int
	closed   bool
	// pending counts the landings put and not finished yet; reopened
	// counts those that gave the workers more to do (a story its worker's
	// agent added to the plan): a worker that finds nothing to pick
	// waits for the landings under way before it goes (waitIdle).
	pending  int
	reopened int
}

func newLandings() *landings {
	l := &landings{}
	l.cond = sync.NewCond(&l.mu)
	return l
}

func (l *landings) put(j landing) {
	l.mu.Lock()
	l.queue = append(l.queue, j)
	l.pending++
	l.mu.Unlock()
	l.cond.Broadcast()
}

// hold counts a landing made outside the queue (a shared run's, which
// lands through the server) as under way until its finish.
func (l *landings) hold() {
	l.mu.Lock()
	l.pending++
	l.mu.Unlock()
}

// finish marks a landing the coordinator popped, or one held, as over.
func (l *landings) finish() {
	l.mu.Lock()
	l.pending--
	l.mu.Unlock()
	l.cond.Broadcast()
}

// reopen says a landing gave the workers more to do.
func (l *landings) reopen() {
	l.mu.Lock()
	l.reopened++
	l.mu.Unlock()
	l.cond.Broadcast()
}

// generation is the count of reopening landings so far, for waitIdle.
func (l *landings) generation() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reopened
}

// waitIdle waits, for a worker that found no story to pick, until no
// landing is queued or under way (or ctx is done), and reports whether
// one reopened since generation gen: then the worker picks again. Before,
// the workers had all gone by then, and a story added at the last
// landings waited for the next run.
func (l *landings) waitIdle(ctx context.Context, gen int) bool {
	stop := context.AfterFunc(ctx, l.cond.Broadcast)
	defer stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	// Every landing over, not only the reopening one: that one's story
	// is in flight until its landing ends.
	for l.pending > 0 && ctx.Err() == nil {
		l.cond.Wait()
	}
	return l.reopened != gen && ctx.Err() == nil
}

// close tells the coordinator no landing will be added; it lands the queued
// ones and returns.
func (l *landings) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.cond.Broadcast()
}

// create brackets a worker's worktree creation.
func (l *landings) create(fn func()) {
	l.begin()
	defer l.end()
	fn()
}

func (l *landings) begin() {
	l.mu.Lock()
	l.creating++
	l.mu.Unlock()
}

func (l *landings) end() {
	l.mu.Lock()
	l.creating--
	l.mu.Unlock()
	l.cond.Broadcast()
}

// wait blocks until a landing may start (one is queued and no creation is
// waiting), and reports false once the queue is closed and empty.
// Creations are waited for at most maxYield - a worker that said it would
// create and then waits long (for a usage limit's reset, say) does not
// hold landings back - and then force says the next landing goes anyway.
func (l *landings) wait() (ok, force bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var deadline time.Time
	for {
		if len(l.queue) == 0 {
			if l.closed {
				return false, false
			}
			deadline = time.Time{}
			l.cond.Wait()
			continue
		}
		if l.creating == 0 {
			return true, false
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(maxYield)
			t := time.AfterFunc(maxYield, l.cond.Broadcast)
			defer t.Stop()
		} else if !time.Now().Before(deadline) {
			return true, true
		}
		l.cond.Wait()
	}
}

// maxYield bounds how long a queued landing gives way to creations.
const maxYield = 2 * time.Second

// pop takes the next landing for a coordinator that holds the repository
// mutex, or nil when there is none or a creation is waiting for the mutex
// (unless force).
func (l *landings) pop(force bool) *landing {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) == 0 || l.creating > 0 && !force {
		return nil
	}
	j := l.queue[0]
	l.queue = l.queue[1:]
	return &j
}

// coordinate is the merge coordinator: it lands queued stories one at a
// time, each under the repository mutex, taking the mutex once for as
// many landings as are queued, until the queue is closed and empty.
func (p *parallel) coordinate(ctx context.Context) {
	for {
		ok, force := p.lq.wait()
		if !ok {
			return
		}
		mu, err := worktree.LockRepo(ctx, p.r.st.Repo)
		if err != nil {
			// Nothing can land; let the leases go, keep every branch.
			for j := p.lq.pop(true); j != nil; j = p.lq.pop(true) {
				_ = j.w.Lease.Release()
				p.landed(j)
				p.lq.finish()
			}
			p.halt(err)
			continue
		}
		// Each story's worktree removal runs beside the next story's
		// merge: it touches only its own worktree, branch and checkpoint
		// ref, none of which a merge reads. Removals stay one at a time
		// (git worktree commands read each other's entries), and all end
		// before the mutex is let go.
		var removing chan struct{}
		moved := false
		for j := p.lq.pop(force); j != nil; j = p.lq.pop(false) {
			began := time.Now()
			m := p.mergeLocked(ctx, j)
			moved = moved || m != nil && !m.Already
			prev, done := removing, make(chan struct{})
			go func() {
				defer close(done)
				if prev != nil {
					<-prev
				}
				p.releaseLocked(ctx, j, m, began)
				p.landed(j)
				p.lq.finish()
			}()
			removing = done
		}
		if removing != nil {
			<-removing
		}
		mu.Unlock()
		if moved {
			// Once per hold, not per landing: the worktrees made
			// ahead move to the tip after the last of a burst.
			p.ah.landed()
		}
	}
}

// landed ends a story's life in this run once its landing is over: it may
// be picked again only if the plan still has it open (it is not: it was
// ticked, or is skipped).
func (p *parallel) landed(j *landing) {
	if !j.unused {
		p.r.endStory(j.story.ID, storyOutcome(j.done, p.skipped(j.story.ID)))
	}
	p.mu.Lock()
	delete(p.inflight, j.story.ID)
	p.mu.Unlock()
}

// creations combines the worktree creations of workers that want one at
// the same moment (they finish their stories together) into one
// worktree.CreateMany: one hold of the repository mutex, each worktree
// leased while git adds the next. Whoever finds no creation under way
// makes all those waiting, its own among them.
type creations struct {
	mu      sync.Mutex
	cond    *sync.Cond
	pending []*creation
	leading bool
}

type creation struct {
	req      worktree.Request
	w        *worktree.Worker
	err      error
	finished bool
}

func newCreations() *creations {
	c := &creations{}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (p *parallel) createWorktree(ctx context.Context, story string) (*worktree.Worker, error) {
	c := &creation{req: worktree.Request{Story: story, Target: p.target}}
	cr := p.cr
	cr.mu.Lock()
	defer cr.mu.Unlock()
	cr.pending = append(cr.pending, c)
	for !c.finished {
		if cr.leading {
			cr.cond.Wait()
			continue
		}
		cr.leading = true
		batch := cr.pending
		cr.pending = nil
		reqs := make([]worktree.Request, len(batch))
		for i, b := range batch {
			reqs[i] = b.req
		}
		go func() {
			worktree.CreateMany(ctx, p.r.st.Repo, reqs, p.r.opts.Command, func(i int, w *worktree.Worker, err error) {
				// Each worker goes as soon as its own worktree is leased.
				cr.mu.Lock()
				batch[i].w, batch[i].err, batch[i].finished = w, err, true
				cr.mu.Unlock()
				cr.cond.Broadcast()
			})
			cr.mu.Lock()
			cr.leading = false
			cr.mu.Unlock()
			cr.cond.Broadcast()
		}()
	}
	return c.w, c.err
}
