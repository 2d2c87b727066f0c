package remote

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/killpoint"
	"github.com/wiggum-dev/wiggum/internal/plan"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// LandSpec says what to land where.
type LandSpec struct {
	Target  string // the target branch, refs/heads/<name>
	Branch  string // the local ref holding the story's work
	PlanRel string // the plan file, relative to the root; ticked inside the landing commit
	Subject string // the landing commit's subject
	// MaxAttempts bounds the retries after others landed first; 0 is 30.
	MaxAttempts int
	// Add: stories the story's agent added to its copy of the plan, added
	// to the target's plan inside the landing commit; nil none.
	Add *Added
}

// Added is what a story's agent added to its worktree's copy of the plan:
// the stories (IDs) and, for a markdown plan, the lines that hold them, or
// a prd.json's new userStories entries. A landing appends them to the
// target's plan, unless it has one of them already.
type Added struct {
	IDs     []string          `json:"ids"`
	Lines   []string          `json:"lines,omitempty"`
	Objects []json.RawMessage `json:"objects,omitempty"`
}

// Landed is a story on the server's target branch.
type Landed struct {
	Commit   string // the landing commit, now the target's tip
	Base     string // the tip it was built on
	Attempts int    // pushes it took (more than 1: others landed first)
	// By is the machine that landed the story when it was not this one
	// (the story's claim said it was ready, and that machine carried it
	// in its own landing).
	By string
	// Carried lists the other machines' ready stories this landing
	// carried with it.
	Carried []string
	// Kept is the story's branch on the server, left there because
	// someone not holding the claim moved it to commits this landing does
	// not hold (a colleague's fix pushed onto it); "" when the landing
	// deleted the branch.
	Kept string
}

// ConflictError is a story branch that cannot merge into the target. The
// branch is on the server, the claim released, and the story marked by
// refs/wiggum/conflicts/<story>, so no machine tries it again until an
// operator resolves it.
type ConflictError struct {
	Story, Branch, Target, Marker string
	Paths                         []string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s conflicts with %s in %s; its branch %s is kept on the server and the story is marked by %s: merge it by hand, then wiggum claims release %s",
		e.Story, strings.TrimPrefix(e.Target, "refs/heads/"), strings.Join(e.Paths, ", "), strings.TrimPrefix(e.Branch, "refs/heads/"), e.Marker, e.Story)
}

// TargetRewrittenError is a story built on a target tip that the target's
// history no longer holds: the target was rewritten on the server (a
// force-push that removed commits) while the story was worked on, and
// merging the story would bring the removed commits back. Nothing landed;
// the branch is kept on the server and the story marked like a conflict.
type TargetRewrittenError struct {
	Story, Branch, Target, Marker string
	// Built is the old target tip the story's work holds and the target
	// does not any more.
	Built string
}

func (e *TargetRewrittenError) Error() string {
	t := strings.TrimPrefix(e.Target, "refs/heads/")
	return fmt.Sprintf("%s was not landed: %s was rewritten on the server while it was worked on (%.12s, which the story was built on, is no longer in its history), and landing it would bring the removed commits back; its branch %s is kept on the server and the story is marked by %s: rebase the story's own commits onto %s by hand, then wiggum claims release %s",
		e.Story, t, e.Built, strings.TrimPrefix(e.Branch, "refs/heads/"), e.Marker, t, e.Story)
}

// AlreadyLandedError is a story the target's plan already marks done: it
// landed before this claim was made. Nothing landed.
type AlreadyLandedError struct {
	Story string
	// Dropped: the story's branch adds nothing to the target (every
	// commit of it is there already), so its claim and its branch on the
	// server were deleted: nothing is lost and nothing is kept. Otherwise
	// the branch is kept with the work the target lacks.
	Dropped bool
}

func (e *AlreadyLandedError) Error() string {
	if e.Dropped {
		return fmt.Sprintf("%s was already done on the target branch (landed by another machine meanwhile) and its branch adds nothing to it; its claim and branch are deleted", e.Story)
	}
	return fmt.Sprintf("%s is already done on the target branch; nothing landed", e.Story)
}

// LandedElsewhere reports whether the story was done on the target
// without this branch, which added nothing to it: not a failure.
func (e *AlreadyLandedError) LandedElsewhere() bool { return e.Dropped }

// TooManyRacesError is a landing that lost the race to other machines more
// often than its bound; the claim is still held and nothing was lost.
type TooManyRacesError struct {
	Story    string
	Attempts int
}

func (e *TooManyRacesError) Error() string {
	return fmt.Sprintf("%s: other machines landed first %d times in a row; gave up for now, the branch is kept", e.Story, e.Attempts)
}

// LandLater reports that the story's finished work can land as it is on
// another try.
func (e *TooManyRacesError) LandLater() bool { return true }

