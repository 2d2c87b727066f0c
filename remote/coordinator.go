package remote

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/plan"
	"github.com/wiggum-dev/wiggum/worktree"
)

// Coordinator is the shared side of `wiggum run --remote`: it claims
// stories for one process's workers and lands them, with the plan read
// from the server's target branch.
type Coordinator struct {
	R       *Remote
	Main    *git.Repo // the main working tree, on Target
	Target  string    // refs/heads/<name>
	PlanRel string
	// Poll is how often a worker with nothing to claim looks again while
	// other machines hold the open stories (one may die).
	Poll time.Duration

	// Ahead makes Claim claim the next story in the background as soon as
	// it hands one out, so that a worker finishing its story finds the
	// next one claimed (the claim's round trips off the critical path).
	// Only while the plan has at least as many unclaimed stories as
	// machines at work (see spare): at the tail a story waits for no
	// machine that is busy.
	Ahead bool
	// Ride makes a claim ahead ride along in the push of a landing of
	// this process when one is about to push (a story whose work ended,
	// see Ended): one push then lands a story and claims the next.
	Ride bool
	// OnError hears of renewals that failed (and will be retried).
	OnError func(error)
	// OnReadyLanded hears of a story this process landed from another
	// process's finished work (its claim said ready, and its holder
	// could no longer land it), without running an agent on it.
	OnReadyLanded func(from *Claim, l *Landed)
	// OnKept hears of a story landed without its branch on the server,
	// which someone not holding the claim moved to commits the landing
	// does not hold: the branch is left there (Landed.Kept), theirs.
	OnKept func(story, branch string, l *Landed)
	// OnWait hears that a worker waits, every open story it may take
	// being claimed by other machines (whose claims it lists, as far as
	// the server said): once per change of who holds what, not on every
	// look again.
	OnWait func(held []*Claim)

	mu      sync.Mutex
	mine    map[string]bool // stories this process is claiming or holds
	waiting bool            // one worker already waits for others' stories
	// heldBy: the other machines' claims the last pass that found only
	// those met; told is what OnWait last heard, as a key.
	heldBy []*Claim
	told   string
	ahead  *ahead // the claim made ahead, in flight or made
	// ending holds the stories whose work ended and whose landing or
	// release has not: a claim ahead waits for their landing (want).
	ending map[*Held]chan struct{}
	// over holds the stories that stopped ending (landed, released or
	// lost), so that an Ended that comes late does not count them.
	over map[*Held]bool
	want *want // the claim ahead waiting to ride along in a landing
	// landMu makes this process's landings take turns (two at once would
	// build on the same tip and one would lose the race to the other);
	// the one whose turn it is lands every story queued in landQ.
	landMu sync.Mutex
	landQ  []*landReq
}

// landReq is a story waiting for its turn to land.
type landReq struct {
	m    *Member
	done chan struct{}
}

// ahead is a claim made ahead of the Claim that hands it out.
type ahead struct {
	done  chan struct{} // closed when the attempt ended
	h     *Held         // nil when nothing was claimed
	story plan.Story
	w     *want // the landing it waits to ride along in; nil: none
}

// want is a claim ahead offered to the landings of this process, to ride
// along in one's push.
type want struct {
	skip  map[string]bool
	began time.Time
	done  chan struct{} // closed when resolved
	// boarded: a landing is pushing with it now.
	boarded bool
	// Once resolved: h is the claim made with a landing; otherwise
	// alone says whether to claim ahead with a push of its own (no
	// landing took it, or its claim was refused or failed) rather than
	// not at all (nothing is spare to claim ahead).
	h        *Held
	story    plan.Story
	alone    bool
	resolved bool
	prep     time.Duration // the rider's own work: its view, its commit
}

// DivergedError is a local target branch with commits the server lacks:
// a shared run would never land them, so it refuses to start.
type DivergedError struct{ Target, Remote string }

