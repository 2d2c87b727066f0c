package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/plan"
	"github.com/wiggum-dev/wiggum/worktree"
)

// Coordinator shares a run with other machines (wiggum run --remote): the
// parallel runner claims each story through it before the story starts,
// and lands a finished story through it instead of merging locally.
type Coordinator interface {
	// Claim claims the next open story not in busy; nil when none is left
	// for this process.
	Claim(ctx context.Context, busy map[string]bool) (Claimed, error)
	// ClaimFinished claims story for the work a killed run of this clone
	// finished and never landed, to land it; nil when the story is no
	// longer open on the server (it landed meanwhile).
	ClaimFinished(ctx context.Context, story string) (Claimed, error)
	// Follow moves the local target branch, and the main tree on it, to
	// the shared one, and says from which commit to which (Merged's Old
	// and Commit). The caller holds the repository mutex.
	Follow(ctx context.Context) (*worktree.Merged, error)
	// Done gives back what the run claimed and did not start; called once
	// the workers have stopped.
	Done(ctx context.Context) error
	// Stats are fields for the run_end event (network calls made).
	Stats() map[string]any
	// Final reads the server at the run's end and moves the local target
	// to it: the stories open there, those marked conflicted, and those
	// another machine holds.
	Final(ctx context.Context) (open, conflicted, held []string, err error)
	// Remote is the name of the shared remote, for messages.
	Remote() string
	// LandedHere reports whether story's landing on the target, as last
	// fetched, is this machine's own (a landing of a killed run, or one
	// whose push timed out here and was made on the server after all).
	LandedHere(ctx context.Context, story string) bool
}

// Claimed is a story this process holds for the run.
type Claimed interface {
	Story() plan.Story
	// Start is the commit the story's worktree starts from.
	Start() string
	// Unclaimed names the story's branch on the server when Start is
	// that branch and no claim named it (work a run gave back with its
	// claim, or someone's push); "" otherwise.
	Unclaimed() string
	// Fields describe the claim for the claimed event.
	Fields() map[string]any
	// Follow names the branch to publish while the story is worked on.
	Follow(branch string)
	// Lost is closed when the claim is lost: another machine took the
	// story over, or a person released it; LostHow then says which.
	Lost() <-chan struct{}
	LostHow() string
	// Land lands the branch (with the plan tick, and the stories add its
	// agent added to the plan, when not nil); an error keeps it.
	Land(ctx context.Context, branch, subject string, add *PlanAdd) (commit string, attempts int, err error)
	// Release gives the story back, publishing the branch's commits.
	Release(ctx context.Context) error
	// Ended says the work on the story is over: its Land or Release
	// follows (or it was lost), so a claim made meanwhile may ride along
	// in the landing's push.
	Ended()
}

// PlanAdd is what a story's agent added to its worktree's copy of the
// plan (stories IDs, held by Lines of a markdown plan or Objects of a
// prd.json), for its landing to add to the shared plan.
type PlanAdd struct {
	IDs     []string
	Lines   []string
	Objects []json.RawMessage
}

// share starts a shared run: the local target follows the server's.
func (p *parallel) share(ctx context.Context, c Coordinator) {
	p.coord, p.held = c, map[string]Claimed{}
	p.follow(ctx)
}

// follow moves the local target to the shared one as last fetched.
func (p *parallel) follow(ctx context.Context) {
	mu, err := worktree.LockRepo(context.WithoutCancel(ctx), p.r.st.Repo)
	if err != nil {
		p.halt(err)
		return
	}
	defer mu.Unlock()
	if _, err := p.coord.Follow(context.WithoutCancel(ctx)); err != nil {
		p.r.disp.printf("the local %s does not follow the shared one: %v", checkpoint.BranchName(p.target), err)
	}
}

// claimShared claims the next story on the server.
func (p *parallel) claimShared(ctx context.Context) *plan.Story {
	if p.r.gate.wait(ctx) != nil {
		return nil
	}
	p.mu.Lock()
	if p.stop != nil || p.failed != nil || ctx.Err() != nil {
		p.mu.Unlock()
		return nil
	}
	busy := maps.Clone(p.skip)
	maps.Copy(busy, p.inflight)
	p.mu.Unlock()
	for {
		c, err := p.coord.Claim(ctx, busy)
		if err != nil {
			if ctx.Err() == nil {
				p.halt(fmt.Errorf("run: %w", err))
			}
			return nil
		}
		if c == nil {
			return nil
		}
		s := c.Story()
		// This run's own record of the story (attempts, budgets) still
		// decides whether it may go on here.
		if p.r.led.failed(s.ID) > p.r.opts.Retries || p.r.led.storyOver(s.ID) != "" {
			p.giveBack(ctx, c)
			busy[s.ID] = true
			p.mu.Lock()
			p.skip[s.ID] = true
			p.r.sum.Skipped = append(p.r.sum.Skipped, s.ID)
			p.mu.Unlock()
			continue
		}
		if why := p.r.led.runOver(); why != "" {
			p.giveBack(ctx, c)
			p.mu.Lock()
			if p.stop == nil {
				p.stop = p.r.budgetReached(why)
			}
			p.mu.Unlock()
			return nil
		}
		p.mu.Lock()
		p.inflight[s.ID] = true
		p.held[s.ID] = c
		p.mu.Unlock()
		p.r.event("claimed", c.Fields())
		if b := c.Unclaimed(); b != "" {
			// Work nobody holds is taken in: never silently.
			p.r.disp.printf("%s: starting from %s on %s (%.12s), which no claim names: work a run gave back or someone pushed, landed with the story", s.ID, b, p.coord.Remote(), c.Start())
		}
		return &s
	}
}