// Land lands the story: fetches the target, merges the branch into it with
// git merge-tree (no working tree involved), ticks the story in the plan
// inside the same commit, and pushes in ONE atomic push the new target
// (with a lease on the tip it was built on), the claim's deletion (with a
// lease on the claim's exact value) and the story branch's deletion. When
// another machine landed first it fetches, rebuilds and retries, with
// jittered back-off. A lost claim is a *LeaseLostError and a conflict a
// *ConflictError; neither loses the work.
func (h *Held) Land(ctx context.Context, spec LandSpec) (*Landed, error) {
	m := &Member{H: h, Spec: spec}
	h.r.LandGroup(ctx, []*Member{m}, nil)
	return m.Landed, m.Err
}

// Member is one story of a group landing, and its outcome.
type Member struct {
	H    *Held
	Spec LandSpec
	// Landed or Err once LandGroup returns.
	Landed *Landed
	Err    error
}

// LandGroup lands stories this process holds, all on one target, in ONE
// atomic push: the new target tip (with a lease on the tip it was built
// on) carries one merge commit per story, each ticking its story in the
// plan, and every story's claim is deleted (with a lease on its exact
// value) with its branch. The claims say which stories land: all of them
// or, when any lease fails, none. A story that conflicts is marked on its
// own (a *ConflictError) and one whose claim was lost drops out (a
// *LeaseLostError); neither holds the others back. When another machine
// landed first it fetches, rebuilds and retries, with jittered back-off -
// so stories that finish while a landing loses races land together on
// the next attempt, instead of each losing its own.
//
// more, when not nil, is asked before each retry for stories that finished
// meanwhile; they join the group. Every member's outcome is set when
// LandGroup returns.
func (r *Remote) LandGroup(ctx context.Context, ms []*Member, more func() []*Member) {
	r.landGroup(ctx, ms, more, nil)
}

// passenger is a claim that may ride along in a landing's push: its claim
// ref is created (create-only) in the same atomic push as the landing, so
// in steady state a story costs one push, not a claim push and a landing
// push. Atomic means both or neither: a rider refused (another machine
// claimed its story meanwhile) fails the whole push, and the landing is
// retried at once without it.
type passenger interface {
	// board returns the claim to make with a landing built on base (the
	// stories in landing land with it), not yet on the server; nil when
	// none rides this attempt.
	board(ctx context.Context, base string, landing []string) *Held
	// off hears what became of a claim board returned: made by the push
	// whose new target tip is tip, or not (taken: its claim ref was made
	// by someone else meanwhile; err: the push failed).
	off(h *Held, made bool, tip string, taken bool, err error)
}

// member is one story of a landing group.
type member struct {
	m            *Member
	tip          string // the local branch's tip
	commit, base string
	over         bool
}

