package remote

import (
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/internal/gitserver"
)

// morePlan gives the fixture's plan seven stories (as pushed by r).
func morePlan(t *testing.T, r *Remote) {
	t.Helper()
	dir := r.Repo.Root
	text := planText + "- [ ] S-4: fourth\n- [ ] S-5: fifth\n- [ ] S-6: sixth\n- [ ] S-7: seventh\n"
	if err := os.WriteFile(filepath.Join(dir, "plan.md"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "commit", "-qam", "plan: six stories")
	gitIn(t, dir, "push", "-q", "origin", "main")
}

// rider is a test passenger: board returns what next gives (nil: none),
// and off records each outcome after check has looked at the server at
// that moment.
type rider struct {
	next  func(base string) *Held
	check func(h *Held, made, taken bool, err error)
	offs  []string
}

func (p *rider) board(_ context.Context, base string, _ []string) *Held { return p.next(base) }

func (p *rider) off(h *Held, made bool, tip string, taken bool, err error) {
	p.check(h, made, taken, err)
	switch {
	case made:
		p.offs = append(p.offs, "made")
	case taken:
		p.offs = append(p.offs, "taken")
	case err != nil:
		p.offs = append(p.offs, "failed")
	default:
		p.offs = append(p.offs, "raced")
	}
}

// A claim that rides along in a landing's push is made with it or not at
// all: when the claim part is refused (another machine claimed the story
// meanwhile, seen by the client in the advertisement or by the server at
// update time), nothing of the push is made and the landing goes again at
// once without it; when the landing part is refused (the target moved, or
// the landed story's claim was lost), the rider is not made either.
func TestRideIsAtomic(t *testing.T) {
	eachTransport(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		a, b := f.machine("a", time.Minute, 0), f.machine("b", time.Minute, 0)
		morePlan(t, a)
		land := func(h *Held, branch string, p passenger) *Member {
			m := &Member{H: h, Spec: landSpec(h, branch)}
			a.landGroup(ctx, []*Member{m}, nil, p)
			return m
		}
		newRider := func(story string) *Held {
			v, err := a.Local(ctx, target, "")
			if err != nil {
				t.Fatal(err)
			}
			h, err := a.newClaim(ctx, story, story, v)
			if err != nil {
				t.Fatal(err)
			}
			return h
		}

		// The claim part refused, by the client: b claimed S-2 after a's
		// last look at the server.
		h1 := claim(t, a, "S-1")
		br1 := work(t, a, "S-1", h1.Start, "s1.txt", "S-1\n")
		hb := claim(t, b, "S-2")
		base := f.refs()[target]
		c1, cb := h1.Claim(), hb.Claim()
		boarded := 0
		p := &rider{
			next: func(string) *Held {
				if boarded++; boarded > 1 {
					return nil
				}
				return newRider("S-2")
			},
			check: func(h *Held, made, taken bool, err error) {
				refs := f.refs()
				if made || !taken || refs[target] != base || refs[c1.Ref] != c1.Commit || refs[cb.Ref] != cb.Commit {
					t.Fatalf("a refused rider: made %v taken %v; main %s (was %s), S-1 claim %s, S-2 claim %s (b's %s)",
						made, taken, refs[target], base, refs[c1.Ref], refs[cb.Ref], cb.Commit)
				}
			},
		}
		m := land(h1, br1, p)
		if m.Err != nil || m.Landed == nil || m.Landed.Attempts != 1 {
			t.Fatalf("landing after a refused rider: %+v %v", m.Landed, m.Err)
		}
		refs := f.refs()
		if refs[target] != m.Landed.Commit || refs[h1.Claim().Ref] != "" || refs[hb.Claim().Ref] != hb.Claim().Commit {
			t.Fatalf("after the landing: main %s (landed %s), S-1 claim %q, S-2 claim %s (b's %s)", refs[target], m.Landed.Commit, refs[h1.Claim().Ref], refs[hb.Claim().Ref], hb.Claim().Commit)
		}
		if strings.Join(p.offs, ",") != "taken" {
			t.Fatalf("rider outcomes %v, want taken", p.offs)
		}

		// The claim part refused by the server: a hook creates S-3's
		// claim between the advertisement and the update.
		{
			h4 := claim(t, a, "S-4")
			br4 := work(t, a, "S-4", h4.Start, "s4.txt", "S-4\n")
			gitserver.Hook(t, f.bare, "pre-receive", `while read o n r; do
if [ "$r" = refs/wiggum/claims/S-3 ]; then env -u GIT_QUARANTINE_PATH git update-ref refs/wiggum/claims/S-3 $(git rev-parse refs/wiggum/claims/S-2); fi
done
exit 0
`)
			base = f.refs()[target]
			c4 := h4.Claim()
			boarded = 0
			p.offs = nil
			p.next = func(string) *Held {
				if boarded++; boarded > 1 {
					return nil
				}
				return newRider("S-3")
			}
			p.check = func(h *Held, made, taken bool, err error) {
				refs := f.refs()
				if made || !taken || refs[target] != base || refs[c4.Ref] != c4.Commit {
					t.Fatalf("server-refused rider: made %v taken %v err %v; main %s (was %s), S-4 claim %s", made, taken, err, refs[target], base, refs[c4.Ref])
				}
			}
			m = land(h4, br4, p)
			gitserver.RemoveHook(t, f.bare, "pre-receive")
			if m.Err != nil || f.refs()[target] != m.Landed.Commit || strings.Join(p.offs, ",") != "taken" {
				t.Fatalf("landing after a rider the server refused: %+v %v, outcomes %v", m.Landed, m.Err, p.offs)
			}
		}

		// The landing part refused: the target moved since a's view. The
		// rider is not made with the refused push, and is made with the
		// landing that follows.
		h5 := claim(t, a, "S-5")
		br5 := work(t, a, "S-5", h5.Start, "s5.txt", "S-5\n")
		gitIn(t, b.Repo.Root, "pull", "-q", "origin", "main")
		if err := os.WriteFile(filepath.Join(b.Repo.Root, "other.txt"), []byte("b\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		gitIn(t, b.Repo.Root, "add", "other.txt")
		gitIn(t, b.Repo.Root, "commit", "-qm", "b moves main")
		gitIn(t, b.Repo.Root, "push", "-q", "origin", "main")
		a.landGuess = guess{} // a's first attempt builds on the tip it last saw
		r6 := newRider("S-6")
		p.offs = nil
		p.next = func(string) *Held { return r6 }
		p.check = func(h *Held, made, taken bool, err error) {
			got := f.refs()[h.Claim().Ref]
			if made != (got == h.Claim().Commit) || (!made && got != "") {
				t.Fatalf("rider made %v, its claim on the server %q", made, got)
			}
		}
		m = land(h5, br5, p)
		if m.Err != nil || m.Landed.Attempts != 2 || strings.Join(p.offs, ",") != "raced,made" {
			t.Fatalf("landing on a moved target: %+v %v, rider outcomes %v", m.Landed, m.Err, p.offs)
		}
		refs = f.refs()
		if refs[target] != m.Landed.Commit || refs[r6.Claim().Ref] != r6.Claim().Commit {
			t.Fatal("the landing and its rider are not both on the server")
		}

		// The landing part refused: the landed story's claim was taken
		// away. Neither is made, and nothing more is pushed.
		h6 := r6
		br6 := work(t, a, "S-6", m.Landed.Commit, "s6.txt", "S-6\n")
		if _, err := b.ReleaseStory(ctx, target, "S-6", true); err != nil {
			t.Fatal(err)
		}
		base = f.refs()[target]
		r7 := newRider("S-7")
		p.offs = nil
		p.next = func(string) *Held { return r7 }
		p.check = func(h *Held, made, taken bool, err error) {
			if made || f.refs()[h.Claim().Ref] != "" {
				t.Fatalf("rider of a refused landing: made %v, on the server %q", made, f.refs()[h.Claim().Ref])
			}
		}
		_, before := a.Counts()
		m = land(h6, br6, p)
		_, after := a.Counts()
		if !IsLeaseLost(m.Err) || f.refs()[target] != base || after-before != 1 || strings.Join(p.offs, ",") != "raced" {
			t.Fatalf("landing a lost claim with a rider: %v, main %s (was %s), %d pushes, outcomes %v", m.Err, f.refs()[target], base, after-before, p.offs)
		}
		gitIn(t, f.bare, "fsck", "--strict", "--no-dangling")
	})
}

// In steady state a coordinator claims ahead inside its landings' pushes:
// a story landed and the next one claimed cost one push.
func TestClaimRidesAlong(t *testing.T) {
	eachTransport(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		a := f.machine("a", time.Minute, 0)
		morePlan(t, a)
		c, err := NewCoordinator(ctx, a, a.Repo, target, "plan.md")
		if err != nil {
			t.Fatal(err)
		}
		c.Ahead, c.Ride = true, true
		busy := map[string]bool{}
		// The first claim, and the one made ahead of the second, are
		// pushes of their own: no landing is under way.
		h1, s1, err := c.Claim(ctx, busy)
		if err != nil || h1 == nil {
			t.Fatalf("first claim: %v", err)
		}
		busy[s1.ID] = true
		br1 := work(t, a, s1.ID, h1.Start, "f1.txt", "one\n")
		c.Ended(h1)
		h2, s2, err := c.Claim(ctx, busy)
		if err != nil || h2 == nil || !h2.Ahead || h2.Rode {
			t.Fatalf("second claim: %+v %v", h2, err)
		}
		busy[s2.ID] = true
		_, before := a.Counts()
		l, err := c.Land(ctx, h1, br1, "Merge "+s1.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		c.mu.Lock()
		ah := c.ahead
		c.mu.Unlock()
		<-ah.done
		_, after := a.Counts()
		if ah.h == nil || !ah.h.Rode || after-before != 1 {
			t.Fatalf("claim ahead %+v after %d push(es), want one riding push", ah.h, after-before)
		}
		refs := f.refs()
		if refs[target] != l.Commit || refs[h1.Claim().Ref] != "" || refs[ah.h.Claim().Ref] != ah.h.Claim().Commit || refs[h2.Claim().Ref] != h2.Claim().Commit {
			t.Fatalf("server after the riding push: %v", refs)
		}
		if ah.h.Start != l.Commit || ah.story.ID == s1.ID || ah.story.ID == s2.ID {
			t.Fatalf("rider %s starts at %s, want a new story at the landing %s", ah.story.ID, ah.h.Start, l.Commit)
		}
		// A run that ends gives the rider back.
		if err := c.Done(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.Release(ctx, h2); err != nil {
			t.Fatal(err)
		}
		for ref := range f.refs() {
			if strings.HasPrefix(ref, ClaimsPrefix) {
				t.Fatalf("%s left on the server", ref)
			}
		}
		// With no landing under way, a claim ahead does not wait for one.
		h3, s3, err := c.Claim(ctx, map[string]bool{})
		if err != nil || h3 == nil {
			t.Fatalf("claim: %v", err)
		}
		c.mu.Lock()
		ah = c.ahead
		c.mu.Unlock()
		<-ah.done
		if ah.h == nil || ah.h.Rode || ah.story.ID == s3.ID {
			t.Fatalf("claim ahead with no landing: %+v", ah.h)
		}
		if err := c.Done(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.Release(ctx, h3); err != nil {
			t.Fatal(err)
		}
	})
}

// wantCarried lands holder's story h from branch and wants it found
// landed by carrier, with no push.
func wantCarried(t *testing.T, holder *Remote, h *Held, branch string, carrier *Remote, what string) {
	t.Helper()
	holder.landGuess = guess{skip: 1}
	_, q0 := holder.Counts()
	m := &Member{H: h, Spec: landSpec(h, branch)}
	holder.LandGroup(context.Background(), []*Member{m}, nil)
	_, q1 := holder.Counts()
	if m.Err != nil || m.Landed == nil || m.Landed.By != carrier.Me.String() || q1 != q0 {
		t.Fatalf("%s: %+v %v, %d pushes", what, m.Landed, m.Err, q1-q0)
	}
}

// landSpec lands h's story from branch onto the fixture's target.
func landSpec(h *Held, branch string) LandSpec {
	return LandSpec{Target: target, Branch: branch, PlanRel: "plan.md", Subject: "Merge " + h.Story}
}

// A story whose landing lost a race is marked ready on the server (its
// claim names the branch tip, published with it), and the next machine
// to land carries it in its own atomic push, leased on the exact ready
// claim and branch: one push lands both, the holder then finds its story
// landed and pushes nothing. A ready claim that changes under the
// carrier's push fails that push whole: nothing of it lands.
func TestReadyStoriesAreCarried(t *testing.T) {
	eachTransport(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		a, b := f.machine("a", time.Minute, 0), f.machine("b", time.Minute, 0)
		morePlan(t, a)
		ready := func(r *Remote, h *Held, branch string) {
			t.Helper()
			tip := gitIn(t, r.Repo.Root, "rev-parse", branch)
			r.markReady(ctx, []*member{{m: &Member{H: h, Spec: landSpec(h, branch)}, tip: tip}})
			c := h.Claim()
			refs := f.refs()
			if c.Ready != tip || refs[c.Ref] != c.Commit || refs[h.Branch()] != tip {
				t.Fatalf("%s not marked ready: claim %+v, server claim %s, branch %s", h.Story, c, refs[c.Ref], refs[h.Branch()])
			}
		}
		ha := claim(t, a, "S-1")
		bra := work(t, a, "S-1", ha.Start, "s1.txt", "S-1\n")
		hb := claim(t, b, "S-2")
		brb := work(t, b, "S-2", hb.Start, "s2.txt", "S-2\n")
		ready(b, hb, brb)
		before := f.refs()[target]

		// a lands S-1 and carries b's S-2, in one push.
		a.landGuess = guess{skip: 1}
		_, p0 := a.Counts()
		ma := &Member{H: ha, Spec: landSpec(ha, bra)}
		a.LandGroup(ctx, []*Member{ma}, nil)
		_, p1 := a.Counts()
		if ma.Err != nil || p1-p0 != 1 || strings.Join(ma.Landed.Carried, ",") != "S-2" {
			t.Fatalf("a's landing: %+v %v after %d pushes", ma.Landed, ma.Err, p1-p0)
		}
		refs := f.refs()
		// The carried story's merge is on top of a's own.
		if gitIn(t, f.bare, "rev-parse", "main^1") != ma.Landed.Commit || refs[ClaimsPrefix+"S-1"] != "" || refs[ClaimsPrefix+"S-2"] != "" || refs[hb.Branch()] != "" {
			t.Fatalf("server after carrying S-2: %v", refs)
		}
		plan := gitIn(t, f.bare, "show", "main:plan.md")
		if !strings.Contains(plan, "- [x] S-1") || !strings.Contains(plan, "- [x] S-2") {
			t.Fatalf("plan on main:\n%s", plan)
		}
		if got := gitIn(t, f.bare, "show", "main:s2.txt"); got != "S-2" {
			t.Fatalf("b's work did not land: %q", got)
		}
		if n := gitIn(t, f.bare, "rev-list", "--count", "--merges", before+"..main"); n != "2" {
			t.Fatalf("%s merges landed, want 2", n)
		}
		if by := gitIn(t, f.bare, "log", "-1", "--format=%(trailers:key=Wiggum-Landed-By,valueonly)%(trailers:key=Wiggum-Machine,valueonly,separator=%x20)", "main"); !strings.Contains(by, a.Me.String()) || !strings.Contains(by, b.Me.String()) {
			t.Fatalf("S-2's landing commit does not say whose work it is and who landed it: %q", by)
		}

		// b finds its story landed, and pushes nothing.
		wantCarried(t, b, hb, brb, a, "b's landing of a carried story")

		// A ready claim that changes between the carrier's view and its
		// push (a hook stands in for its holder) fails the push whole;
		// the carrier lands its own story alone on its next try.
		hc := claim(t, a, "S-3")
		brc := work(t, a, "S-3", ma.Landed.Commit, "s3.txt", "S-3\n")
		hd := claim(t, b, "S-4")
		brd := work(t, b, "S-4", ma.Landed.Commit, "s4.txt", "S-4\n")
		plain := hd.Claim().Commit
		ready(b, hd, brd)
		gitserver.Hook(t, f.bare, "pre-receive", `while read o n r; do
if [ "$r" = refs/wiggum/claims/S-4 ]; then env -u GIT_QUARANTINE_PATH git update-ref refs/wiggum/claims/S-4 `+plain+`; fi
done
exit 0
`)
		before = f.refs()[target]
		a.landGuess = guess{skip: 1}
		mc := &Member{H: hc, Spec: landSpec(hc, brc)}
		a.LandGroup(ctx, []*Member{mc}, nil)
		gitserver.RemoveHook(t, f.bare, "pre-receive")
		refs = f.refs()
		if mc.Err != nil || mc.Landed.Attempts != 2 || len(mc.Landed.Carried) != 0 || refs[target] != mc.Landed.Commit {
			t.Fatalf("landing past a changed ready claim: %+v %v", mc.Landed, mc.Err)
		}
		if refs[ClaimsPrefix+"S-4"] != plain || refs[hd.Branch()] != hd.Claim().Ready {
			t.Fatalf("S-4's claim %s (want %s), branch %s", refs[ClaimsPrefix+"S-4"], plain, refs[hd.Branch()])
		}
		if n := gitIn(t, f.bare, "rev-list", "--count", "--merges", before+"..main"); n != "1" {
			t.Fatalf("%s merges landed, want 1 (S-3 alone)", n)
		}
		if plan := gitIn(t, f.bare, "show", "main:plan.md"); strings.Contains(plan, "- [x] S-4") {
			t.Fatal("S-4 landed past its changed claim")
		}
		gitIn(t, f.bare, "fsck", "--strict", "--no-dangling")
	})
}

// A mark-ready push whose answer never came (it timed out after the server
// took it) leaves the holder thinking its claim plain while the server has
// it ready, and another machine may carry the story. The holder's next
// landing then finds the story done on the target: it must find its story
// landed by the carrier, not fail with "already done" and push nothing.
func TestCarriedStoryOfUnheardMarkReady(t *testing.T) {
	eachTransport(t, func(t *testing.T, f *fixture) {
		// b marks S-2 ready and the server takes it, but b never hears:
		// its claim is as before; a lands S-1 and carries S-2.
		c := carry(t, f, false)
		if c.hb.claim.Ready != "" {
			t.Fatalf("b heard its mark: %+v", c.hb.claim)
		}
		// b's landing finds S-2 landed by a, pushing nothing.
		wantCarried(t, c.b, c.hb, c.brb, c.a, "b's landing of a story carried after an unheard mark")
		refs := f.refs()
		if refs[ClaimsPrefix+"S-2"] != "" || refs[c.hb.Branch()] != "" || gitIn(t, f.bare, "show", "main:s2.txt") != "S-2" {
			t.Fatalf("server after S-2 was carried: %v", refs)
		}
	})
}

// A landing reads the merged tree with the plan, in one cat-file: its
// entries must be what ls-tree says, for every kind of entry.
func TestTreeEntriesMatchLsTree(t *testing.T) {
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q")
	for name, content := range map[string]string{"a.txt": "a\n", "d/b.txt": "b\n", "run.sh": "#!/bin/sh\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "add", "-A")
	tree := gitIn(t, dir, "write-tree")
	// A gitlink (submodule entry) as well.
	head := gitIn(t, dir, "commit-tree", tree, "-m", "x")
	gitIn(t, dir, "update-index", "--add", "--cacheinfo", "160000,"+head+",sub")
	tree = gitIn(t, dir, "write-tree")
	cmd := exec.Command("git", "cat-file", "tree", tree)
	cmd.Dir = dir
	data, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	got, ok := treeEntries(data)
	if !ok {
		t.Fatal("not read as a tree")
	}
	want := strings.Split(strings.TrimRight(gitIn(t, dir, "ls-tree", "-z", tree), "\x00"), "\x00")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("entries:\n%s\nls-tree:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, ok := treeEntries([]byte("100644 x")); ok {
		t.Fatal("a cut tree was read")
	}
}

// Against git daemon, pushes are spoken by this process on its own
// connection (not git push through git-remote-fd), and say what git
// push would: leases checked by the client and by the server, atomic
// refusals whole, the server's report read.
func TestDaemonPushIsDirect(t *testing.T) {
	f := newFixture(t, "daemon")
	ctx := context.Background()
	a, b := f.machine("a", time.Minute, 0), f.machine("b", time.Minute, 0)
	if a.daemon == nil {
		t.Fatal("the daemon is not connected to directly")
	}
	h := claim(t, a, "S-1")
	branch := work(t, a, "S-1", h.Start, "a.txt", "a\n")
	// The server's report for a refusal at update time: b's claim of
	// S-2 is made by a hook between the advertisement and the update.
	gitserver.Hook(t, f.bare, "pre-receive", `while read o n r; do
if [ "$r" = refs/wiggum/claims/S-2 ]; then env -u GIT_QUARANTINE_PATH git update-ref refs/wiggum/claims/S-2 `+h.Claim().Commit+`; fi
done
echo "hook says hello" >&2
exit 0
`)
	v, err := a.Local(ctx, target, "")
	if err != nil {
		t.Fatal(err)
	}
	h2, err := a.newClaim(ctx, "S-2", "S-2", v)
	if err != nil {
		t.Fatal(err)
	}
	bad, err := a.sendPack(ctx, "claim S-2", []update{{src: h2.claim.Commit, dst: h2.claim.Ref, expect: ""}}, true)
	if err != nil || bad[h2.claim.Ref] != h.Claim().Commit {
		t.Fatalf("claim refused at update time: %v %v", bad, err)
	}
	gitserver.RemoveHook(t, f.bare, "pre-receive")
	// A landing through it; the server has every object it needs.
	if _, err := h.Land(ctx, LandSpec{Target: target, Branch: branch, PlanRel: "plan.md", Subject: "Merge S-1"}); err != nil {
		t.Fatal(err)
	}
	if a.noSendPack.Load() {
		t.Fatal("a fell back to git push")
	}
	if got := gitIn(t, f.bare, "show", "main:a.txt"); got != "a" {
		t.Fatalf("main:a.txt = %q", got)
	}
	// The server's own refusal, with what its hook said.
	gitserver.Hook(t, f.bare, "pre-receive", "echo 'no pushes today' >&2\nexit 1\n")
	_, err = b.sendPack(ctx, "claim S-3", []update{{src: gitIn(t, b.Repo.Root, "rev-parse", "HEAD"), dst: ClaimsPrefix + "S-3", expect: ""}}, false)
	var rej *ServerRejectedError
	if !errors.As(err, &rej) || !strings.Contains(rej.Message, "no pushes today") {
		t.Fatalf("a refusing hook: %v", err)
	}
	gitIn(t, f.bare, "fsck", "--strict", "--no-dangling")
}

// A push cancelled by its caller (not timed out) says so, and a server
// that hangs is given up at the timeout.
func TestDirectPushCancelled(t *testing.T) {
	f := newFixture(t, "daemon")
	a := f.machine("a", time.Minute, 0)
	a.daemon = parseDaemonURL("git://" + gitserver.Hang(t) + "/r.git")
	a.Timeout = 2 * time.Second
	up := []update{{src: gitIn(t, a.Repo.Root, "rev-parse", "HEAD"), dst: ClaimsPrefix + "S-1", expect: ""}}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	if _, err := a.sendPack(ctx, "claim S-1", up, false); !errors.Is(err, context.Canceled) || IsNetwork(err) {
		t.Fatalf("a cancelled push: %v", err)
	}
	_, err := a.sendPack(context.Background(), "claim S-1", up, false)
	if !isTimeout(err) {
		t.Fatalf("a push to a hanging server: %v", err)
	}
}

// A ready story whose holder can no longer land it (its lease ran out) is
// landed by the next machine that claims it - the holder's finished work
// as the claim names it, in one atomic push that deletes the claim and the
// branch - instead of being taken over and worked on again; a view the
// server moved on from lands nothing. A live ready claim is left to its
// holder.
func TestReadyStoryOfStoppedHolderLands(t *testing.T) {
	eachTransport(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		a := f.machine("a", 5*time.Second, 0)
		b := f.machine("b", 2*time.Second, 0)
		c := f.machine("c", 2*time.Second, 0)
		ha := claim(t, a, "S-1")
		bra := work(t, a, "S-1", ha.Start, "s1.txt", "S-1 by a\n")
		spec := LandSpec{Target: target, Branch: bra, PlanRel: "plan.md", Subject: "Merge S-1"}
		tip := gitIn(t, a.Repo.Root, "rev-parse", bra)
		a.markReady(ctx, []*member{{m: &Member{H: ha, Spec: spec}, tip: tip}})
		ready := ha.Claim()
		if ready.Ready != tip {
			t.Fatalf("S-1 not marked ready: %+v", ready)
		}

		// To c the claim is live: c lands nothing and takes nothing over.
		cc, err := NewCoordinator(ctx, c, c.Repo, target, "plan.md")
		if err != nil {
			t.Fatal(err)
		}
		vc, err := c.FetchPlan(ctx, target, "plan.md")
		if err != nil {
			t.Fatal(err)
		}
		if landed, raced, err := cc.landReady(ctx, vc, "S-1"); landed || raced || err != nil {
			t.Fatalf("c landed a live ready claim: %v %v %v", landed, raced, err)
		}

		// b's view goes old: c lands S-2 meanwhile. b's landing from it is
		// refused whole, and changes nothing.
		cb, err := NewCoordinator(ctx, b, b.Repo, target, "plan.md")
		if err != nil {
			t.Fatal(err)
		}
		var heard []string
		cb.OnReadyLanded = func(from *Claim, l *Landed) { heard = append(heard, from.Story+" "+from.Machine+" "+l.Commit) }
		vb, err := b.FetchPlan(ctx, target, "plan.md")
		if err != nil {
			t.Fatal(err)
		}
		elapse(b, 10*time.Second) // b has watched a's claims unrenewed past their lease
		hc := claim(t, c, "S-2")
		brc := work(t, c, "S-2", hc.Start, "s2.txt", "S-2 by c\n")
		if _, err := hc.Land(ctx, LandSpec{Target: target, Branch: brc, PlanRel: "plan.md", Subject: "Merge S-2"}); err != nil {
			t.Fatal(err)
		}
		before := f.refs()
		if landed, raced, err := cb.landReady(ctx, vb, "S-1"); landed || !raced || err != nil {
			t.Fatalf("b's landing from an old view: landed %v raced %v err %v", landed, raced, err)
		}
		if after := f.refs(); !maps.Equal(before, after) {
			t.Fatalf("a refused landing changed the server:\nbefore %v\nafter %v", before, after)
		}

		// b claims with S-1 the only story it may take: it lands a's work
		// and gets nothing to work on.
		h, story, err := cb.Claim(ctx, map[string]bool{"S-2": true, "S-3": true})
		if err != nil || h != nil {
			t.Fatalf("b's claim: %v %v %v, want nothing to work on", h, story, err)
		}
		refs := f.refs()
		if refs[ready.Ref] != "" || refs[ha.Branch()] != "" {
			t.Fatalf("the claim or the branch is left: %v", refs)
		}
		if gitIn(t, f.bare, "rev-parse", "main^2") != tip {
			t.Fatal("main's landing is not a merge of the work the claim named")
		}
		if got := gitIn(t, f.bare, "show", "main:s1.txt"); got != "S-1 by a" {
			t.Fatalf("a's work did not land: %q", got)
		}
		if plan := gitIn(t, f.bare, "show", "main:plan.md"); !strings.Contains(plan, "- [x] S-1") || !strings.Contains(plan, "- [x] S-2") {
			t.Fatalf("plan on main:\n%s", plan)
		}
		if by := gitIn(t, f.bare, "log", "-1", "--format=%(trailers:key=Wiggum-Machine,valueonly)%(trailers:key=Wiggum-Landed-By,valueonly)", "main"); !strings.Contains(by, a.Me.String()) || !strings.Contains(by, b.Me.String()) {
			t.Fatalf("the landing does not say whose work it is and who landed it: %q", by)
		}
		if len(heard) != 1 || !strings.HasPrefix(heard[0], "S-1 "+a.Me.ID+" "+refs[target]) {
			t.Fatalf("OnReadyLanded heard %v", heard)
		}

		// a, still trying (from a fetch), finds its story landed by b and
		// pushes nothing.
		a.landGuess = guess{skip: 1}
		_, p0 := a.Counts()
		m := &Member{H: ha, Spec: spec}
		a.LandGroup(ctx, []*Member{m}, nil)
		if _, p1 := a.Counts(); m.Err != nil || m.Landed == nil || m.Landed.By != b.Me.String() || p1 != p0 {
			t.Fatalf("a's landing after b landed its work: %+v %v, %d pushes", m.Landed, m.Err, p1-p0)
		}

		// A live ready claim with nothing else to claim: c waits for it
		// (its holder lands it, or its lease runs out), and neither lands
		// nor takes it over.
		h3 := claim(t, a, "S-3")
		br3 := work(t, a, "S-3", refs[target], "s3.txt", "S-3 by a\n")
		tip3 := gitIn(t, a.Repo.Root, "rev-parse", br3)
		a.markReady(ctx, []*member{{m: &Member{H: h3, Spec: LandSpec{Target: target, Branch: br3, PlanRel: "plan.md", Subject: "Merge S-3"}}, tip: tip3}})
		before = f.refs()
		cc.Poll = 100 * time.Millisecond
		var waits [][]*Claim
		cc.OnWait = func(held []*Claim) { waits = append(waits, held) }
		short, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
		h, _, _ = cc.Claim(short, nil)
		cancel()
		if h != nil {
			t.Fatalf("c claimed %s, a live ready claim", h.Story)
		}
		// It says so once, naming the claim it waits for, however often
		// it looked again.
		if len(waits) != 1 || len(waits[0]) != 1 || waits[0][0].Story != "S-3" || waits[0][0].Machine != a.Me.ID {
			t.Fatalf("OnWait heard %v, want once: S-3 held by %s", waits, a.Me.ID)
		}
		if after := f.refs(); !maps.Equal(before, after) {
			t.Fatalf("c changed the server:\nbefore %v\nafter %v", before, after)
		}
	})
}