// heldClaim returns the claim on story and the commit its worktree starts
// from; nil and "" in a local run.
func (p *parallel) heldClaim(story string) (Claimed, string) {
	if p.coord == nil {
		return nil, ""
	}
	p.mu.Lock()
	c := p.held[story]
	p.mu.Unlock()
	if c == nil {
		return nil, ""
	}
	return c, c.Start()
}

// storyContext is ctx, also cancelled when c is lost; it makes the claim
// publish w's branch while the story is worked on, and a lost story keep
// its attempt's commits rather than roll them back.
func (p *parallel) storyContext(ctx context.Context, c Claimed, w *worktree.Worker, ex *executor) (context.Context, func()) {
	if c == nil {
		return ctx, func() {}
	}
	c.Follow(w.Branch)
	ex.keep = func() string {
		if !lost(c) {
			return ""
		}
		return c.LostHow()
	}
	sctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-c.Lost():
			cancel()
		case <-sctx.Done():
		}
	}()
	return sctx, func() {
		cancel()
		c.Ended()
	}
}

// landedElsewhere is a landing error for a story another machine landed
// while this one worked on it, when this attempt added nothing: its claim
// and branch are gone and nothing is lost (remote.AlreadyLandedError).
type landedElsewhere interface{ LandedElsewhere() bool }

// landLater is a landing error that decided nothing about the story: the
// server could not be reached or hung (remote.NetworkError), refused the
// push by a rule of its own such as a pre-receive hook
// (remote.ServerRejectedError), or others kept landing first
// (remote.TooManyRacesError). The finished work can land as it is.
type landLater interface{ LandLater() bool }

func landsLater(err error) bool {
	var later landLater
	return errors.As(err, &later) && later.LandLater()
}

// giveBack releases a claim whose story is not going on here.
func (p *parallel) giveBack(ctx context.Context, c Claimed) {
	id := c.Story().ID
	if err := c.Release(context.WithoutCancel(ctx)); err != nil {
		p.r.disp.printf("  %s: its claim could not be released (%v); it lapses when its lease runs out", id, err)
	}
	p.mu.Lock()
	delete(p.held, id)
	p.mu.Unlock()
}