// landGroup is LandGroup with a passenger.
func (r *Remote) landGroup(ctx context.Context, ms []*Member, more func() []*Member, pass passenger) {
	var open []*member
	var locked []*Held
	defer func() {
		for _, h := range locked {
			h.mu.Unlock()
		}
	}()
	join := func(ms []*Member) {
		for _, m := range ms {
			h := m.H
			h.Close()
			h.mu.Lock()
			locked = append(locked, h)
			if h.done {
				m.Err = fmt.Errorf("remote: %s was already landed or released", h.Story)
				continue
			}
			if err := h.LostErr(); err != nil {
				m.Err = err
				continue
			}
			if m.Spec.MaxAttempts <= 0 {
				m.Spec.MaxAttempts = 30
			}
			tip, err := r.readRef(ctx, m.Spec.Branch)
			if err == nil && tip == "" {
				err = fmt.Errorf("no such branch")
			}
			if err != nil {
				m.Err = fmt.Errorf("remote: resolve %s: %w", m.Spec.Branch, err)
				continue
			}
			open = append(open, &member{m: m, tip: tip})
		}
	}
	join(ms)
	if len(open) == 0 {
		return
	}
	spec := open[0].m.Spec
	stillOpen := func() {
		var left []*member
		for _, o := range open {
			if !o.over {
				left = append(left, o)
			}
		}
		open = left
	}
	fail := func(err error) {
		for _, o := range open {
			o.m.Err = err
		}
	}
	// The first attempt may build on the target as this clone last saw it
	// (its own landing, or its last fetch): right, it saves the fetch;
	// wrong, the target's lease refuses the push and the next attempt
	// fetches.
	guessed := r.landGuess.try()
	for attempt := 1; len(open) > 0; attempt++ {
		began := time.Now()
		var base string
		var err error
		if guessed {
			if base, err = r.readRef(ctx, r.Tracking(spec.Target)); err != nil || base == "" {
				// No copy of the target here (git remote rename moved
				// refs/remotes/<name>/ away): fetch it.
				guessed, err = false, nil
			}
		}
		if !guessed {
			// Every shared ref, not only the target: the same one fetch,
			// and the next claim of this process can read its view from it.
			base, err = r.fetchAll(ctx, spec.Target)
			for try := 1; err != nil && IsNetwork(err) && !isTimeout(err) && try < 3 && ctx.Err() == nil; try++ {
				// A connection that failed (not one that hung) is worth
				// another try before the story is given back.
				time.Sleep(time.Duration(try) * 200 * time.Millisecond)
				base, err = r.fetchAll(ctx, spec.Target)
			}
		}
		if err != nil {
			fail(err)
			return
		}
		// Stories this process marked ready may have been landed by
		// another machine; ready stories of others land with these.
		var others []*readyStory
		var view *View // the server as fetched at this attempt; nil on a guess
		if !guessed {
			v, err := r.Local(ctx, spec.Target, "")
			if err != nil {
				fail(err)
				return
			}
			for _, o := range open {
				if o.m.H.claim.Ready != "" {
					r.landedByOther(ctx, o.m, v, attempt)
					o.over = o.m.Landed != nil || o.m.Err != nil
				}
			}
			stillOpen()
			if len(open) == 0 {
				return
			}
			others = readyOthers(v, spec, open)
			view = v
		}
		// The claim riding along is picked while the merges are built
		// (both only read this clone); one the attempt does not push is
		// given back.
		var boarding chan *Held
		if pass != nil {
			var stories []string
			for _, o := range open {
				stories = append(stories, o.m.H.Story)
			}
			boarding = make(chan *Held, 1)
			go func() { boarding <- pass.board(ctx, base, stories) }()
		}
		unboard := func() {
			if boarding != nil {
				if h := <-boarding; h != nil {
					pass.off(h, false, "", false, nil)
				}
			}
		}
		// One merge commit per story, each on the one before.
		cur, look := base, false
		var in []*member
		for _, o := range open {
			h := o.m.H
			if r.rewritten(ctx, h.seen, o.tip, base) {
				if guessed {
					look = true
					break
				}
				o.m.Err, o.over = h.markRewritten(ctx, o.m.Spec, o.tip), true
				continue
			}
			commit, paths, err := r.landingCommit(ctx, cur, o.tip, o.m.Spec, h.Story, r.Me)
			var already *AlreadyLandedError
			errors.As(err, &already)
			if guessed && (paths != nil || already != nil) {
				// Only the server's tip may condemn a story: look at it.
				look = true
				break
			}
			switch {
			case already != nil && view != nil:
				// Done on the server's tip. A mark-ready push whose
				// answer never came (a timeout) may have made the
				// claim ready after all, and another machine carried
				// the story: the server says whether it was landed
				// with this claim, or before it.
				r.landedByOther(ctx, o.m, view, attempt)
				if o.m.Landed == nil && o.m.Err == nil {
					// Still claimed by this process, yet done: either it
					// was done before the claim, or this fetch read the
					// refs while another machine's push carrying the
					// story was being applied - git advertises refs one
					// at a time, so a fetch can see the new target tip
					// and the claim that push deletes (seen: one of 300
					// reads during a run of atomic pushes). Only a ready
					// claim can be carried, and the landing commit tells:
					// it merges the work the claim names.
					o.m.Err = err
					if h.claim.Ready != "" {
						if l := r.landingOf(ctx, view.Target, h.Story, h.claim.Ready); l != nil {
							h.done = true
							o.m.Landed, o.m.Err = &Landed{Commit: l.Commit, Attempts: attempt, By: l.By}, nil
						}
					}
					if o.m.Err != nil {
						// Claimed from a torn view (the claim already
						// deleted by the landing, the target read before
						// it): when the work adds nothing, there is
						// nothing to keep.
						r.dropLanded(ctx, h, o.tip, base, already)
					}
				}
				o.over = true
			case err != nil:
				o.m.Err, o.over = err, true
			case paths != nil:
				o.m.Err, o.over = h.markConflict(ctx, o.m.Spec, o.tip, paths), true
			default:
				o.commit, o.base, cur = commit, cur, commit
				in = append(in, o)
			}
		}
		stillOpen()
		if look {
			unboard()
			guessed = false
			attempt--
			continue
		}
		if len(in) == 0 {
			unboard()
			return
		}
		// Others' ready stories on top, each leased on its exact ready
		// claim and branch; one that does not merge is left to its
		// holder.
		var carried []string
		var otherUps []update
		for _, o := range others {
			if r.rewritten(ctx, o.claim.Base, o.claim.Ready, base) {
				continue
			}
			commit, paths, err := r.landingCommit(ctx, cur, o.claim.Ready, LandSpec{Target: spec.Target, PlanRel: spec.PlanRel, Subject: o.claim.Subject, Add: o.claim.Add},
				o.claim.Story, Machine{ID: o.claim.Machine, Host: o.claim.Host})
			if err != nil || paths != nil {
				continue
			}
			cur = commit
			carried = append(carried, o.claim.Story)
			otherUps = append(otherUps, update{dst: o.claim.Ref, expect: o.claim.Commit}, update{dst: o.branch, expect: o.claim.Ready})
		}
		ups := []update{{src: cur, dst: spec.Target, expect: base}}
		var names []string
		for _, o := range in {
			h := o.m.H
			names = append(names, h.Story)
			ups = append(ups, update{dst: h.claim.Ref, expect: h.claim.Commit})
			if h.pushed != "" && h.ours(ctx, o.tip) {
				ups = append(ups, update{dst: h.Branch(), expect: h.pushed})
			}
		}
		ups = append(ups, otherUps...)
		names = append(names, carried...)
		var rider *Held
		if boarding != nil {
			if rider = <-boarding; rider != nil {
				ups = append(ups, update{src: rider.claim.Commit, dst: rider.claim.Ref, expect: ""})
			}
		}
		op := "land " + strings.Join(names, ", ")
		if rider != nil {
			op += " and claim " + rider.Story
		}
		bad, err := r.pushLanding(ctx, op, ups)
		if err != nil {
			if rider != nil {
				pass.off(rider, false, "", false, err)
			}
			fail(err)
			return
		}
		if rider != nil {
			_, taken := bad[rider.claim.Ref]
			pass.off(rider, len(bad) == 0, cur, taken, nil)
			if taken && len(bad) == 1 {
				// Only the rider was refused: the landing goes again
				// at once without it (the passenger does not board a
				// second time after a refusal).
				attempt--
				continue
			}
		}
		if len(bad) == 0 {
			if guessed {
				r.landGuess.hit()
			}
			for _, o := range in {
				h := o.m.H
				h.done = true
				o.m.Landed = &Landed{Commit: o.commit, Base: o.base, Attempts: attempt, Carried: carried}
				if h.foreign {
					o.m.Landed.Kept = h.pushed
				}
			}
			return
		}
		// A story branch refused with its claim held is no race lost:
		// someone not holding the claim moved it on the server. It is
		// theirs: the landing goes again at once without touching it.
		moved := false
		for _, o := range in {
			h := o.m.H
			now, ok := bad[h.Branch()]
			if _, lostClaim := bad[h.claim.Ref]; ok && !lostClaim && !h.foreign {
				h.movedBy(ctx, now)
				moved = true
			}
		}
		if moved {
			attempt--
			continue
		}
		lost := false
		for _, o := range in {
			h := o.m.H
			now, ok := bad[h.claim.Ref]
			if !ok {
				continue
			}
			if now == unknown {
				// Rejected client-side on the claim: read who has it.
				read, lerr := r.lsRemote(ctx, "land "+h.Story, []update{{dst: h.claim.Ref}})
				if lerr != nil || read[h.claim.Ref] == h.claim.Commit {
					continue
				}
				now = read[h.claim.Ref]
			}
			if now == "" && h.claim.Ready != "" {
				// Deleted: perhaps another machine carried the ready
				// story in its landing. The next attempt's fetch tells.
				continue
			}
			lerr := &LeaseLostError{Story: h.Story, Now: now}
			h.markLost(lerr)
			o.m.Err, o.over, lost = lerr, true, true
		}
		stillOpen()
		if lost {
			// The others go on at once, without the lost one.
			continue
		}
		if guessed {
			// The view was old, not a race lost: fetch and go again now.
			r.landGuess.missed()
			guessed = false
			continue
		}
		// A race lost: the stories' claims say they are ready, so that
		// whichever machine lands next lands them too.
		r.markReady(ctx, in)
		if attempt >= spec.MaxAttempts {
			for _, o := range open {
				o.m.Err = &TooManyRacesError{Story: o.m.H.Story, Attempts: attempt}
			}
			return
		}
		// Someone landed first. Machines that lost together would collide
		// again if they retried together: each waits a random part of a
		// window as long as an attempt takes here (the time the tip must
		// stay still for a landing), widening with the losses, then
		// rebuilds on the new tip.
		window := max(time.Since(began), 10*time.Millisecond) * time.Duration(min(attempt, 4))
		select {
		case <-ctx.Done():
			fail(ctx.Err())
			return
		case <-time.After(rand.N(window)):
		}
		if more != nil {
			join(more())
		}
	}
}