func (e *DivergedError) Error() string {
	t := strings.TrimPrefix(e.Target, "refs/heads/")
	return fmt.Sprintf("run: the local %s has commits that %s/%s lacks; push them (git push %s %s) if they belong there, or - when the server's history was rewritten on purpose (a commit removed) - reset to the server's (git fetch %s, then git reset --keep %s/%s) before a shared run", t, e.Remote, t, e.Remote, t, e.Remote, e.Remote, t)
}

// NewCoordinator fetches the shared state and checks that the local target
// can follow the server's and that the plan is on it.
func NewCoordinator(ctx context.Context, r *Remote, main *git.Repo, target, planRel string) (*Coordinator, error) {
	v, err := r.Fetch(ctx, target)
	if err != nil {
		return nil, err
	}
	ok, err := main.OK(ctx, "merge-base", "--is-ancestor", target, v.Tip)
	if err != nil {
		return nil, fmt.Errorf("run: compare %s with the server's: %w", target, err)
	}
	if !ok {
		return nil, &DivergedError{Target: target, Remote: r.Name}
	}
	if _, err := r.PlanAt(ctx, v.Tip, planRel); err != nil {
		return nil, &BadRemoteError{Msg: err.Error()}
	}
	// Story branches are wiggum/<story>: a branch named wiggum on the
	// server refused every one of them ("cannot lock ref") mid-run.
	clash := strings.TrimSuffix(BranchPrefix, "/")
	now, err := r.lsRemote(ctx, "look for a branch named wiggum", []update{{dst: clash}})
	if err != nil {
		return nil, err
	}
	if now[clash] != "" {
		return nil, &BadRemoteError{Msg: fmt.Sprintf("run: %s has a branch named wiggum (%s); the story branches of a shared run are wiggum/<story> there, and git cannot have both: rename it on the server (git push %s %s:NEW-NAME :%s), then run again", r.Name, clash, r.Name, clash, clash)}
	}
	// At the end of a run every machine but the last to land waits here
	// for the others' last landings: what it waits past one is wall time
	// of the whole fleet (150 ms rather than 300 cut 0.1-0.2 s of a
	// 4-machine run's tail), for a few fetches more per waiting machine.
	poll := min(max(r.Lease/8, 100*time.Millisecond), 150*time.Millisecond)
	main.Sign = r.Repo.Sign
	return &Coordinator{R: r, Main: main, Target: target, PlanRel: planRel, Poll: poll, mine: map[string]bool{},
		ending: map[*Held]chan struct{}{}, over: map[*Held]bool{}}, nil
}

// Claim claims an open story (in the server's plan) that is not in busy
// and that no other machine holds live, taking over claims whose lease ran
// out. When the only open stories are held by other machines, one worker
// per process waits for them (they may land, or die and go stale); the
// others, and that one when nothing is left, get nil.
func (c *Coordinator) Claim(ctx context.Context, busy map[string]bool) (*Held, plan.Story, error) {
	began := time.Now()
	h, story, err := c.claim(ctx, busy)
	if h != nil {
		if h.Spent == 0 {
			h.Spent = time.Since(began)
		}
		h.Keep(c.OnError)
		c.claimAhead(ctx, busy, story.ID)
	}
	return h, story, err
}

