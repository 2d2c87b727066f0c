package remote

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/internal/gitserver"
	"github.com/wiggum-dev/wiggum/internal/plan"
)

// git advertises refs one at a time, so a fetch made while another
// machine's push is applied can see that push half done: the new target
// tip, with this machine's ready story carried and ticked, and the story's
// claim and branch the same push deletes. The holder's landing must find
// its story landed by the carrier - the landing commit merges its own
// work - not fail with "already done" and keep the branch (seen once in
// a 4-machine benchmark run: exit 5, "1 branch could not be merged").
func TestCarriedStorySeenInATornView(t *testing.T) {
	eachTransport(t, func(t *testing.T, f *fixture) {
		c := carry(t, f, true)
		// The server as a fetch reads it halfway through a's push: the
		// target moved, S-2's claim and branch not yet deleted.
		gitIn(t, f.bare, "update-ref", c.ready.Ref, c.ready.Commit)
		gitIn(t, f.bare, "update-ref", c.hb.Branch(), c.tip)
		wantCarried(t, c.b, c.hb, c.brb, c.a, "b's landing of a story carried, seen in a torn view")
		if got := f.refs()[target]; got != c.now {
			t.Fatalf("b moved the target from %s to %s", c.now, got)
		}
		if plan := gitIn(t, f.bare, "show", "main:plan.md"); strings.Count(plan, "- [x] S-2") != 1 {
			t.Fatalf("plan on main:\n%s", plan)
		}
	})
}

// carried is the fixture's two machines after a landed S-1 and carried
// b's S-2 with it, in one push: b's claim on S-2 was marked ready (with
// branch brb at tip) and, unless heard, b never heard the server take
// that mark. before is the target before a's landing.
type carried struct {
	a, b        *Remote
	hb          *Held
	brb, tip    string
	ready       Claim // S-2's ready claim, as the server took it
	before, now string
}

func carry(t *testing.T, f *fixture, heard bool) *carried {
	t.Helper()
	ctx := context.Background()
	c := &carried{a: f.machine("a", time.Minute, 0), b: f.machine("b", time.Minute, 0)}
	morePlan(t, c.a)
	ha := claim(t, c.a, "S-1")
	bra := work(t, c.a, "S-1", ha.Start, "s1.txt", "S-1\n")
	c.hb = claim(t, c.b, "S-2")
	c.brb = work(t, c.b, "S-2", c.hb.Start, "s2.txt", "S-2\n")
	c.tip = gitIn(t, c.b.Repo.Root, "rev-parse", c.brb)
	heardClaim, heardPushed := c.hb.claim, c.hb.pushed
	c.b.markReady(ctx, []*member{{m: &Member{H: c.hb, Spec: landSpec(c.hb, c.brb)}, tip: c.tip}})
	c.ready = c.hb.Claim()
	if c.ready.Ready != c.tip || f.refs()[c.ready.Ref] != c.ready.Commit {
		t.Fatalf("S-2 not marked ready: %+v, server %v", c.ready, f.refs())
	}
	if !heard {
		c.hb.claim, c.hb.pushed = heardClaim, heardPushed
	}
	c.before = f.refs()[target]
	c.a.landGuess = guess{skip: 1}
	ma := &Member{H: ha, Spec: landSpec(ha, bra)}
	c.a.LandGroup(ctx, []*Member{ma}, nil)
	if ma.Err != nil || strings.Join(ma.Landed.Carried, ",") != "S-2" {
		t.Fatalf("a's landing: %+v %v", ma.Landed, ma.Err)
	}
	c.now = f.refs()[target]
	return c
}