// readyStory is another machine's story whose claim says it is ready.
type readyStory struct {
	claim  *Claim
	branch string
}

// readyOthers lists the ready claims of v that this landing may carry: on
// its target and plan, not its own members', with the branch on the
// server at the tip the claim names; in story order.
func readyOthers(v *View, spec LandSpec, open []*member) []*readyStory {
	mine := map[string]bool{}
	for _, o := range open {
		mine[o.m.H.claim.Ref] = true
	}
	var out []*readyStory
	for _, c := range v.SortedClaims() {
		if mine[c.Ref] || c.Target != spec.Target || !readyHere(v, c, spec.PlanRel) {
			continue
		}
		out = append(out, &readyStory{claim: c, branch: BranchPrefix + strings.TrimPrefix(c.Ref, ClaimsPrefix)})
	}
	return out
}

// markReady makes the claims of in say that their stories are finished
// (the claim names the branch tip and the landing's subject), publishing
// the branches with them in one atomic push, each leased on its exact
// value: any machine may then land them, leased on those exact values, in
// its own landing. A member whose claim was lost meanwhile is marked so;
// a failure only leaves the stories to this process's own retries.
func (r *Remote) markReady(ctx context.Context, in []*member) {
	var ups []update
	var todo []*member
	claims := map[*member]Claim{}
	for _, o := range in {
		h := o.m.H
		if h.claim.Ready != "" || o.over {
			continue
		}
		c := h.claim
		c.Time = r.now().UTC()
		c.Ready, c.Target, c.Plan, c.Subject, c.Base, c.Add = o.tip, o.m.Spec.Target, o.m.Spec.PlanRel, o.m.Spec.Subject, h.seen, o.m.Spec.Add
		sha, err := r.claimCommit(ctx, &c)
		if err != nil {
			return
		}
		c.Commit = sha
		if o.tip != h.pushed {
			if !h.ours(ctx, o.tip) {
				// Its branch is not this process's to publish on; no
				// other machine could carry it.
				continue
			}
			ups = append(ups, update{src: o.tip, dst: h.Branch(), expect: h.pushed})
		}
		claims[o] = c
		todo = append(todo, o)
		ups = append(ups, update{src: sha, dst: c.Ref, expect: h.claim.Commit})
	}
	if len(ups) == 0 {
		return
	}
	var names []string
	for _, o := range todo {
		names = append(names, o.m.H.Story)
	}
	bad, err := r.push(ctx, "mark "+strings.Join(names, ", ")+" ready to land", ups)
	if err != nil || len(bad) > 0 {
		// Nothing was made; a lost claim shows at the next landing push.
		return
	}
	for _, o := range todo {
		o.m.H.claim = claims[o]
		o.m.H.pushed = o.tip
	}
	// Crash tests: killed here, the finished work is on the server and its
	// claim says so; whoever claims the story next lands it (landReady).
	killpoint.At("remote-marked-ready")
}