func (c *Coordinator) claim(ctx context.Context, busy map[string]bool) (*Held, plan.Story, error) {
	if h, story := c.takeAhead(ctx, busy); h != nil {
		return h, story, nil
	}
	// The first pass may read what this clone last saw of the server (its
	// last fetch, and the target its own landing left); any other, and
	// the first after a view that was wrong, fetches.
	reuse := c.R.claimGuess.try()
	for {
		h, story, next, err := c.tryClaim(ctx, busy, reuse, false)
		if reuse && next == lookAgain && h == nil && err == nil {
			c.R.claimGuess.missed()
		} else if reuse && h != nil && !h.Moved {
			c.R.claimGuess.hit()
		}
		reuse = false
		switch {
		case h != nil || err != nil:
			return h, story, err
		case next == lookAgain:
			continue
		case next == nothingLeft:
			return nil, plan.Story{}, nil
		}
		c.mu.Lock()
		if c.waiting {
			c.mu.Unlock()
			return nil, plan.Story{}, nil
		}
		c.waiting = true
		held, key := c.heldBy, waitKey(c.heldBy)
		tell := c.OnWait != nil && key != c.told
		c.told = key
		c.mu.Unlock()
		if tell {
			c.OnWait(held)
		}
		select {
		case <-ctx.Done():
		case <-time.After(c.Poll):
		}
		c.mu.Lock()
		c.waiting = false
		c.mu.Unlock()
		if ctx.Err() != nil {
			return nil, plan.Story{}, nil
		}
	}
}

