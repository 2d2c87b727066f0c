package remote

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/internal/gitserver"
)

// colleague pushes a commit of its own onto the server's story branch of
// story, from a clone of its own, and returns the commit.
func colleague(t *testing.T, f *fixture, story, file string) string {
	t.Helper()
	dir := filepath.Join(f.root, "colleague-"+file)
	gitserver.Clone(t, f.srv.URL("r.git"), dir)
	gitIn(t, dir, "fetch", "--quiet", "origin", BranchPrefix+story)
	gitIn(t, dir, "checkout", "--quiet", "-b", "x", "FETCH_HEAD")
	if err := os.WriteFile(filepath.Join(dir, file), []byte("colleague\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "add", file)
	gitIn(t, dir, "commit", "--quiet", "-m", "colleague fix")
	gitIn(t, dir, "push", "--quiet", "origin", "x:"+BranchPrefix+story)
	return gitIn(t, dir, "rev-parse", "HEAD")
}

// reachable reports whether commit is reachable from a ref of the server.
func reachable(t *testing.T, f *fixture, commit string) bool {
	t.Helper()
	return gitIn(t, f.bare, "for-each-ref", "--contains", commit) != ""
}

// A story branch moved on the server by someone not holding the claim (a
// colleague's fix pushed onto it) is not this machine's to delete: the
// landing goes on without touching it, keeps it and says so - not 30
// lost races and a give-up, and not, on the next run, a deletion leased on
// the colleague's commit.
func TestForeignCommitOnStoryBranchIsKept(t *testing.T) {
	f := newFixture(t, "file")
	ctx := context.Background()
	a := f.machine("a", time.Minute, 0)
	h := claim(t, a, "S-1")
	branch := work(t, a, "S-1", h.Start, "a.txt", "a\n")
	h.Follow(branch)
	if err := h.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	c := colleague(t, f, "S-1", "colleague.txt")
	// More work after the colleague's push: the renewal must not move the
	// branch over the colleague's commit, nor fail the claim's renewal.
	branch = work(t, a, "S-1", branch, "a2.txt", "more\n")
	if err := h.Renew(ctx); err != nil {
		t.Fatalf("renewal: %v", err)
	}
	spec := landSpec(h, branch)
	spec.MaxAttempts = 3
	l, err := h.Land(ctx, spec)
	if err != nil {
		t.Fatalf("landing: %v", err)
	}
	if l.Kept != c {
		t.Fatalf("Landed.Kept = %q, want the colleague's %s", l.Kept, c)
	}
	if got := f.refs()[BranchPrefix+"S-1"]; got != c {
		t.Fatalf("the story branch on the server is %q, want the colleague's %s", got, c)
	}
	if gitIn(t, f.bare, "show", "main:a2.txt") != "more" {
		t.Fatal("the story's own work did not land")
	}
}

// A claim made over a story branch on the server that the work landed does
// not contain (the resumed landing of a killed run, whose branch a
// colleague moved meanwhile) leaves that branch on the server.
func TestLandingKeepsAServerBranchItDoesNotContain(t *testing.T) {
	f := newFixture(t, "file")
	ctx := context.Background()
	a := f.machine("a", time.Minute, 0)
	h := claim(t, a, "S-1")
	branch := work(t, a, "S-1", h.Start, "a.txt", "a\n")
	h.Follow(branch)
	if err := h.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	c := colleague(t, f, "S-1", "colleague.txt")
	branch = work(t, a, "S-1", branch, "a2.txt", "more\n")
	// The process dies; a new one claims the story again from a view that
	// holds the colleague's branch.
	if err := h.Release(ctx); err == nil {
		t.Log("released")
	}
	gitIn(t, f.bare, "update-ref", "-d", ClaimsPrefix+"S-1")
	h2 := claim(t, a, "S-1")
	h2.Follow(branch)
	l, err := h2.Land(ctx, landSpec(h2, branch))
	if err != nil {
		t.Fatalf("landing: %v", err)
	}
	if !reachable(t, f, c) {
		t.Fatal("the colleague's commit is no longer reachable on the server")
	}
	if l.Kept != c {
		t.Fatalf("Landed.Kept = %q, want %s", l.Kept, c)
	}
}

// A target rewritten on the server while a story was worked on (a commit
// removed by a force-push, say a leaked secret) is not undone by the
// story's landing: the story's branch, built on the old target, would
// merge the removed commit back. The landing is refused, the branch kept
// and the story marked for a person.
func TestRewrittenTargetIsNotMergedBack(t *testing.T) {
	f := newFixture(t, "file")
	ctx := context.Background()
	before := gitIn(t, f.bare, "rev-parse", "main")
	secret := gitIn(t, f.bare, "commit-tree", "main^{tree}", "-p", "main", "-m", "X: oops, a secret")
	gitIn(t, f.bare, "update-ref", target, secret)
	a := f.machine("a", time.Minute, 0)
	h := claim(t, a, "S-1")
	branch := work(t, a, "S-1", h.Start, "a.txt", "a\n")
	h.Follow(branch)
	// The secret is removed from main by a force-push.
	gitIn(t, f.bare, "update-ref", target, before)
	_, err := h.Land(ctx, landSpec(h, branch))
	var rw *TargetRewrittenError
	if !errors.As(err, &rw) {
		t.Fatalf("landing on a rewritten target: %v, want a *TargetRewrittenError", err)
	}
	if in, _ := a.Repo.OK(ctx, "merge-base", "--is-ancestor", secret, gitIn(t, f.bare, "rev-parse", "main")); in {
		t.Fatal("the removed commit is back on main")
	}
	refs := f.refs()
	if refs[BranchPrefix+"S-1"] != gitIn(t, a.Repo.Root, "rev-parse", branch) {
		t.Fatal("the story's branch is not kept on the server")
	}
	if refs[ConflictsPrefix+"S-1"] == "" {
		t.Fatal("the story is not marked for a person")
	}
	if !strings.Contains(err.Error(), "rewritten") {
		t.Fatalf("message: %v", err)
	}
}

// A remote-tracking ref of the target that is gone (git remote rename
// moved refs/remotes/origin/* away) is no error for a landing: its guess
// of the target's tip fails, and it fetches.
func TestLandingWithoutTrackingRefFetches(t *testing.T) {
	f := newFixture(t, "file")
	ctx := context.Background()
	a := f.machine("a", time.Minute, 0)
	h := claim(t, a, "S-1")
	branch := work(t, a, "S-1", h.Start, "a.txt", "a\n")
	gitIn(t, a.Repo.Root, "update-ref", "-d", a.Tracking(target))
	if _, err := h.Land(ctx, landSpec(h, branch)); err != nil {
		t.Fatalf("landing: %v", err)
	}
}

// The same claims in another order (spread shuffles the stories) are the
// same wait: told once, not on every look again.
func TestWaitKeyIgnoresOrder(t *testing.T) {
	a := &Claim{Story: "S-1", Host: "h", Machine: "m1", PID: 1}
	b := &Claim{Story: "S-2", Host: "h", Machine: "m2", PID: 2}
	if waitKey([]*Claim{a, b}) != waitKey([]*Claim{b, a}) {
		t.Fatalf("%q != %q", waitKey([]*Claim{a, b}), waitKey([]*Claim{b, a}))
	}
}

// A claim of this very clone whose process is gone is released without
// --force: the run itself takes it over at once, and nothing holds it.
func TestReleaseOwnDeadClaimNeedsNoForce(t *testing.T) {
	f := newFixture(t, "file")
	ctx := context.Background()
	a := f.machine("a", time.Minute, 0)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	c := Claim{Story: "S-1", Machine: a.Me.ID, Host: a.Me.Host, PID: dead.Process.Pid, Since: now, Time: now,
		LeaseMS: time.Minute.Milliseconds(), Ref: ClaimsPrefix + "S-1"}
	sha, err := a.claimCommit(ctx, &c)
	if err != nil {
		t.Fatal(err)
	}
	if bad, err := a.push(ctx, "plant a claim", []update{{src: sha, dst: c.Ref}}); err != nil || len(bad) > 0 {
		t.Fatalf("plant: %v %v", bad, err)
	}
	if _, err := a.ReleaseStory(ctx, target, "S-1", false); err != nil {
		t.Fatalf("release of this clone's dead process's claim: %v", err)
	}
	if _, ok := f.refs()[ClaimsPrefix+"S-1"]; ok {
		t.Fatal("the claim is still there")
	}
}

// A claim given back before its story's work added anything (claimed
// ahead, a run stopped) leaves no empty story branch on the server at an
// old target tip: the branch published with it holds nothing the target
// lacks, and goes with the claim.
func TestReleaseDropsAnEmptyStoryBranch(t *testing.T) {
	f := newFixture(t, "file")
	ctx := context.Background()
	a := f.machine("a", time.Minute, 0)
	h := claim(t, a, "S-1")
	gitIn(t, a.Repo.Root, "branch", "wiggum/S-1", h.Start)
	h.Follow("refs/heads/wiggum/S-1")
	if err := h.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if f.refs()[BranchPrefix+"S-1"] == "" {
		t.Fatal("the branch was not published")
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if got, ok := f.refs()[BranchPrefix+"S-1"]; ok {
		t.Fatalf("an empty story branch is left on the server at %s", got)
	}
}

// A story branch on the server that no claim names - work a machine gave
// back with its claim, or a push of someone's - is where a new claim's
// story starts, and the claim says so (Unclaimed), for the run to say;
// a fresh story's claim and a takeover's (a claim names the branch: the
// machine whose work it is) do not.
func TestClaimOverAnUnclaimedBranchSaysSo(t *testing.T) {
	f := newFixture(t, "daemon")
	ctx := context.Background()
	a := f.machine("a", 2*time.Second, 0)
	b := f.machine("b", 2*time.Second, 0)
	ha := claim(t, a, "S-1")
	if ha.Unclaimed {
		t.Fatal("a claim of a story with no branch on the server says it starts from an unclaimed one")
	}
	ha.Follow(work(t, a, "S-1", ha.Start, "a.txt", "a\n"))
	if err := ha.Release(ctx); err != nil {
		t.Fatal(err)
	}
	given := f.refs()[BranchPrefix+"S-1"]
	if given == "" {
		t.Fatal("the release did not publish the branch")
	}
	hb := claim(t, b, "S-1")
	if hb.Start != given || !hb.Unclaimed || hb.Took != nil {
		t.Fatalf("claim over the given-back branch: start %q unclaimed %v took %+v; want start %s, unclaimed", hb.Start, hb.Unclaimed, hb.Took, given)
	}

	// The same from a coordinator, whose view of the server is fetched
	// anew (and from a moved view, after a landing).
	if err := hb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := NewCoordinator(ctx, b, b.Repo, target, "plan.md")
	if err != nil {
		t.Fatal(err)
	}
	hc, s, err := c.Claim(ctx, map[string]bool{"S-2": true, "S-3": true})
	if err != nil || hc == nil || s.ID != "S-1" || hc.Start != given || !hc.Unclaimed {
		t.Fatalf("coordinator's claim: %+v %+v %v; want S-1 from %s, unclaimed", hc, s, err, given)
	}
	hc.Close()

	// b stops renewing; a lease later a takes its claim over: the branch
	// is the work of the claim it took, not unclaimed.
	watch(t, a, 3*time.Second)
	ht := claim(t, a, "S-1")
	if ht.Took == nil || ht.Unclaimed || ht.Start != given {
		t.Fatalf("takeover: took %+v unclaimed %v start %q", ht.Took, ht.Unclaimed, ht.Start)
	}
}