// landedByOther settles a member whose claim this process marked ready,
// from v (fetched at this attempt): its claim gone and its story done on
// the target, another machine landed it (with the exact work the claim
// named); gone and not done, it was released; replaced, taken over.
// Otherwise the member stays open.
func (r *Remote) landedByOther(ctx context.Context, m *Member, v *View, attempt int) {
	h := m.H
	now := v.Claims[h.key]
	if now != nil && now.Commit == h.claim.Commit {
		return
	}
	if now == nil {
		landed, err := r.Landed(ctx, v.Target, 256)
		if err == nil {
			for _, l := range landed {
				if l.Story == h.Story {
					h.done = true
					m.Landed = &Landed{Commit: l.Commit, Attempts: attempt, By: l.By}
					if m.Landed.By == "" {
						m.Landed.By = "another machine"
					}
					return
				}
			}
		}
		// Gone and not landed on v's target. git advertises refs one at
		// a time, so a fetch made while another machine's push carrying
		// the story was applied can read the target before that push
		// and the claims after it. The target on the server now says
		// which: moved on since v, the next attempt's fetch tells;
		// still v's, the claim was released.
		if live, err := r.lsRemote(ctx, "land "+h.Story, []update{{dst: v.Target}}); err == nil && live[v.Target] != v.Tip {
			return
		}
	}
	lerr := &LeaseLostError{Story: h.Story}
	if now != nil {
		lerr.Now = now.Commit
	}
	h.markLost(lerr)
	m.Err = lerr
}

// dropLanded deletes h's claim and its branch on the server, in one atomic
// push leased on both, when the story is done on the target at base and
// tip (the local branch) adds nothing to it; already then says so. A story
// claimed from a torn view (git advertises refs one at a time, so a claim
// can be made while another machine's landing of the story is applied:
// its claim already deleted, the target not yet moved) ends here when its
// agent found nothing left to do. The caller (a landing) holds h.mu.
func (r *Remote) dropLanded(ctx context.Context, h *Held, tip, base string, already *AlreadyLandedError) {
	if in, err := r.Repo.OK(ctx, "merge-base", "--is-ancestor", tip, base); err != nil || !in {
		return
	}
	if !h.ours(ctx, tip) {
		return
	}
	ups := []update{{dst: h.claim.Ref, expect: h.claim.Commit}}
	if h.pushed != "" {
		ups = append(ups, update{dst: h.Branch(), expect: h.pushed})
	}
	if bad, err := r.push(ctx, "drop the claim on "+h.Story, ups); err != nil || len(bad) > 0 {
		return
	}
	h.done, h.pushed = true, ""
	already.Dropped = true
}

// landingOf returns the landing of story on the fetched target when it
// merged one of tips (the work this process holds for it), nil otherwise.
// Its By names the machine that carried it; empty, this one pushed it.
func (r *Remote) landingOf(ctx context.Context, target, story string, tips ...string) *LandedStory {
	landed, err := r.Landed(ctx, target, 256)
	if err != nil {
		return nil
	}
	for _, l := range landed {
		if l.Story != story {
			continue
		}
		parents, err := r.Repo.Run(ctx, "rev-parse", l.Commit+"^@")
		if err != nil {
			return nil
		}
		ps := strings.Fields(parents)
		for i := 1; i < len(ps); i++ {
			for _, tip := range tips {
				if tip != "" && ps[i] == tip {
					return &l
				}
			}
		}
		return nil
	}
	return nil
}