// claimAhead starts claiming the story after just (handed out now) in the
// background, unless one is claimed ahead already.
func (c *Coordinator) claimAhead(ctx context.Context, busy map[string]bool, just string) {
	if !c.Ahead {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ahead != nil {
		return
	}
	a := &ahead{done: make(chan struct{})}
	c.ahead = a
	skip := map[string]bool{just: true}
	for id := range busy {
		skip[id] = true
	}
	var w *want
	if c.Ride && len(c.ending) > 0 && c.want == nil {
		// A story of this process is about to land: the claim rides
		// along in its push.
		w = &want{skip: skip, began: time.Now(), done: make(chan struct{})}
		c.want, a.w = w, w
	}
	go func() {
		defer close(a.done)
		// The claim outlives a cancelled worker only until Done releases it.
		ctx := context.WithoutCancel(ctx)
		began := time.Now()
		if w != nil {
			<-w.done
			if w.h != nil {
				w.h.Spent, w.h.Ahead, w.h.Rode = w.prep, true, true
				w.h.Keep(c.OnError)
				a.h, a.story = w.h, w.story
				return
			}
			if !w.alone {
				return
			}
		}
		for _, reuse := range []bool{c.R.claimGuess.try(), false} {
			h, story, next, err := c.tryClaim(ctx, skip, reuse, true)
			if h != nil {
				if reuse && !h.Moved {
					c.R.claimGuess.hit()
				}
				h.Spent, h.Ahead = time.Since(began), true
				h.Keep(c.OnError)
				a.h, a.story = h, story
				return
			}
			if err != nil || next != lookAgain {
				return
			}
			if reuse {
				c.R.claimGuess.missed()
			}
		}
	}()
}

// takeAhead hands out the story claimed ahead, waiting for the claim in
// flight; nil when there is none, it was lost meanwhile, or this run no
// longer wants it (then it is given back).
func (c *Coordinator) takeAhead(ctx context.Context, busy map[string]bool) (*Held, plan.Story) {
	c.mu.Lock()
	a := c.ahead
	c.ahead = nil
	if a != nil && a.w != nil && !a.w.boarded {
		// A worker wants the story now: no waiting for a landing that
		// has not pushed yet (one losing races may take a while).
		c.resolve(a.w, nil, plan.Story{}, true)
	}
	c.mu.Unlock()
	if a == nil {
		return nil, plan.Story{}
	}
	<-a.done
	switch {
	case a.h == nil:
		return nil, plan.Story{}
	case a.h.LostErr() != nil:
		a.h.Close()
		c.Forget(a.story.ID)
		return nil, plan.Story{}
	case busy[a.story.ID]:
		_ = a.h.Release(context.WithoutCancel(ctx))
		c.Forget(a.story.ID)
		return nil, plan.Story{}
	}
	tip, err := c.R.readRef(ctx, c.R.Tracking(c.Target))
	if err == nil && tip != "" && tip != a.h.seen && c.landedSince(ctx, tip, a.story.ID) {
		// Claimed ahead from a view that missed the story's landing
		// (git advertises refs one at a time: a claim can be made
		// while another machine's landing is applied, its claim
		// already deleted and the target not yet moved); the target
		// as this clone sees it now marks it done. No agent for it.
		_ = a.h.Release(context.WithoutCancel(ctx))
		c.Forget(a.story.ID)
		return nil, plan.Story{}
	}
	if a.h.fresh && err == nil && tip != "" {
		// Claimed while the last story was worked on: start from the
		// target as this clone sees it now (that story's landing).
		a.h.Start = tip
	}
	return a.h, a.story
}

// landedSince reports whether the plan at tip (a target tip this clone
// fetched) no longer has story open.
func (c *Coordinator) landedSince(ctx context.Context, tip, story string) bool {
	stories, err := c.R.PlanAt(ctx, tip, c.PlanRel)
	return err == nil && !open(stories, story)
}

// Done gives back a story claimed ahead that no worker took (the run is
// ending); call it once the workers have stopped.
func (c *Coordinator) Done(ctx context.Context) error {
	c.mu.Lock()
	a := c.ahead
	c.ahead = nil
	c.mu.Unlock()
	if a == nil {
		return nil
	}
	<-a.done
	if a.h == nil {
		return nil
	}
	defer c.Forget(a.story.ID)
	if err := a.h.LostErr(); err != nil {
		a.h.Close()
		return nil
	}
	return a.h.Release(ctx)
}

// What a pass that claimed nothing found.
const (
	nothingLeft = iota // no open story is left for this process
	othersHold         // open stories are held by other machines
	lookAgain          // the target moved under the pass: look again now
)

// tryClaim makes one pass over the server's plan; ahead, only when at
// least as many stories are free as machines are at work.
func (c *Coordinator) tryClaim(ctx context.Context, busy map[string]bool, reuse, ahead bool) (*Held, plan.Story, int, error) {
	none := plan.Story{}
	var v *View
	var err error
	if reuse {
		v, err = c.R.Local(ctx, c.Target, c.PlanRel)
	} else {
		v, err = c.R.FetchPlan(ctx, c.Target, c.PlanRel)
	}
	if err != nil {
		return nil, none, nothingLeft, err
	}

	// A reused view is as old as this clone's last fetch: it may miss
	// claims made since (the server refuses a second one, and the pass
	// fetches) and branches pushed since, so it takes no claim over.
	// Nothing it says can make a wrong claim: a claim is created only if
	// absent, with the target pinned at the view's tip.
	if ahead && !c.spare(v, busy) {
		return nil, none, nothingLeft, nil
	}
	next := nothingLeft
	var held []*Claim // the other machines' claims met on the way
	for _, s := range spread(v.Plan) {
		if s.Done || busy[s.ID] {
			continue
		}
		if reuse {
			if key, err := Key(s.ID); err == nil {
				if old := v.Claims[key]; old != nil && (old.Stale() || old.Machine == c.R.Me.ID) {
					return nil, none, lookAgain, nil
				}
			}
		}
		if !c.reserve(s.ID) {
			continue
		}
		if !reuse {
			if landed, raced, err := c.landReady(ctx, v, s.ID); landed || raced || err != nil {
				c.Forget(s.ID)
				if err != nil {
					return nil, none, nothingLeft, err
				}
				return nil, none, lookAgain, nil
			}
		}
		h, err := c.R.Claim(ctx, s.ID, v)
		var taken *ClaimTakenError
		switch {
		case errors.As(err, &taken):
			c.Forget(s.ID)
			if reuse && taken.Holder == nil && taken.Marked == nil {
				// Claimed since this clone last looked.
				return nil, none, lookAgain, nil
			}
			if taken.Marked == nil {
				next = othersHold
				if taken.Holder != nil {
					held = append(held, taken.Holder)
				}
			}
			continue
		case err != nil:
			c.Forget(s.ID)
			return nil, none, nothingLeft, err
		}
		if !h.Moved && !ahead && c.R.movedSince(ctx, h, c.Target) {
			// A claim an agent starts on at once: read the target again
			// (one ls-remote), which a torn advertisement cannot fool. A
			// claim made ahead is looked at when a worker takes it
			// (takeAhead), off this round trip: most of a busy fleet's
			// claims are made ahead, and their targets often move.
			h.Moved = true
		}
		if h.Moved {
			// Claimed from a view the target has moved on from: the
			// story may have landed since. Look at the server now (the
			// claim keeps anyone else from landing it meanwhile).
			if reuse {
				c.R.claimGuess.missed()
			}
			nv, err := c.R.FetchPlan(ctx, c.Target, c.PlanRel)
			if err == nil && !open(nv.Plan, s.ID) {
				err = h.Release(ctx)
				c.Forget(s.ID)
				if err != nil {
					return nil, none, nothingLeft, err
				}
				return nil, none, lookAgain, nil
			}
			if err != nil {
				_ = h.Release(ctx)
				c.Forget(s.ID)
				return nil, none, nothingLeft, err
			}
			key := mustKey(s.ID)
			h.Start, h.pushed, v = nv.Branches[key], nv.Branches[key], nv
			h.Unclaimed = h.Took == nil && h.Start != ""
		}
		if h.Start == "" {
			// The worktree starts from the server's tip, fetched already.
			h.Start, h.fresh = v.Tip, true
		}
		return h, s, nothingLeft, nil
	}
	if reuse {
		// Nothing claimable in a reused view proves nothing: look at the
		// server before saying so.
		return nil, none, lookAgain, nil
	}
	if next == othersHold && !ahead {
		c.mu.Lock()
		c.heldBy = held
		c.mu.Unlock()
	}
	return nil, none, next, nil
}

// waitKey names who holds what, for telling a wait once per change.
func waitKey(held []*Claim) string {
	var keys []string
	for _, h := range held {
		keys = append(keys, fmt.Sprintf("%s=%s/%s/%d;", h.Story, h.Host, h.Machine, h.PID))
	}
	// In story order: the pass meets them in spread's shuffled order.
	slices.Sort(keys)
	return strings.Join(keys, "")
}

// ClaimFinished claims story for work this clone finished before a crash
// and never landed (the worktree a restarted run kept for landing), as
// Claim claims any story: created if absent, or over a stale claim or this
// clone's own claim from a process that is gone; it is renewed until it
// lands. nil with no error when the story is no longer open on the server
// (it landed meanwhile); a *ClaimTakenError when another machine holds it
// live or it is marked conflicted.
func (c *Coordinator) ClaimFinished(ctx context.Context, story string) (*Held, plan.Story, error) {
	none := plan.Story{}
	v, err := c.R.FetchPlan(ctx, c.Target, c.PlanRel)
	if err != nil {
		return nil, none, err
	}
	var s plan.Story
	for _, p := range v.Plan {
		if p.ID == story {
			s = p
		}
	}
	if s.ID == "" || s.Done {
		return nil, none, nil
	}
	if !c.reserve(story) {
		return nil, none, &ClaimTakenError{Story: story}
	}
	h, err := c.R.Claim(ctx, story, v)
	if err != nil {
		c.Forget(story)
		return nil, none, err
	}
	if h.Moved {
		// The story may have landed since the view: look again.
		nv, err := c.R.FetchPlan(ctx, c.Target, c.PlanRel)
		if err != nil || !open(nv.Plan, story) {
			rerr := h.Release(ctx)
			c.Forget(story)
			return nil, none, errors.Join(err, rerr)
		}
		key := mustKey(story)
		h.Start, h.pushed = nv.Branches[key], nv.Branches[key]
		h.Unclaimed = h.Took == nil && h.Start != ""
	}
	if h.Start == "" {
		h.Start = v.Tip
	}
	h.Keep(c.OnError)
	return h, s, nil
}

// landReady lands story from v when its claim says its work is finished
// and its holder can no longer land it (the lease ran out, or it was this
// clone's process and is gone): a takeover would run an agent on a story
// whose work is done. The caller has reserved the story. (A live ready
// claim is left to its holder's retries and to the landings that carry
// it: machines with nothing to claim landing it too only added races at
// the tail of a run - 4.6-5.5 pushes a story at 4 machines against 3.4.)
func (c *Coordinator) landReady(ctx context.Context, v *View, story string) (landed, raced bool, err error) {
	key, err := Key(story)
	if err != nil {
		return false, false, nil
	}
	old := v.Claims[key]
	if old == nil || !readyHere(v, old, c.PlanRel) || !(old.Stale() || old.Resolved || c.R.deadHere(old)) {
		return false, false, nil
	}
	l, raced, err := c.R.landReady(ctx, v, old, c.PlanRel)
	if l != nil && c.OnReadyLanded != nil {
		c.OnReadyLanded(old, l)
	}
	return l != nil, raced, err
}

// storyDone reports whether stories mark story done (any entry of it, as
// a landing ticks it) and whether they have it at all.
func storyDone(stories []plan.Story, story string) (done, found bool) {
	for _, s := range stories {
		if s.ID == story {
			found = true
			done = done || s.Done
		}
	}
	return done, found
}

// open reports whether story is in stories and its first entry is not
// done.
func open(stories []plan.Story, story string) bool {
	for _, s := range stories {
		if s.ID == story {
			return !s.Done
		}
	}
	return false
}

// spare reports whether v has an open story that nobody holds for this
// machine to claim ahead besides one for every other machine at work that
// will want its next story: one whose live claims are no more than its
// workers (none claimed ahead yet). So no story waits for a busy machine
// while another is idle, and in the last round every machine finds its
// next story claimed when its last ends - not only the first to look,
// as when each machine at work, with its next story claimed or not, kept
// one free story back.
func (c *Coordinator) spare(v *View, busy map[string]bool) bool {
	me := c.R.Me.String()
	held, width := map[string]int{}, map[string]int{}
	for _, cl := range v.Claims {
		if m := cl.Host + "/" + cl.Machine; !cl.Stale() && m != me {
			held[m]++
			width[m] = max(width[m], cl.Workers, 1)
		}
	}
	wanting := 0
	for m, n := range held {
		if n <= width[m] {
			wanting++
		}
	}
	free := 0
	for _, s := range v.Plan {
		if s.Done || busy[s.ID] {
			continue
		}
		if key, err := Key(s.ID); err == nil {
			if cl := v.Claims[key]; cl != nil && !cl.Stale() {
				continue
			}
			if v.Conflicts[key] != nil {
				continue
			}
		}
		free++
	}
	return free >= 1+wanting
}

// spread orders the open stories for claiming: the plan's order, except
// that the first few are tried from a random one on, so that machines
// reading the same plan at once do not all race for the same story.
func spread(stories []plan.Story) []plan.Story {
	var open []plan.Story
	for _, s := range stories {
		if !s.Done {
			open = append(open, s)
		}
	}
	window := min(len(open), 8)
	if window < 2 {
		return open
	}
	k := rand.N(window)
	out := append([]plan.Story{}, open[k:window]...)
	out = append(out, open[:k]...)
	return append(out, open[window:]...)
}

func (c *Coordinator) reserve(story string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mine[story] {
		return false
	}
	c.mine[story] = true
	return true
}

// Forget drops story from this process's held set (after it landed, was
// released or lost).
func (c *Coordinator) Forget(story string) {
	c.mu.Lock()
	delete(c.mine, story)
	c.mu.Unlock()
}

// Land lands h's branch with the plan tick.
// Stories of this process that finish while one of its landings is under
// way (losing races to other machines, say) land together in the next
// one, in one atomic push (see LandGroup).
func (c *Coordinator) Land(ctx context.Context, h *Held, branch, subject string, add *Added) (*Landed, error) {
	req := &landReq{m: &Member{H: h, Spec: LandSpec{Target: c.Target, Branch: branch, PlanRel: c.PlanRel, Subject: subject, Add: add}}, done: make(chan struct{})}
	c.mu.Lock()
	c.landQ = append(c.landQ, req)
	c.mu.Unlock()
	c.landMu.Lock()
	select {
	case <-req.done:
		// The landing before this turn took it along.
	default:
		var batch []*landReq
		take := func() []*Member {
			c.mu.Lock()
			queued := c.landQ
			c.landQ = nil
			c.mu.Unlock()
			batch = append(batch, queued...)
			ms := make([]*Member, len(queued))
			for i, q := range queued {
				ms[i] = q.m
			}
			return ms
		}
		var pass passenger
		if c.Ride {
			pass = rideWith{c}
		}
		c.R.landGroup(ctx, take(), take, pass)
		for _, q := range batch {
			close(q.done)
		}
	}
	c.landMu.Unlock()
	<-req.done
	c.over1(h)
	if l := req.m.Landed; l != nil && l.Kept != "" && c.OnKept != nil {
		c.OnKept(h.Story, h.Branch(), l)
	}
	return req.m.Landed, req.m.Err
}

// Release gives h back (see Held.Release).
func (c *Coordinator) Release(ctx context.Context, h *Held) error {
	defer c.over1(h)
	return h.Release(ctx)
}

// Ended says that the work on h ended: its landing or release follows,
// and a claim ahead made meanwhile rides along in that landing's push.
func (c *Coordinator) Ended(h *Held) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.over[h] || c.ending[h] != nil {
		return
	}
	ch := make(chan struct{})
	c.ending[h] = ch
	// A story lost while it ends is neither landed nor released.
	go func() {
		select {
		case <-h.Lost():
			c.over1(h)
		case <-ch:
		}
	}()
}