// landShared is land for a shared run: the story lands on the server by
// one atomic push (the plan tick inside), then the local target follows;
// an unfinished story's claim is given back with its branch published; a
// story whose claim was lost keeps its work on its local branch.
func (p *parallel) landShared(ctx context.Context, w *worktree.Worker, story *plan.Story, done bool, c Claimed) {
	main := p.r.st.Repo
	follow := false
	var added *PlanAdd
	select {
	case <-c.Lost():
		p.r.event("claim_lost", map[string]any{"story": story.ID, "branch": w.Branch})
		p.r.disp.printf("✘ %s: %s; this attempt's commits stay on %s", story.ID, c.LostHow(), checkpoint.BranchName(w.Branch))
		p.mu.Lock()
		p.skip[story.ID] = true
		delete(p.held, story.ID)
		p.mu.Unlock()
	default:
		if !done {
			p.giveBack(ctx, c)
			break
		}
		if a := p.r.takeAdded(story.ID); a != nil {
			added = &PlanAdd{IDs: a.IDs, Lines: a.Lines, Objects: a.Objects}
		}
		began := time.Now()
		commit, attempts, err := c.Land(ctx, w.Branch, "Merge "+p.r.msg.story(story), added)
		took := time.Since(began)
		p.mu.Lock()
		delete(p.held, story.ID)
		p.mu.Unlock()
		if err != nil && lost(c) {
			// Another machine took the story over while this one worked:
			// its landing is refused, its work stays on its branch.
			p.r.event("claim_lost", map[string]any{"story": story.ID, "branch": w.Branch, "error": err.Error()})
			p.r.disp.printf("✘ %s: %v", story.ID, err)
			p.mu.Lock()
			p.skip[story.ID] = true
			p.mu.Unlock()
			break
		}
		var elsewhere landedElsewhere
		if errors.As(err, &elsewhere) && elsewhere.LandedElsewhere() {
			// Claimed from a view that missed its landing by another
			// machine, and this attempt added nothing: nothing to keep.
			follow = true
			p.r.event("landed_elsewhere", map[string]any{"story": story.ID, "branch": w.Branch, "error": err.Error()})
			p.r.disp.printf("⇢ %s was landed by another machine meanwhile; this attempt added nothing to it, so nothing is kept", story.ID)
			break
		}
		if landsLater(err) {
			p.keepToLand(w, story, err)
			return
		}
		if err != nil {
			p.mu.Lock()
			p.skip[story.ID] = true
			p.unmerged = append(p.unmerged, err.Error())
			p.kept = append(p.kept, checkpoint.BranchName(w.Branch))
			p.mu.Unlock()
			p.r.keptUnmerged(story.ID, w.Branch)
			// Give the story back with its branch published unless the
			// landing already did (a conflict) or cannot (a lost claim).
			_ = c.Release(ctx)
			p.r.event("land_failed", map[string]any{"story": story.ID, "branch": w.Branch, "error": err.Error()})
			p.r.disp.printf("✘ %s", err)
			break
		}
		follow = true
		p.mu.Lock()
		p.stalled = 0
		p.mu.Unlock()
		p.r.sumMu.Lock()
		p.r.sum.MergeTime += took
		p.r.sumMu.Unlock()
		p.r.event("landed", map[string]any{"story": story.ID, "branch": w.Branch, "commit": commit, "attempts": attempts,
			"land_ms": float64(took.Microseconds()) / 1000})
		p.r.disp.printf("⇢ %s landed on %s (commit %.12s, %d push(es))", story.ID, checkpoint.BranchName(p.target), commit, attempts)
	}
	mu, err := worktree.LockRepo(ctx, main)
	if err != nil {
		_ = w.Lease.Release()
		p.halt(err)
		return
	}
	defer mu.Unlock()
	var followed *worktree.Merged // where the local target moved from and to
	if follow {
		m, err := p.coord.Follow(ctx)
		if err != nil {
			p.r.disp.printf("  the local %s does not follow the shared one: %v", checkpoint.BranchName(p.target), err)
		}
		followed = m
	}
	if added != nil {
		p.sharedAdded(story.ID, added, follow)
	}
	rem, err := w.Release(ctx, main)
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
	// After the removal, which saved the story's submodule commits in the
	// main tree's checkouts: following moved the tree's files and index,
	// never a submodule's checkout (as a --workers landing, parallel.go).
	if followed != nil && !followed.Already {
		for _, note := range worktree.FollowSubmodules(ctx, main, p.target, followed.Old, followed.Commit) {
			p.r.disp.printf("  %s: %s", story.ID, note)
		}
	}
}

// sharedAdded says what became of the stories story's agent added to the
// plan, which its landing (landed: it did) added to the shared plan.
func (p *parallel) sharedAdded(story string, a *PlanAdd, landed bool) {
	ids := strings.Join(a.IDs, ", ")
	if !landed {
		p.r.disp.printf("  %s: its agent added %s to the plan in its worktree: not added, the story did not land here; its copy is saved with the worktree (below)", story, ids)
		return
	}
	p.r.disp.printf("  %s: its agent added %s to the plan in its worktree: added to the shared plan, with its landing", story, ids)
	if p.r.reopen != nil {
		p.r.reopen()
	}
}

// keepToLand keeps the finished work of story, whose landing failed for a
// reason that decided nothing about it (landLater), for the next run to
// land: its worktree w is left as its attempt left it, its lease let go,
// and the run's journal stays open (finish). The next run resumes, finds
// the worktree finished (finishedThere) and lands it, claiming the story
// again, without running its agent (landResumedShared). Before, the
// worktree went, the journal closed, and the next run had an agent do the
// story again from scratch, the finished work left behind on its branch.
// The claim is not given back: the next run here takes this process's
// claim over at once, another machine only when its lease runs out.
func (p *parallel) keepToLand(w *worktree.Worker, story *plan.Story, err error) {
	_ = w.Lease.Release()
	branch := checkpoint.BranchName(w.Branch)
	p.mu.Lock()
	p.skip[story.ID] = true
	p.mu.Unlock()
	p.r.keepToLand(story.ID, branch, relPath(p.r.st.Repo.Root, w.Path), err)
	p.r.event("land_failed", map[string]any{"story": story.ID, "branch": w.Branch, "error": err.Error(), "kept_to_land": true})
	p.r.disp.printf("✘ %s: %v", story.ID, err)
	p.r.disp.printf("  %s: its finished work is kept on %s (its worktree %s is left as it is); the next run lands it, without running its agent again", story.ID, branch, relPath(p.r.st.Repo.Root, w.Path))
}