// pushLanding pushes a landing, whose first update moves the target:
// accepted whole, this clone's remote-tracking ref of the target moves with
// it (under fetchMu: no fetch of this process may write it meanwhile). A
// push whose answer was lost to the network counts as accepted when the
// server shows the landing made (landedAnyway). bad is what the server
// refused, as push returns it.
func (r *Remote) pushLanding(ctx context.Context, op string, ups []update) (bad map[string]string, err error) {
	r.fetchMu.Lock()
	bad, err = r.push(ctx, op, ups)
	if err == nil && len(bad) == 0 {
		_, _ = r.Repo.Run(ctx, "update-ref", r.Tracking(ups[0].dst), ups[0].src)
	}
	r.fetchMu.Unlock()
	if err != nil && IsNetwork(err) && r.landedAnyway(ctx, ups) {
		return map[string]string{}, nil
	}
	return bad, err
}

// landedAnyway reads the server after a push whose answer was lost (a
// timeout): true when the target is the landing commit. Only this push
// holds that commit, and the push is atomic, so the target there means
// every update was made - even when the read shows a claim the push
// deletes: git advertises refs one at a time, and a read made while the
// server applies the push can see the target moved and the claim not yet
// gone.
func (r *Remote) landedAnyway(ctx context.Context, ups []update) bool {
	now, err := r.lsRemote(ctx, "check the landing", ups[:1])
	return err == nil && now[ups[0].dst] == ups[0].src
}

// landingCommit builds the commit that lands tip on base: their merge with
// the story ticked in the plan. paths is non-nil on a conflict.
//
// me is the machine whose work it is; the commit says so, and, when this
// machine lands another's ready story, which machine landed it.
func (r *Remote) landingCommit(ctx context.Context, base, tip string, spec LandSpec, story string, me Machine) (commit string, paths []string, err error) {
	repo := r.Repo
	m, err := repo.MergeTree(ctx, base, tip)
	if err != nil {
		return "", nil, fmt.Errorf("remote: %w", err)
	}
	if len(m.Conflicts) > 0 {
		paths = m.Conflicts
		// A story the target already marks done does not conflict: it
		// landed (another machine's work), and this branch is kept as
		// "already done", not marked for an operator to merge by hand.
		if objs, err := r.readObjects(ctx, []string{base + ":" + spec.PlanRel}); err == nil {
			if o := objs[base+":"+spec.PlanRel]; o.typ == "blob" {
				if stories, err := parsePlan(o.data, spec.PlanRel); err == nil {
					if done, _ := storyDone(stories, story); done {
						return "", nil, &AlreadyLandedError{Story: story}
					}
				}
			}
		}
		return "", paths, nil
	}
	tree := m.Tree
	// The plan as the target has it (is the story still open?) and as the
	// merge has it (what to tick), in one read.
	baseName, treeName := base+":"+spec.PlanRel, tree+":"+spec.PlanRel
	objs, err := r.readObjects(ctx, []string{baseName, treeName, tree})
	if err != nil {
		return "", nil, err
	}
	if objs[baseName].typ != "blob" || objs[treeName].typ != "blob" {
		return "", nil, fmt.Errorf("remote: the plan %s is missing from the target or from the merge with %s", spec.PlanRel, story)
	}
	stories, err := parsePlan(objs[baseName].data, spec.PlanRel)
	if err != nil {
		return "", nil, err
	}
	done, found := storyDone(stories, story)
	if done {
		return "", nil, &AlreadyLandedError{Story: story}
	}
	if !found {
		return "", nil, &plan.NotFoundError{ID: story, Path: spec.PlanRel + " on the target branch"}
	}
	var root []byte
	if o := objs[tree]; o.typ == "tree" {
		root = o.data
	}
	ticked, err := r.tickTree(ctx, tree, root, objs[treeName].data, spec.PlanRel, story, spec.Add)
	if err != nil {
		return "", nil, err
	}
	msg := fmt.Sprintf("%s\n\nwiggum landed %s (branch %s) from %s.\n\nWiggum-Story: %s\nWiggum-Machine: %s\n",
		oneLine(spec.Subject), story, strings.TrimPrefix(BranchPrefix, "refs/heads/")+mustKey(story), oneLine(me.Host), oneLine(story), oneLine(me.String()))
	if me != r.Me {
		msg += "Wiggum-Landed-By: " + r.Me.String() + "\n"
	}
	if r.obj.w != nil && r.obj.author != "" && r.obj.committer != "" && !repo.Sign {
		commit, err := r.obj.commit(ticked, []string{base, tip}, r.obj.author, r.obj.committer, time.Now(), []byte(msg))
		if err != nil {
			return "", nil, fmt.Errorf("remote: write the landing commit: %w", err)
		}
		return commit, nil, nil
	}
	commit, err = repo.CommitTree(ctx, ticked, []string{base, tip}, msg, repo.Sign)
	if err != nil {
		return "", nil, fmt.Errorf("remote: write the landing commit: %w", err)
	}
	return commit, nil, nil
}

func mustKey(story string) string {
	k, err := Key(story)
	if err != nil {
		return "?"
	}
	return k
}