// over1 notes that h is no longer ending; when no story is, a claim ahead
// still waiting for a landing is made with a push of its own.
func (c *Coordinator) over1(h *Held) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch := c.ending[h]; ch != nil {
		close(ch)
		delete(c.ending, h)
	}
	c.over[h] = true
	if w := c.want; w != nil && len(c.ending) == 0 && !w.boarded {
		c.resolve(w, nil, plan.Story{}, true)
	}
}

// resolve ends the want w; the caller holds c.mu.
func (c *Coordinator) resolve(w *want, h *Held, story plan.Story, alone bool) {
	if w.resolved {
		return
	}
	w.h, w.story, w.alone, w.resolved = h, story, alone, true
	if c.want == w {
		c.want = nil
	}
	close(w.done)
}

// rideWith is the passenger of a landing: the claim ahead its
// coordinator wants.
type rideWith struct{ c *Coordinator }

// board picks the story to claim ahead from the view the landing builds
// on (the claims as last fetched, the plan at base), as Claim would, but
// never takes a claim over: a story with any claim is left to a claim of
// its own.
func (p rideWith) board(ctx context.Context, base string, landing []string) *Held {
	c := p.c
	c.mu.Lock()
	w := c.want
	if w == nil || w.boarded || w.resolved {
		c.mu.Unlock()
		return nil
	}
	w.boarded = true
	c.mu.Unlock()
	began := time.Now()
	h, story, alone := c.rider(ctx, base, landing, w.skip)
	c.mu.Lock()
	defer c.mu.Unlock()
	w.prep += time.Since(began)
	if h == nil {
		w.boarded = false
		c.resolve(w, nil, plan.Story{}, alone)
		return nil
	}
	w.story = story
	return h
}