// A story done on the target by a landing of other work than the holder's
// is "already done": landingOf names a landing only when it merged the
// holder's own tip.
func TestLandingOfWantsTheHoldersWork(t *testing.T) {
	eachTransport(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		a, b := f.machine("a", time.Minute, 0), f.machine("b", time.Minute, 0)
		morePlan(t, a)
		ha := claim(t, a, "S-1")
		bra := work(t, a, "S-1", ha.Start, "s1.txt", "S-1\n")
		ma := &Member{H: ha, Spec: landSpec(ha, bra)}
		a.LandGroup(ctx, []*Member{ma}, nil)
		if ma.Err != nil {
			t.Fatal(ma.Err)
		}
		// b made its own S-1 work (say, before a claim it never had).
		if _, err := b.Fetch(ctx, target); err != nil {
			t.Fatal(err)
		}
		other := work(t, b, "S-1", ha.Start, "s1.txt", "b's S-1\n")
		mine := gitIn(t, a.Repo.Root, "rev-parse", bra)
		if l := b.landingOf(ctx, target, "S-1", gitIn(t, b.Repo.Root, "rev-parse", other)); l != nil {
			t.Fatalf("S-1's landing taken for b's other work: %+v", l)
		}
		l := b.landingOf(ctx, target, "S-1", "", mine)
		if l == nil || l.Commit != ma.Landed.Commit || l.By != "" {
			t.Fatalf("S-1's landing of a's own work: %+v, want commit %s pushed by its holder", l, ma.Landed.Commit)
		}
		if l := b.landingOf(ctx, target, "S-2", mine); l != nil {
			t.Fatalf("S-2 found landed before it was: %+v", l)
		}
	})
}

// The other half of a torn fetch: the target read before the carrier's
// push and the claims after it, so the holder's ready claim is gone and
// its story not done. That is not a lost claim: the server's target has
// moved on, and the next fetch shows the story landed by the carrier. A
// ready claim released on the server while the target stays put is lost.
func TestReadyClaimGoneInATornView(t *testing.T) {
	eachTransport(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		c := carry(t, f, true)
		b, hb := c.b, c.hb
		// b's view as a torn fetch leaves it: the claims after a's push,
		// the target before it.
		if _, err := b.Fetch(ctx, target); err != nil {
			t.Fatal(err)
		}
		gitIn(t, b.Repo.Root, "update-ref", b.Tracking(target), c.before)
		v, err := b.Local(ctx, target, "")
		if err != nil {
			t.Fatal(err)
		}
		if v.Claims[hb.key] != nil || v.Tip != c.before {
			t.Fatalf("not the torn view: tip %s, claim %+v", v.Tip, v.Claims[hb.key])
		}
		m := &Member{H: hb, Spec: landSpec(hb, c.brb)}
		b.landedByOther(ctx, m, v, 1)
		if m.Err != nil || m.Landed != nil || hb.LostErr() != nil {
			t.Fatalf("S-2 settled from a torn view: %+v %v (lost: %v)", m.Landed, m.Err, hb.LostErr())
		}
		wantCarried(t, b, hb, c.brb, c.a, "b's landing after a torn view")

		// Released on the server, the target where the view saw it: lost.
		hc := claim(t, b, "S-3")
		brc := work(t, b, "S-3", hc.Start, "s3.txt", "S-3\n")
		b.markReady(ctx, []*member{{m: &Member{H: hc, Spec: landSpec(hc, brc)}, tip: gitIn(t, b.Repo.Root, "rev-parse", brc)}})
		if hc.Claim().Ready == "" {
			t.Fatal("S-3 not marked ready")
		}
		gitIn(t, f.bare, "update-ref", "-d", hc.Claim().Ref)
		b.landGuess = guess{skip: 1}
		mc := &Member{H: hc, Spec: landSpec(hc, brc)}
		b.LandGroup(ctx, []*Member{mc}, nil)
		var lost *LeaseLostError
		if !errors.As(mc.Err, &lost) || mc.Landed != nil || hc.LostErr() == nil {
			t.Fatalf("a released ready claim: %+v %v", mc.Landed, mc.Err)
		}
		if plan := gitIn(t, f.bare, "show", "main:plan.md"); strings.Contains(plan, "- [x] S-3") {
			t.Fatal("S-3 landed past its released claim")
		}
	})
}