// tickTree returns tree with story ticked in its plan (whose content is
// data), replacing one blob with mktree along the plan's path (no index,
// so its cost does not grow with the repository).
//
// root is tree's raw content when already read (nil: read it).
func (r *Remote) tickTree(ctx context.Context, tree string, root, data []byte, planRel, story string, add *Added) (string, error) {
	p, dir, err := planFile(data, planRel)
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	if err := p.MarkDone(story); err != nil {
		return "", fmt.Errorf("remote: tick %s: %w", story, err)
	}
	if err := addStories(p, add); err != nil {
		return "", fmt.Errorf("remote: add the stories %s added: %w", story, err)
	}
	ticked, err := statefile.ReadFile(p.Path())
	if err != nil {
		return "", err
	}
	var blob string
	if r.obj.w != nil {
		blob, err = r.obj.write("blob", ticked)
	} else {
		blob, err = r.Repo.RunEnv(ctx, nil, ticked, "hash-object", "-w", "--stdin")
	}
	if err != nil {
		return "", fmt.Errorf("remote: write the ticked plan: %w", err)
	}
	return r.replaceBlob(ctx, tree, root, strings.Split(planRel, "/"), strings.TrimSpace(blob))
}

// addStories appends add's stories to the plan p, unless p has one of
// them already (another machine's landing added it, say).
func addStories(p plan.Plan, add *Added) error {
	if add == nil || len(add.IDs) == 0 {
		return nil
	}
	stories, err := p.Stories()
	if err != nil {
		return err
	}
	for _, s := range stories {
		if slices.Contains(add.IDs, s.ID) {
			return nil
		}
	}
	if add.Objects != nil {
		if pj, ok := p.(*plan.PRDJSON); ok {
			return pj.Append(add.Objects)
		}
		return nil
	}
	if len(add.Lines) == 0 {
		return nil
	}
	data, err := statefile.ReadFile(p.Path())
	if err != nil {
		return err
	}
	if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
		data = append(data, '\n')
	}
	data = append(data, []byte(strings.Join(add.Lines, "\n")+"\n")...)
	return os.WriteFile(p.Path(), data, 0o644)
}