// rider is the claim a landing on base would make ahead; nil with alone
// when a claim of its own should look instead, nil without when nothing
// is spare.
func (c *Coordinator) rider(ctx context.Context, base string, landing []string, skip map[string]bool) (*Held, plan.Story, bool) {
	v, err := c.R.Local(ctx, c.Target, c.PlanRel)
	if err != nil || v.Tip != base {
		return nil, plan.Story{}, true
	}
	busy := maps.Clone(skip)
	for _, id := range landing {
		busy[id] = true
	}
	if !c.spare(v, busy) {
		return nil, plan.Story{}, false
	}
	for _, s := range spread(v.Plan) {
		if s.Done || busy[s.ID] {
			continue
		}
		key, err := Key(s.ID)
		if err != nil || v.Claims[key] != nil || v.Conflicts[key] != nil {
			continue
		}
		if !c.reserve(s.ID) {
			continue
		}
		h, err := c.R.newClaim(ctx, s.ID, key, v)
		if err != nil {
			c.Forget(s.ID)
			return nil, plan.Story{}, true
		}
		return h, s, false
	}
	return nil, plan.Story{}, true
}

// off hears the rider's fate: made, it is the claim ahead (starting, when
// its story has no branch on the server, from the landing's tip);
// otherwise (refused, failed, or the landing lost a race and will take a
// while) the claim ahead is made with a push of its own.
func (p rideWith) off(h *Held, made bool, tip string, taken bool, err error) {
	c := p.c
	if !made {
		c.Forget(h.Story)
	} else {
		// Made atomically with a landing leased on the tip the rider
		// read the plan at: the tip that push left is what it saw.
		h.seen = tip
		if h.Start == "" {
			h.Start, h.fresh = tip, true
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.want
	if w == nil || !w.boarded {
		return
	}
	w.boarded = false
	if made {
		c.resolve(w, h, w.story, false)
	} else {
		c.resolve(w, nil, plan.Story{}, true)
	}
}

// Follow moves the local target branch, and the main working tree on it,
// to the server's tip as last fetched, and says from which commit to
// which (Merged's Old and Commit). The caller holds the repository mutex
// (worktree.LockRepo).
func (c *Coordinator) Follow(ctx context.Context) (*worktree.Merged, error) {
	tracking := c.R.Tracking(c.Target)
	ok, err := c.Main.OK(ctx, "merge-base", "--is-ancestor", c.Target, tracking)
	if err != nil {
		return nil, fmt.Errorf("run: compare %s with the server's: %w", c.Target, err)
	}
	if !ok {
		return nil, &DivergedError{Target: c.Target, Remote: c.R.Name}
	}
	return worktree.Merge(ctx, c.Main, c.Target, tracking, "wiggum: follow "+c.R.Name)
}

// Final fetches the server once more at the end of a run and moves the
// local target to it: the stories still open there, with those of them
// marked conflicted and those another machine holds (its lease live). A
// machine whose run ended while another landed the last stories read its
// own, older plan and said they were marked conflicted when none was.
func (c *Coordinator) Final(ctx context.Context) (open, conflicted, held []string, err error) {
	v, err := c.R.FetchPlan(ctx, c.Target, c.PlanRel)
	if err != nil {
		return nil, nil, nil, err
	}
	marked, claimed := map[string]bool{}, map[string]bool{}
	for _, m := range v.Conflicts {
		marked[m.Story] = true
	}
	for _, cl := range v.Claims {
		// A claim whose lease ran out is its stopped machine's no more:
		// the next run takes it over.
		claimed[cl.Story] = !cl.Stale()
	}
	for _, s := range v.Plan {
		if s.Done {
			continue
		}
		open = append(open, s.ID)
		switch {
		case marked[s.ID]:
			conflicted = append(conflicted, s.ID)
		case claimed[s.ID]:
			held = append(held, s.ID)
		}
	}
	mu, err := worktree.LockRepo(ctx, c.Main)
	if err != nil {
		return open, conflicted, held, err
	}
	defer mu.Unlock()
	_, err = c.Follow(ctx)
	return open, conflicted, held, err
}