// sharedResult records the run's network calls, and makes a shared run
// that leaves stories open - marked conflicted on the server, so no
// machine works on them - end with work left rather than done.
func (p *parallel) sharedResult(ctx context.Context, err error) error {
	if derr := p.coord.Done(context.WithoutCancel(ctx)); derr != nil {
		p.r.disp.printf("a story claimed ahead could not be given back (%v); its claim lapses when its lease runs out", derr)
	}
	p.r.event("remote_stats", p.coord.Stats())
	if err != nil || p.r.sum.Left == 0 {
		return err
	}
	// The local plan may lag the server's: another machine landed the
	// last stories after this one's last look.
	open, conflicted, held, ferr := p.coord.Final(context.WithoutCancel(ctx))
	if ferr != nil {
		return &StopError{Reason: fmt.Sprintf("%d story(ies) open here, and the server could not be read to tell why (%v): wiggum status --remote shows them", p.r.sum.Left, ferr)}
	}
	p.r.sum.Left = len(open)
	if len(open) == 0 {
		return nil
	}
	why := []string{fmt.Sprintf("%d story(ies) open on the server", len(open))}
	if len(conflicted) > 0 {
		why = append(why, fmt.Sprintf("%s marked conflicted on the server (wiggum status --remote shows them; resolve, then wiggum claims release STORY)", strings.Join(conflicted, ", ")))
	}
	if len(held) > 0 {
		why = append(why, fmt.Sprintf("%s claimed by other machines, still at work", strings.Join(held, ", ")))
	}
	if rest := len(open) - len(conflicted) - len(held); rest > 0 {
		why = append(why, fmt.Sprintf("%d claimed by no machine (run again to take them)", rest))
	}
	return &StopError{Reason: strings.Join(why, "; ")}
}

func lost(c Claimed) bool {
	select {
	case <-c.Lost():
		return true
	default:
		return false
	}
}

// landResumedShared is landResumed for a shared run: each story the killed
// run of this clone finished and never landed is claimed again on the
// server and landed from its worktree, as its worker would have landed
// it, and no agent runs on it again. A story landed meanwhile only loses
// its worktree; one another machine holds (its lease ran out and it was
// taken over) is left to that machine, this work kept on its local branch.
func (p *parallel) landResumedShared(ctx context.Context) {
	for _, u := range p.r.unlanded {
		id := u.story.ID
		p.mu.Lock()
		p.inflight[id] = true
		p.mu.Unlock()
		u.w.Settle(ctx)
		c, err := p.coord.ClaimFinished(ctx, id)
		if c == nil {
			branch := checkpoint.BranchName(u.w.Branch)
			switch {
			case landsLater(err):
				// The server is gone again, or refuses: kept again.
				p.keepToLand(u.w, u.story, err)
			case err != nil:
				p.mu.Lock()
				p.skip[id] = true
				p.mu.Unlock()
				p.r.disp.printf("✘ %s finished in an earlier run and is not landed: %v; its work stays on %s", id, err, branch)
				p.dropResumed(ctx, u.w)
			default:
				how := "removed its worktree"
				if rem := p.dropResumed(ctx, u.w); rem != nil && rem.BranchKept {
					how += "; its work, which that landing lacks, stays on " + branch
				}
				by := "(by another machine)"
				if p.coord.LandedHere(ctx, id) {
					by = "by this machine (that run's landing reached the server after all)"
				}
				p.r.disp.printf("%s finished in an earlier run and was landed since %s; %s", id, by, how)
			}
			p.mu.Lock()
			delete(p.inflight, id)
			p.mu.Unlock()
			continue
		}
		p.mu.Lock()
		p.held[id] = c
		p.mu.Unlock()
		p.r.event("claimed", c.Fields())
		c.Follow(u.w.Branch)
		c.Ended()
		p.r.addCompleted(id)
		j := &landing{w: u.w, story: u.story, done: true, queued: time.Now()}
		p.lq.hold()
		p.sharedLandings.Go(func() {
			defer p.lq.finish()
			p.landShared(context.WithoutCancel(ctx), u.w, u.story, true, c)
			p.landed(j)
		})
	}
	p.r.unlanded = nil
}

// dropResumed removes a kept worktree that is not landed here: its
// branch stays unless the target has it. nil when it could not.
func (p *parallel) dropResumed(ctx context.Context, w *worktree.Worker) *worktree.Removal {
	mu, err := worktree.LockRepo(context.WithoutCancel(ctx), p.r.st.Repo)
	if err != nil {
		_ = w.Lease.Release()
		p.halt(err)
		return nil
	}
	defer mu.Unlock()
	rem, err := w.Release(context.WithoutCancel(ctx), p.r.st.Repo)
	if err != nil {
		p.halt(fmt.Errorf("run: remove the worktree of %s: %w", w.Story, err))
	}
	return rem
}