// replaceBlob writes tree with the blob at path replaced; raw is tree's
// content when already read (nil: ls-tree reads it).
func (r *Remote) replaceBlob(ctx context.Context, tree string, raw []byte, path []string, blob string) (string, error) {
	var entries []string
	if raw != nil {
		var ok bool
		if entries, ok = treeEntries(raw); !ok {
			raw = nil
		}
	}
	if raw == nil {
		out, err := r.Repo.Run(ctx, "ls-tree", "-z", tree)
		if err != nil {
			return "", fmt.Errorf("remote: read tree %s: %w", tree, err)
		}
		entries = git.SplitZ(out)
	}
	found := false
	for i, e := range entries {
		meta, name, ok := strings.Cut(e, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 || name != path[0] {
			continue
		}
		sha := blob
		if len(path) > 1 {
			if f[1] != "tree" {
				return "", fmt.Errorf("remote: %s is not a directory in the target", name)
			}
			var err error
			if sha, err = r.replaceBlob(ctx, f[2], nil, path[1:], blob); err != nil {
				return "", err
			}
		}
		entries[i] = f[0] + " " + f[1] + " " + sha + "\t" + name
		found = true
		break
	}
	if !found {
		return "", fmt.Errorf("remote: %s is missing from the target's tree", strings.Join(path, "/"))
	}
	if r.obj.w != nil {
		return r.obj.tree(entries)
	}
	in := strings.Join(entries, "\x00") + "\x00"
	newTree, err := r.Repo.RunEnv(ctx, nil, []byte(in), "mktree", "-z")
	if err != nil {
		return "", fmt.Errorf("remote: write a tree: %w", err)
	}
	return strings.TrimSpace(newTree), nil
}

// treeEntries reads a raw SHA-1 tree object as ls-tree -z entries ("mode
// type id\tname"); ok is false when it is not one.
func treeEntries(raw []byte) ([]string, bool) {
	var out []string
	for len(raw) > 0 {
		sp := bytes.IndexByte(raw, ' ')
		nul := bytes.IndexByte(raw, 0)
		if sp <= 0 || nul < sp || len(raw) < nul+1+20 {
			return nil, false
		}
		mode, name := string(raw[:sp]), string(raw[sp+1:nul])
		typ := "blob"
		switch mode {
		case "40000":
			typ = "tree"
		case "160000":
			typ = "commit"
		}
		out = append(out, fmt.Sprintf("%06s %s %s\t%s", mode, typ, hex.EncodeToString(raw[nul+1:nul+21]), name))
		raw = raw[nul+21:]
	}
	return out, true
}

// markConflict publishes the branch, releases the claim and marks the
// story conflicted, in one atomic push.
func (h *Held) markConflict(ctx context.Context, spec LandSpec, tip string, paths []string) error {
	r := h.r
	c := Conflict{Story: h.Story, Machine: r.Me.ID, Host: r.Me.Host, Time: r.now().UTC(), Branch: h.Branch(), Target: spec.Target, Plan: spec.PlanRel, Paths: paths}
	body, err := json.Marshal(c)
	if err != nil {
		return err
	}
	marker, err := r.metaCommit(ctx, "wiggum conflict "+h.Story, body, tip)
	if err != nil {
		return err
	}
	key := mustKey(h.Story)
	ups := []update{{dst: h.claim.Ref, expect: h.claim.Commit}, {src: marker, dst: ConflictsPrefix + key, expect: ""}}
	if tip != h.pushed && h.ours(ctx, tip) {
		ups = append(ups, update{src: tip, dst: h.Branch(), expect: h.pushed})
	}
	bad, err := r.push(ctx, "mark "+h.Story+" conflicted", ups)
	if err != nil {
		return err
	}
	if _, ok := bad[h.claim.Ref]; ok {
		lerr := &LeaseLostError{Story: h.Story, Now: bad[h.claim.Ref]}
		h.markLost(lerr)
		return lerr
	}
	if len(bad) > 0 {
		return fmt.Errorf("remote %s: could not mark %s conflicted (%s changed meanwhile); the claim is kept", r.Name, h.Story, strings.Join(keys(bad), ", "))
	}
	h.done = true
	if !h.foreign {
		h.pushed = tip
	}
	return &ConflictError{Story: h.Story, Branch: h.Branch(), Target: spec.Target, Marker: ConflictsPrefix + key, Paths: paths}
}

// rewritten reports whether the target tip built (one the story's work,
// tip, holds) is no longer in the history of the target's tip base: the
// target was rewritten on the server since, and merging tip into base
// would bring back the commits the rewrite removed. A commit that cannot
// be read says no.
func (r *Remote) rewritten(ctx context.Context, built, tip, base string) bool {
	if built == "" || built == base {
		return false
	}
	if in, err := r.Repo.OK(ctx, "merge-base", "--is-ancestor", built, base); err != nil || in {
		return false
	}
	in, err := r.Repo.OK(ctx, "merge-base", "--is-ancestor", built, tip)
	return err == nil && in
}

// markRewritten marks the story for a person as markConflict does: its
// work was built on a target tip the rewritten target no longer holds.
func (h *Held) markRewritten(ctx context.Context, spec LandSpec, tip string) error {
	err := h.markConflict(ctx, spec, tip, nil)
	var ce *ConflictError
	if errors.As(err, &ce) {
		return &TargetRewrittenError{Story: ce.Story, Branch: ce.Branch, Target: ce.Target, Marker: ce.Marker, Built: h.seen}
	}
	return err
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func isTimeout(err error) bool {
	var ne *NetworkError
	return errors.As(err, &ne) && ne.Timeout
}

// landReady lands the story of cl, a ready claim in v (a fetch) whose
// holder can no longer land it - its lease ran out, or its process, of
// this very clone, is gone - with the work the claim names, finished on
// its branch on the server: one atomic push moves the target from v's tip
// over the merge (the story ticked in the plan, the commit naming the
// holder's machine and this one as the lander), and deletes the claim and
// the branch, each leased on the exact value v saw. So a machine killed
// after its work was finished and marked ready has it landed once, and its
// agent is never run on the story again.
//
// raced: the server moved since v (another machine landed, or took the
// claim); nothing changed, look again. Neither l nor raced: the work does
// not merge or tick cleanly any more; nothing changed, and the story is
// left to a takeover, whose agent goes on from the branch.
func (r *Remote) landReady(ctx context.Context, v *View, cl *Claim, planRel string) (l *Landed, raced bool, err error) {
	key := strings.TrimPrefix(cl.Ref, ClaimsPrefix)
	if !readyHere(v, cl, planRel) {
		return nil, false, nil
	}
	if r.rewritten(ctx, cl.Base, cl.Ready, v.Tip) {
		return nil, false, nil
	}
	spec := LandSpec{Target: cl.Target, PlanRel: cl.Plan, Subject: cl.Subject, Add: cl.Add}
	commit, paths, err := r.landingCommit(ctx, v.Tip, cl.Ready, spec, cl.Story, Machine{ID: cl.Machine, Host: cl.Host})
	if err != nil || paths != nil {
		return nil, false, nil
	}
	ups := []update{
		{src: commit, dst: v.Target, expect: v.Tip},
		{dst: cl.Ref, expect: cl.Commit},
		{dst: BranchPrefix + key, expect: cl.Ready},
	}
	bad, err := r.pushLanding(ctx, "land "+cl.Story+", finished by "+cl.Host+"/"+cl.Machine, ups)
	if err != nil {
		return nil, false, err
	}
	if len(bad) > 0 {
		return nil, true, nil
	}
	return &Landed{Commit: commit, Base: v.Tip, Attempts: 1, By: r.Me.String()}, false, nil
}

// readyHere reports whether cl says its story's work is finished for
// v's target and the plan planRel, with the story's branch on the server
// (as v saw it) at exactly the commit the claim names.
func readyHere(v *View, cl *Claim, planRel string) bool {
	key := strings.TrimPrefix(cl.Ref, ClaimsPrefix)
	return !cl.Unreadable && cl.Ready != "" && cl.Target == v.Target && cl.Plan == planRel && v.Tip != "" &&
		v.Branches[key] == cl.Ready && v.Conflicts[key] == nil
}