// A landing push whose answer never comes (the server took it, then hung
// past the client's timeout) counts as landed when the server shows the
// landing commit on the target - also when the read that checks shows the
// story's claim still there, as a read made while the server applies the
// push can (a post-receive hook stands in for that moment: it puts the
// claim back, then hangs; over git daemon wiggum pushes by itself and
// reads the answer before that hook runs, so there the landing is answered
// as usual). A push the server never took is a failure that changes
// nothing: see TestServerDiesMidPush.
func TestLandingWhoseAnswerWasLost(t *testing.T) {
	eachTransport(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		a := f.machine("a", time.Minute, 0)
		a.Timeout = time.Second
		h := claim(t, a, "S-1")
		branch := work(t, a, "S-1", h.Start, "s1.txt", "S-1\n")
		claimed := f.refs()[ClaimsPrefix+"S-1"]
		gitserver.Hook(t, f.bare, "post-receive", "git update-ref "+ClaimsPrefix+"S-1 "+claimed+"\nexec sleep 4 >/dev/null 2>&1\n")
		a.landGuess = guess{skip: 1}
		l, err := h.Land(ctx, landSpec(h, branch))
		gitserver.RemoveHook(t, f.bare, "post-receive")
		if err != nil {
			t.Fatalf("a landing the server took, its answer lost: %v", err)
		}
		if got := f.refs()[target]; got != l.Commit {
			t.Fatalf("main is %s, want the landing %s", got, l.Commit)
		}
		if plan := gitIn(t, f.bare, "show", "main:plan.md"); !strings.Contains(plan, "- [x] S-1") {
			t.Fatalf("plan on main:\n%s", plan)
		}
	})
}

// tornClaim has a land story and b claim it from a torn read of the
// server - the claim already deleted by a's landing, the target not yet
// moved - as git's one-ref-at-a-time advertisement can show it while the
// landing push is applied (seen in a 2-machine benchmark run: the second
// machine ran the story again, then failed with "already done on the
// target branch" and kept a branch that added nothing). It returns b's
// claim, the target before a's landing and the landing.
func tornClaim(t *testing.T, f *fixture, a, b *Remote, story string) (hb *Held, before, landed string) {
	t.Helper()
	before = f.refs()[target]
	ha := claim(t, a, story)
	br := work(t, a, story, ha.Start, strings.ToLower(story)+".txt", story+"\n")
	if _, err := ha.Land(context.Background(), landSpec(ha, br)); err != nil {
		t.Fatal(err)
	}
	landed = f.refs()[target]
	gitIn(t, f.bare, "update-ref", target, before)
	hb = claim(t, b, story)
	gitIn(t, f.bare, "update-ref", target, landed)
	if hb.Moved {
		t.Fatal("not a torn claim: the claim push saw the target move")
	}
	return hb, before, landed
}

// A story claimed from a torn view whose work adds nothing to the target
// (the agent found it done) ends without a failure: its claim and branch
// are deleted, nothing is kept. One whose branch has work the target
// lacks still fails "already done" and keeps it.
func TestTornClaimThatAddsNothingIsDropped(t *testing.T) {
	eachTransport(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		a, b := f.machine("a", time.Minute, 0), f.machine("b", time.Minute, 0)
		hb, _, landed := tornClaim(t, f, a, b, "S-1")
		// b's worktree started from the landing (its own fetch caught up)
		// and its agent committed nothing; the branch was published.
		if _, err := b.Fetch(ctx, target); err != nil {
			t.Fatal(err)
		}
		gitIn(t, b.Repo.Root, "branch", "wiggum/S-1", landed)
		hb.Follow("refs/heads/wiggum/S-1")
		if err := hb.Publish(ctx); err != nil {
			t.Fatal(err)
		}
		if f.refs()[hb.Branch()] != landed {
			t.Fatalf("branch not published: %v", f.refs())
		}
		_, err := hb.Land(ctx, landSpec(hb, "refs/heads/wiggum/S-1"))
		var already *AlreadyLandedError
		if !errors.As(err, &already) || !already.LandedElsewhere() {
			t.Fatalf("landing a torn claim that adds nothing: %v", err)
		}
		refs := f.refs()
		if refs[target] != landed || refs[hb.Claim().Ref] != "" || refs[hb.Branch()] != "" {
			t.Fatalf("server after the landing: %v", refs)
		}
		if err := hb.Release(ctx); err != nil {
			t.Fatalf("release after the drop: %v", err)
		}

		// The same tear, but b's agent committed work on the old tip.
		hc, before, landed2 := tornClaim(t, f, a, b, "S-2")
		br := work(t, b, "S-2", before, "b-s2.txt", "b's own S-2\n")
		tip := gitIn(t, b.Repo.Root, "rev-parse", br)
		_, err = hc.Land(ctx, landSpec(hc, br))
		if !errors.As(err, &already) || already.LandedElsewhere() {
			t.Fatalf("landing a torn claim with new work: %v", err)
		}
		refs = f.refs()
		if refs[target] != landed2 || refs[hc.Claim().Ref] != hc.Claim().Commit {
			t.Fatalf("server after the refused landing: %v", refs)
		}
		if got := gitIn(t, b.Repo.Root, "rev-parse", br); got != tip {
			t.Fatalf("b's work moved: %s, want %s", got, tip)
		}

		// Work that conflicts with the landed story's is "already done"
		// too, not a conflict marked for an operator to merge by hand.
		hd, before3, _ := tornClaim(t, f, a, b, "S-3")
		br3 := work(t, b, "S-3", before3, "s-3.txt", "b's own S-3\n")
		_, err = hd.Land(ctx, landSpec(hd, br3))
		var conflict *ConflictError
		if !errors.As(err, &already) || errors.As(err, &conflict) {
			t.Fatalf("landing a torn claim whose work conflicts with the landed story's: %v", err)
		}
		if ref := f.refs()[ConflictsPrefix+"S-3"]; ref != "" {
			t.Fatalf("S-3 marked conflicted: %s", ref)
		}
	})
}

// A story claimed ahead from a torn view is given back, not handed to an
// agent, once the target this clone has fetched since marks it done; one
// still open is handed out.
func TestClaimAheadLandedMeanwhileIsGivenBack(t *testing.T) {
	eachTransport(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		a, b := f.machine("a", time.Minute, 0), f.machine("b", time.Minute, 0)
		cb, err := NewCoordinator(ctx, b, b.Repo, target, "plan.md")
		if err != nil {
			t.Fatal(err)
		}
		open := claim(t, b, "S-2")
		hb, _, landed := tornClaim(t, f, a, b, "S-1")
		if _, err := b.Fetch(ctx, target); err != nil {
			t.Fatal(err)
		}
		for _, h := range []*Held{hb, open} {
			cb.reserve(h.Story)
			ah := &ahead{done: make(chan struct{}), h: h, story: plan.Story{ID: h.Story}}
			close(ah.done)
			cb.mu.Lock()
			cb.ahead = ah
			cb.mu.Unlock()
			got, s := cb.takeAhead(ctx, map[string]bool{})
			switch h {
			case hb:
				if got != nil {
					t.Fatalf("S-1, landed by a meanwhile, handed out: %+v", s)
				}
				if ref := f.refs()[hb.Claim().Ref]; ref != "" {
					t.Fatalf("S-1's claim kept: %s", ref)
				}
			case open:
				if got != open || s.ID != "S-2" || f.refs()[open.Claim().Ref] != open.Claim().Commit {
					t.Fatalf("S-2, still open, not handed out: %+v %+v", got, s)
				}
			}
		}
		if f.refs()[target] != landed {
			t.Fatal("the target moved")
		}
	})
}

// The tear inside the claim push itself: the server's advertisement shows
// the target before another machine's landing and the story's claim
// already deleted (a pre-receive hook stands in for that landing, moving
// the target after the advertisement). The claim is made; the target read
// after it shows the move, so the story is looked at again, found done and
// given back - no agent runs on it.
func TestClaimPushSeesATornAdvertisement(t *testing.T) {
	eachTransport(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		a, b := f.machine("a", time.Minute, 0), f.machine("b", time.Minute, 0)
		before := f.refs()[target]
		ha := claim(t, a, "S-1")
		br := work(t, a, "S-1", ha.Start, "s1.txt", "S-1\n")
		l, err := ha.Land(ctx, landSpec(ha, br))
		if err != nil {
			t.Fatal(err)
		}
		gitIn(t, f.bare, "update-ref", target, before)
		cb, err := NewCoordinator(ctx, b, b.Repo, target, "plan.md")
		if err != nil {
			t.Fatal(err)
		}
		gitserver.Hook(t, f.bare, "pre-receive", "unset GIT_QUARANTINE_PATH\ngit update-ref "+target+" "+l.Commit+"\ncat >/dev/null\n")
		h, s, err := cb.Claim(ctx, map[string]bool{"S-2": true, "S-3": true})
		gitserver.RemoveHook(t, f.bare, "pre-receive")
		if err != nil || h != nil {
			t.Fatalf("claimed %+v from a torn advertisement: %v", s, err)
		}
		refs := f.refs()
		if refs[target] != l.Commit || refs[ClaimsPrefix+"S-1"] != "" {
			t.Fatalf("server after the claim: %v", refs)
		}
	})
}
