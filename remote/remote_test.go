package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/gitserver"
	"github.com/wiggum-dev/wiggum/internal/plan"
)

const target = "refs/heads/main"

const planText = "# plan\n\n- [ ] S-1: first\n- [ ] S-2: second\n- [ ] S-3: third\n"

type fixture struct {
	t    *testing.T
	srv  *gitserver.Server
	bare string
	root string
}

func newFixture(t *testing.T, transport string) *fixture {
	t.Helper()
	gitserver.Require(t)
	root := t.TempDir()
	srvRoot := filepath.Join(root, "srv")
	if err := os.MkdirAll(srvRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	bare := gitserver.NewBare(t, srvRoot, "r.git")
	srv := gitserver.Start(t, transport, srvRoot)
	gitserver.Seed(t, filepath.Join(root, "seed"), srv.URL("r.git"), map[string]string{"plan.md": planText, "shared.txt": "base\n"})
	return &fixture{t: t, srv: srv, bare: bare, root: root}
}

// machine is one clone with its Remote; now shifts its clock.
func (f *fixture) machine(name string, lease time.Duration, shift time.Duration) *Remote {
	f.t.Helper()
	dir := filepath.Join(f.root, name)
	gitserver.Clone(f.t, f.srv.URL("r.git"), dir)
	repo, err := git.Open(context.Background(), dir)
	if err != nil {
		f.t.Fatal(err)
	}
	r, err := Open(context.Background(), repo, "origin", Options{Lease: lease, Timeout: 20 * time.Second, Run: name,
		Now: func() time.Time { return time.Now().Add(shift) }})
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

func (f *fixture) refs() map[string]string { return gitserver.Refs(f.t, f.bare) }

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// work commits file=content on a new local branch from start and returns
// the branch ref.
func work(t *testing.T, r *Remote, story, start, file, content string) string {
	t.Helper()
	dir := r.Repo.Root
	branch := "refs/heads/wiggum/" + story
	gitIn(t, dir, "branch", "--force", "wiggum/"+story, start)
	wt := filepath.Join(t.TempDir(), "wt")
	gitIn(t, dir, "worktree", "add", "--quiet", wt, "wiggum/"+story)
	if err := os.WriteFile(filepath.Join(wt, file), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, wt, "add", "-A")
	gitIn(t, wt, "commit", "--quiet", "-m", story+" work")
	gitIn(t, dir, "worktree", "remove", "--force", wt)
	return branch
}

// watch has r fetch a view, then moves the clock its sightings are timed
// by on by d: every claim in that view looks watched, unrenewed, for d.
func watch(t *testing.T, r *Remote, d time.Duration) {
	t.Helper()
	if _, err := r.Fetch(context.Background(), target); err != nil {
		t.Fatal(err)
	}
	elapse(r, d)
}

// elapse moves r's sighting clock on by d.
func elapse(r *Remote, d time.Duration) {
	r.seenMu.Lock()
	defer r.seenMu.Unlock()
	prev := r.clock
	if prev == nil {
		prev = time.Now
	}
	r.clock = func() time.Time { return prev().Add(d) }
}

func claim(t *testing.T, r *Remote, story string) *Held {
	t.Helper()
	v, err := r.Fetch(context.Background(), target)
	if err != nil {
		t.Fatal(err)
	}
	h, err := r.Claim(context.Background(), story, v)
	if err != nil {
		t.Fatalf("claim %s: %v", story, err)
	}
	if h.Start == "" {
		h.Start = v.Tip
	}
	return h
}

func eachTransport(t *testing.T, fn func(t *testing.T, f *fixture)) {
	for _, tr := range gitserver.Transports {
		t.Run(tr, func(t *testing.T) { fn(t, newFixture(t, tr)) })
	}
}

// An empty lease expectation means create-only, checked by the client
// against the advertisement and by the server at update time.
func TestClaimIsCreateOnly(t *testing.T) {
	eachTransport(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		a, b := f.machine("a", time.Minute, 0), f.machine("b", time.Minute, 0)
		va, _ := a.Fetch(ctx, target)
		vb, _ := b.Fetch(ctx, target)
		ha, err := a.Claim(ctx, "S-1", va)
		if err != nil {
			t.Fatal(err)
		}
		// b's view is from before a's claim: the client sees the ref now
		// exists and refuses.
		_, err = b.Claim(ctx, "S-1", vb)
		var taken *ClaimTakenError
		if !errors.As(err, &taken) {
			t.Fatalf("second claim: %v, want ClaimTakenError", err)
		}
		if got := f.refs()[ClaimsPrefix+"S-1"]; got != ha.Claim().Commit {
			t.Fatalf("claim ref %s, want a's %s", got, ha.Claim().Commit)
		}
		// The server's own check: a hook creates the ref between the
		// advertisement and the update.
		gitserver.Hook(t, f.bare, "pre-receive", `while read o n r; do
if [ "$r" = refs/wiggum/claims/S-2 ]; then env -u GIT_QUARANTINE_PATH git update-ref refs/wiggum/claims/S-2 $(git rev-parse refs/wiggum/claims/S-1); fi
done
exit 0
`)
		_, err = b.Claim(ctx, "S-2", vb)
		if !errors.As(err, &taken) {
			t.Fatalf("claim raced on the server: %v, want ClaimTakenError", err)
		}
		if got := f.refs()[ClaimsPrefix+"S-2"]; got != ha.Claim().Commit {
			t.Fatalf("raced claim ref is %s; the server let b overwrite it", got)
		}
		// The same race from a view the target has moved on from: the
		// moved tip (refused on the client's side) must not hide the
		// claim the server refused.
		gitserver.Hook(t, f.bare, "pre-receive", `while read o n r; do
if [ "$r" = refs/wiggum/claims/S-3 ]; then env -u GIT_QUARANTINE_PATH git update-ref refs/wiggum/claims/S-3 $(git rev-parse refs/wiggum/claims/S-1); fi
done
exit 0
`)
		gitIn(t, a.Repo.Root, "commit", "-q", "--allow-empty", "-m", "moves the target")
		gitIn(t, a.Repo.Root, "push", "-q", "origin", "HEAD:main")
		_, err = b.Claim(ctx, "S-3", vb)
		if !errors.As(err, &taken) {
			t.Fatalf("claim raced on the server from a moved view: %v, want ClaimTakenError", err)
		}
		if got := f.refs()[ClaimsPrefix+"S-3"]; got != ha.Claim().Commit {
			t.Fatalf("raced claim ref is %s; the server let b overwrite it", got)
		}
	})
}

func TestRenewAndTakeover(t *testing.T) {
	eachTransport(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		a := f.machine("a", 2*time.Second, 0)
		b := f.machine("b", 2*time.Second, 0)
		ha := claim(t, a, "S-1")
		first := ha.Claim().Commit
		// b watches a's claim for most of its lease; a renews it; b
		// watches the renewed claim as long again: both times it is
		// live, as b sees it change.
		watch(t, b, 1500*time.Millisecond)
		if err := ha.Renew(ctx); err != nil {
			t.Fatal(err)
		}
		if ha.Claim().Commit == first || f.refs()[ClaimsPrefix+"S-1"] != ha.Claim().Commit {
			t.Fatal("renewal did not replace the claim")
		}
		watch(t, b, 1500*time.Millisecond)
		vb, err := b.Fetch(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		var taken *ClaimTakenError
		if _, err := b.Claim(ctx, "S-1", vb); !errors.As(err, &taken) {
			t.Fatalf("b took over a claim renewed within its lease: %v", err)
		}
		// Then a stops renewing: a lease later b takes it over.
		elapse(b, 1*time.Second)
		hb := claim(t, b, "S-1")
		if hb.Took == nil || hb.Took.Commit != ha.Claim().Commit || hb.Took.Machine != a.Me.ID {
			t.Fatalf("takeover did not replace a's claim: %+v", hb.Took)
		}
		err = ha.Renew(ctx)
		if !IsLeaseLost(err) {
			t.Fatalf("a's renewal after the takeover: %v, want LeaseLost", err)
		}
		select {
		case <-ha.Lost():
		default:
			t.Fatal("Lost not closed")
		}
		if f.refs()[ClaimsPrefix+"S-1"] != hb.Claim().Commit {
			t.Fatal("a's renewal overwrote b's claim")
		}
	})
}

func TestLandTicksAndDeletesClaimAtomically(t *testing.T) {
	eachTransport(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		a := f.machine("a", time.Minute, 0)
		h := claim(t, a, "S-2")
		branch := work(t, a, "S-2", h.Start, "s2.txt", "two\n")
		h.Follow(branch)
		if err := h.Publish(ctx); err != nil {
			t.Fatal(err)
		}
		if f.refs()[BranchPrefix+"S-2"] == "" {
			t.Fatal("the story branch was not published")
		}
		l, err := h.Land(ctx, LandSpec{Target: target, Branch: branch, PlanRel: "plan.md", Subject: "Merge S-2: second"})
		if err != nil {
			t.Fatal(err)
		}
		refs := f.refs()
		if refs[target] != l.Commit {
			t.Fatalf("main is %s, want the landing %s", refs[target], l.Commit)
		}
		if _, ok := refs[ClaimsPrefix+"S-2"]; ok {
			t.Fatal("the claim survived its landing")
		}
		if _, ok := refs[BranchPrefix+"S-2"]; ok {
			t.Fatal("the landed story branch was not deleted")
		}
		plan := gitIn(t, f.bare, "show", "main:plan.md")
		if !strings.Contains(plan, "- [x] S-2: second") || strings.Contains(plan, "- [x] S-1") {
			t.Fatalf("plan on main:\n%s", plan)
		}
		if gitIn(t, f.bare, "show", "main:s2.txt") != "two" {
			t.Fatal("the work did not land")
		}
		parents := strings.Fields(gitIn(t, f.bare, "log", "-1", "--format=%P", "main"))
		if len(parents) != 2 {
			t.Fatalf("landing commit parents %v, want the old tip and the branch", parents)
		}
		// The objects wiggum wrote itself (claims, the ticked plan, trees,
		// the landing commit) are what git would write.
		gitIn(t, f.bare, "fsck", "--strict", "--no-dangling")
		gitIn(t, a.Repo.Root, "fsck", "--strict", "--no-dangling")
		landed, err := a.Landed(ctx, target, 10)
		if err != nil || len(landed) != 1 || landed[0].Story != "S-2" {
			t.Fatalf("Landed = %+v, %v", landed, err)
		}
		// A second landing of a done story is refused.
		h2 := claim(t, a, "S-2")
		_, err = h2.Land(ctx, LandSpec{Target: target, Branch: branch, PlanRel: "plan.md", Subject: "again"})
		var already *AlreadyLandedError
		if !errors.As(err, &already) {
			t.Fatalf("landing a done story again: %v", err)
		}
	})
}

// Two machines land on the same tip at once: one wins, the other's lease
// on the tip fails (on the server, while the winner's push is in its
// hook), and it rebuilds and lands after.
func TestLandRace(t *testing.T) {
	eachTransport(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		a, b := f.machine("a", time.Minute, 0), f.machine("b", time.Minute, 0)
		ha, hb := claim(t, a, "S-1"), claim(t, b, "S-3")
		ba := work(t, a, "S-1", ha.Start, "a.txt", "a\n")
		bb := work(t, b, "S-3", hb.Start, "b.txt", "b\n")
		// Hold every push to main in the hook a moment, so both are
		// built on the same tip and overlap on the server.
		gitserver.Hook(t, f.bare, "pre-receive", "while read o n r; do case $r in refs/heads/main) sleep 0.5;; esac; done\nexit 0\n")
		var wg sync.WaitGroup
		res := make([]*Landed, 2)
		errs := make([]error, 2)
		wg.Go(func() {
			res[0], errs[0] = ha.Land(ctx, LandSpec{Target: target, Branch: ba, PlanRel: "plan.md", Subject: "Merge S-1"})
		})
		wg.Go(func() {
			res[1], errs[1] = hb.Land(ctx, LandSpec{Target: target, Branch: bb, PlanRel: "plan.md", Subject: "Merge S-3"})
		})
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if res[0].Attempts+res[1].Attempts < 3 {
			t.Fatalf("attempts %d and %d: the landings did not race", res[0].Attempts, res[1].Attempts)
		}
		plan := gitIn(t, f.bare, "show", "main:plan.md")
		if !strings.Contains(plan, "- [x] S-1") || !strings.Contains(plan, "- [x] S-3") {
			t.Fatalf("plan:\n%s", plan)
		}
		merges := gitIn(t, f.bare, "rev-list", "--count", "--merges", "main")
		if merges != "2" {
			t.Fatalf("%s merges on main, want 2", merges)
		}
	})
}

func TestConflictKeepsBranchAndMarks(t *testing.T) {
	eachTransport(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		a, b := f.machine("a", time.Minute, 0), f.machine("b", time.Minute, 0)
		ha, hb := claim(t, a, "S-1"), claim(t, b, "S-2")
		ba := work(t, a, "S-1", ha.Start, "shared.txt", "from a\n")
		bb := work(t, b, "S-2", hb.Start, "shared.txt", "from b\n")
		if _, err := ha.Land(ctx, LandSpec{Target: target, Branch: ba, PlanRel: "plan.md", Subject: "Merge S-1"}); err != nil {
			t.Fatal(err)
		}
		_, err := hb.Land(ctx, LandSpec{Target: target, Branch: bb, PlanRel: "plan.md", Subject: "Merge S-2"})
		var conflict *ConflictError
		if !errors.As(err, &conflict) || len(conflict.Paths) != 1 || conflict.Paths[0] != "shared.txt" {
			t.Fatalf("landing: %v, want a conflict in shared.txt", err)
		}
		refs := f.refs()
		tip := gitIn(t, b.Repo.Root, "rev-parse", bb)
		if refs[BranchPrefix+"S-2"] != tip {
			t.Fatal("the conflicting branch is not on the server")
		}
		if _, ok := refs[ClaimsPrefix+"S-2"]; ok {
			t.Fatal("the claim was not released")
		}
		marker := refs[ConflictsPrefix+"S-2"]
		if marker == "" || gitIn(t, f.bare, "rev-parse", marker+"^") != tip {
			t.Fatal("no conflict marker keeping the branch reachable")
		}
		// Nobody claims it until an operator releases it.
		v, _ := a.Fetch(ctx, target)
		if _, err := a.Claim(ctx, "S-2", v); err == nil {
			t.Fatal("a conflicted story was claimed")
		}
		rel, err := a.ReleaseStory(ctx, target, "S-2", false)
		if err != nil || rel.Conflict == nil {
			t.Fatalf("release: %+v %v", rel, err)
		}
		if _, ok := f.refs()[ConflictsPrefix+"S-2"]; ok {
			t.Fatal("the marker survived the release")
		}
	})
}

func TestOperatorReleaseRefusesLiveLease(t *testing.T) {
	f := newFixture(t, "file")
	ctx := context.Background()
	a := f.machine("a", time.Minute, 0)
	op := f.machine("op", time.Minute, 0)
	h := claim(t, a, "S-1")
	_, err := op.ReleaseStory(ctx, target, "S-1", false)
	var live *LiveClaimError
	if !errors.As(err, &live) {
		t.Fatalf("release of a live claim: %v", err)
	}
	if f.refs()[ClaimsPrefix+"S-1"] != h.Claim().Commit {
		t.Fatal("a refused release changed the claim")
	}
	if _, err := op.ReleaseStory(ctx, target, "S-1", true); err != nil {
		t.Fatal(err)
	}
	if !IsLeaseLost(h.Renew(ctx)) {
		t.Fatal("the holder did not notice the forced release")
	}
	var none *NotClaimedError
	if _, err := op.ReleaseStory(ctx, target, "S-1", false); !errors.As(err, &none) {
		t.Fatalf("release of nothing: %v", err)
	}
}

// A forced release whose claim is renewed between its read and its push
// (the holder renews every third of its lease) reads again and releases:
// it does not fail with "changed on the server" - the testscript
// remote_claim_released did, now and then, with a 1 s lease.
func TestForcedReleaseOutlastsARenewal(t *testing.T) {
	f := newFixture(t, "file")
	ctx := context.Background()
	a := f.machine("a", time.Minute, 0)
	op := f.machine("op", time.Minute, 0)
	h := claim(t, a, "S-1")
	renewed := 0
	releaseRead = func() {
		if renewed == 0 {
			if err := h.Renew(ctx); err != nil {
				t.Errorf("renew: %v", err)
			}
		}
		renewed++
	}
	t.Cleanup(func() { releaseRead = nil })
	rel, err := op.ReleaseStory(ctx, target, "S-1", true)
	if err != nil || rel.Claim == nil {
		t.Fatalf("forced release raced by a renewal: %+v %v", rel, err)
	}
	if renewed != 2 {
		t.Fatalf("%d reads, want 2 (the raced one and the one that released)", renewed)
	}
	if _, ok := f.refs()[ClaimsPrefix+"S-1"]; ok {
		t.Fatal("the claim survived the release")
	}
	if !IsLeaseLost(h.Renew(ctx)) {
		t.Fatal("the holder did not notice the forced release")
	}
}

// A pre-receive hook that rejects: a clear ServerRejectedError, nothing
// changed on the server.
func TestServerHookRejects(t *testing.T) {
	eachTransport(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		a := f.machine("a", time.Minute, 0)
		gitserver.Hook(t, f.bare, "pre-receive", "echo 'refs/wiggum is not allowed here' >&2\nexit 1\n")
		v, err := a.Fetch(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		before := f.refs()
		_, err = a.Claim(ctx, "S-1", v)
		var rej *ServerRejectedError
		if !errors.As(err, &rej) || !strings.Contains(err.Error(), "refs/wiggum is not allowed here") {
			t.Fatalf("claim against a rejecting hook: %v", err)
		}
		if len(f.refs()) != len(before) {
			t.Fatal("a rejected push changed the server")
		}
	})
}

// The server dies in the middle of a landing push: a clear error, the
// server unchanged, the claim and the branch's work kept.
func TestServerDiesMidPush(t *testing.T) {
	eachTransport(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		a := f.machine("a", time.Minute, 0)
		h := claim(t, a, "S-1")
		branch := work(t, a, "S-1", h.Start, "a.txt", "a\n")
		before := f.refs()
		gitserver.Hook(t, f.bare, "pre-receive", "kill -KILL $PPID\nsleep 2\nexit 1\n")
		_, err := h.Land(ctx, LandSpec{Target: target, Branch: branch, PlanRel: "plan.md", Subject: "Merge S-1"})
		if err == nil {
			t.Fatal("landing through a dying server succeeded")
		}
		after := f.refs()
		for _, ref := range []string{target, ClaimsPrefix + "S-1"} {
			if after[ref] != before[ref] {
				t.Fatalf("%s changed on the server: %s -> %s", ref, before[ref], after[ref])
			}
		}
		if gitIn(t, a.Repo.Root, "rev-parse", branch) == "" {
			t.Fatal("the work is gone")
		}
		if f.srv.Transport == "daemon" {
			f.srv.Stop()
			_, err := a.Fetch(ctx, target)
			if !IsNetwork(err) {
				t.Fatalf("fetch from a stopped daemon: %v", err)
			}
		}
	})
}

// A network that hangs: every call ends at the timeout with a clear error
// and changes nothing locally.
func TestHangingServer(t *testing.T) {
	gitserver.Require(t)
	addr := gitserver.Hang(t)
	for _, url := range []string{"git://" + addr + "/r.git", "http://" + addr + "/r.git"} {
		t.Run(strings.SplitN(url, ":", 2)[0], func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "c")
			gitserver.Seed(t, dir, "", map[string]string{"plan.md": planText})
			gitIn(t, dir, "remote", "add", "origin", url)
			repo, err := git.Open(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Open(context.Background(), repo, "origin", Options{Timeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			before := gitIn(t, dir, "for-each-ref")
			began := time.Now()
			_, err = r.Fetch(context.Background(), target)
			var ne *NetworkError
			if !errors.As(err, &ne) || !ne.Timeout || !strings.Contains(err.Error(), "did not finish in time") {
				t.Fatalf("fetch from a hanging server: %v", err)
			}
			if time.Since(began) > time.Minute {
				t.Fatal("the timeout did not bound the call")
			}
			if gitIn(t, dir, "for-each-ref") != before {
				t.Fatal("a hung fetch changed local refs")
			}
		})
	}
}

func TestMachineIDStable(t *testing.T) {
	f := newFixture(t, "file")
	a := f.machine("a", time.Minute, 0)
	again, err := Identify(a.Repo)
	if err != nil || again != a.Me {
		t.Fatalf("machine id changed: %v %v (%v)", a.Me, again, err)
	}
	b := f.machine("b", time.Minute, 0)
	if b.Me.ID == a.Me.ID {
		t.Fatal("two clones share a machine id")
	}
	if _, err := os.Stat(filepath.Join(a.Repo.Root, machineFile)); err == nil {
		t.Fatal("the machine id is in the work tree")
	}
}

func TestObjectsMatchGit(t *testing.T) {
	f := newFixture(t, "file")
	a := f.machine("a", time.Minute, 0)
	if a.obj.w == nil || a.obj.committer == "" {
		t.Fatalf("objects not written in-process in a plain SHA-1 clone: %+v", a.obj)
	}
	data := []byte("- [x] S-1: first\n")
	blob, err := a.obj.write("blob", data)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "hash-object", "--stdin")
	cmd.Dir = a.Repo.Root
	cmd.Stdin = strings.NewReader(string(data))
	want, _ := cmd.Output()
	if blob != strings.TrimSpace(string(want)) {
		t.Fatalf("blob %s, git says %s", blob, want)
	}
	head := gitIn(t, a.Repo.Root, "rev-parse", "HEAD^{tree}")
	entries := strings.Split(strings.TrimRight(gitIn(t, a.Repo.Root, "ls-tree", "-z", head), "\x00"), "\x00")
	tree, err := a.obj.tree(entries)
	if err != nil || tree != head {
		t.Fatalf("tree rewritten as %s (%v), want %s", tree, err, head)
	}
	c, err := a.obj.commit(tree, []string{gitIn(t, a.Repo.Root, "rev-parse", "HEAD")}, a.obj.author, a.obj.committer, time.Now(), []byte("x\n"))
	if err != nil {
		t.Fatal(err)
	}
	if typ := gitIn(t, a.Repo.Root, "cat-file", "-t", c); typ != "commit" {
		t.Fatalf("%s is a %s", c, typ)
	}
	gitIn(t, a.Repo.Root, "fsck", "--strict", "--no-dangling")
}

// A machine restarted after a crash takes its own dead process's claims
// over at once; another machine's, or a live process's, wait for the lease.
func TestOwnDeadClaimTakenOverAtOnce(t *testing.T) {
	f := newFixture(t, "file")
	ctx := context.Background()
	a := f.machine("a", time.Minute, 0)
	b := f.machine("b", time.Minute, 0)
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
	vb, _ := b.Fetch(ctx, target)
	var taken *ClaimTakenError
	if _, err := b.Claim(ctx, "S-1", vb); !errors.As(err, &taken) {
		t.Fatalf("another machine took a live-leased claim: %v", err)
	}
	h := claim(t, a, "S-1")
	if h.Took == nil || h.Took.Commit != sha {
		t.Fatalf("a did not take its dead process's claim over: %+v", h.Took)
	}
}

// A coordinator claims the next story while the last one is worked on, as
// long as at least as many stories are free as machines are at work
// (this one included); a story claimed ahead that no worker takes is
// given back by Done.
func TestClaimAhead(t *testing.T) {
	f := newFixture(t, "daemon")
	ctx := context.Background()
	a := f.machine("a", time.Minute, 0)
	c, err := NewCoordinator(ctx, a, a.Repo, target, "plan.md")
	if err != nil {
		t.Fatal(err)
	}
	c.Ahead = true
	busy := map[string]bool{}
	h1, s1, err := c.Claim(ctx, busy)
	if err != nil || h1 == nil || h1.Ahead {
		t.Fatalf("first claim: %v %v", h1, err)
	}
	busy[s1.ID] = true
	h2, s2, err := c.Claim(ctx, busy)
	if err != nil || h2 == nil || !h2.Ahead || s2.ID == s1.ID {
		t.Fatalf("second claim was not made ahead: %+v %v", h2, err)
	}
	busy[s2.ID] = true
	refs := f.refs()
	for _, h := range []*Held{h1, h2} {
		if refs[h.Claim().Ref] != h.Claim().Commit {
			t.Fatalf("%s is not claimed on the server", h.Story)
		}
	}
	// One story left and one machine at work: it is claimed ahead too (no
	// other machine is deprived of a next story); then nothing is left.
	h3, s3, err := c.Claim(ctx, busy)
	if err != nil || h3 == nil || !h3.Ahead {
		t.Fatalf("third claim: %+v %v", h3, err)
	}
	busy[s3.ID] = true
	if h4, _, err := c.Claim(ctx, busy); err != nil || h4 != nil {
		t.Fatalf("a fourth claim with no story left: %+v %v", h4, err)
	}
	if err := c.Done(ctx); err != nil {
		t.Fatal(err)
	}
	for _, h := range []*Held{h1, h2, h3} {
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// A run that ends with a story claimed ahead gives it back.
	b := f.machine("b", time.Minute, 0)
	cb, err := NewCoordinator(ctx, b, b.Repo, target, "plan.md")
	if err != nil {
		t.Fatal(err)
	}
	cb.Ahead = true
	h, _, err := cb.Claim(ctx, map[string]bool{})
	if err != nil || h == nil {
		t.Fatalf("claim: %v", err)
	}
	cb.mu.Lock()
	ah := cb.ahead
	cb.mu.Unlock()
	if ah == nil {
		t.Fatal("no claim ahead was started")
	}
	<-ah.done
	if ah.h == nil || gitserver.Refs(t, f.bare)[ah.h.Claim().Ref] == "" {
		t.Fatal("the claim ahead was not made")
	}
	if err := cb.Done(ctx); err != nil {
		t.Fatal(err)
	}
	var claims []string
	for ref := range f.refs() {
		if strings.HasPrefix(ref, ClaimsPrefix) {
			claims = append(claims, ref)
		}
	}
	if len(claims) != 1 || claims[0] != h.Claim().Ref {
		t.Fatalf("claims on the server after Done: %v, want only %s", claims, h.Claim().Ref)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// Stories of one process land in one atomic push, one merge commit each,
// every claim deleted with them; one that conflicts is marked on its own
// and one whose claim was lost drops out, and neither holds the others
// back.
func TestLandGroup(t *testing.T) {
	f := newFixture(t, "daemon")
	ctx := context.Background()
	a := f.machine("a", time.Minute, 0)
	dir := a.Repo.Root
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("plan.md", planText+"- [ ] S-4: fourth\n")
	gitIn(t, dir, "commit", "-qam", "plan: S-4")
	gitIn(t, dir, "push", "-q", "origin", "main")
	hs := map[string]*Held{}
	branches := map[string]string{}
	for _, s := range []string{"S-1", "S-2", "S-3", "S-4"} {
		hs[s] = claim(t, a, s)
		file := strings.ToLower(s) + ".txt"
		if s == "S-2" {
			file = "shared.txt"
		}
		branches[s] = work(t, a, s, hs[s].Start, file, s+"\n")
	}
	// shared.txt changes on the target meanwhile: S-2 conflicts.
	write("shared.txt", "changed on main\n")
	gitIn(t, dir, "commit", "-qam", "shared")
	gitIn(t, dir, "push", "-q", "origin", "main")
	before := gitIn(t, f.bare, "rev-parse", "main")
	// An operator takes S-3's claim away.
	b := f.machine("b", time.Minute, 0)
	if _, err := b.ReleaseStory(ctx, target, "S-3", true); err != nil {
		t.Fatal(err)
	}
	var ms []*Member
	for _, s := range []string{"S-1", "S-2", "S-3", "S-4"} {
		ms = append(ms, &Member{H: hs[s], Spec: LandSpec{Target: target, Branch: branches[s], PlanRel: "plan.md", Subject: "Merge " + s}})
	}
	_, pushes := a.Counts()
	a.LandGroup(ctx, ms, nil)
	_, after := a.Counts()
	var conflict *ConflictError
	if ms[0].Err != nil || ms[3].Err != nil || !errors.As(ms[1].Err, &conflict) || !IsLeaseLost(ms[2].Err) {
		t.Fatalf("outcomes: S-1 %v, S-2 %v, S-3 %v, S-4 %v", ms[0].Err, ms[1].Err, ms[2].Err, ms[3].Err)
	}
	// The conflict's marker, the landing the server refused for S-3's
	// claim, and the one landing of S-1 and S-4.
	if after-pushes != 3 {
		t.Fatalf("%d pushes, want 3", after-pushes)
	}
	l1, l4 := ms[0].Landed, ms[3].Landed
	refs := f.refs()
	if refs[target] != l4.Commit || l4.Base != l1.Commit || l1.Base != before {
		t.Fatalf("main %s; S-1 %+v; S-4 %+v; before %s", refs[target], l1, l4, before)
	}
	for _, s := range []string{"S-1", "S-4"} {
		if _, ok := refs[ClaimsPrefix+s]; ok {
			t.Fatalf("%s's claim survived its landing", s)
		}
	}
	if refs[ConflictsPrefix+"S-2"] == "" {
		t.Fatal("S-2 is not marked conflicted")
	}
	if n := gitIn(t, f.bare, "rev-list", "--count", "--merges", before+"..main"); n != "2" {
		t.Fatalf("%s merge commits landed, want 2", n)
	}
	plan := gitIn(t, f.bare, "show", "main:plan.md")
	if !strings.Contains(plan, "- [x] S-1") || !strings.Contains(plan, "- [x] S-4") || strings.Contains(plan, "- [x] S-2") || strings.Contains(plan, "- [x] S-3") {
		t.Fatalf("plan on main:\n%s", plan)
	}
	if gitIn(t, f.bare, "show", "main:s-1.txt") != "S-1" || gitIn(t, f.bare, "show", "main:s-4.txt") != "S-4" {
		t.Fatal("the work did not land")
	}
	gitIn(t, f.bare, "fsck", "--strict", "--no-dangling")
}

// A view that keeps being wrong is trusted less and less often; one that
// is right again is trusted at once.
func TestGuessBacksOff(t *testing.T) {
	var g guess
	count := func() (fetches int) {
		for !g.try() {
			fetches++
		}
		return fetches
	}
	if n := count(); n != 0 {
		t.Fatalf("a fresh guess fetched %d times first", n)
	}
	want := []int{2, 4, 8, 16, 32, 32}
	for i, w := range want {
		g.missed()
		if n := count(); n != w {
			t.Fatalf("after %d wrong views: %d fetches before guessing again, want %d", i+1, n, w)
		}
	}
	g.hit()
	g.missed()
	if n := count(); n != 2 {
		t.Fatalf("after a right view and a wrong one: %d fetches, want 2", n)
	}
}

// A claim made from a view the target has moved on from is made all the
// same (the moving target refuses nothing), and says so; a coordinator
// then looks at the server, and gives back a story that landed meanwhile.
func TestClaimFromMovedView(t *testing.T) {
	f := newFixture(t, "daemon")
	ctx := context.Background()
	a, b := f.machine("a", time.Minute, 0), f.machine("b", time.Minute, 0)
	old, err := a.Fetch(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	hb := claim(t, b, "S-1")
	branch := work(t, b, "S-1", hb.Start, "b.txt", "b\n")
	if _, err := hb.Land(ctx, LandSpec{Target: target, Branch: branch, PlanRel: "plan.md", Subject: "Merge S-1"}); err != nil {
		t.Fatal(err)
	}
	// S-2 is open: claimed from the old view, and told so.
	h, err := a.Claim(ctx, "S-2", old)
	if err != nil || !h.Moved {
		t.Fatalf("claim from a moved view: %+v %v", h, err)
	}
	if f.refs()[h.Claim().Ref] != h.Claim().Commit {
		t.Fatal("the claim is not on the server")
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// S-1 landed since a's view: a coordinator reading that view claims
	// it, sees it landed, gives it back and finds nothing else to do.
	c, err := NewCoordinator(ctx, a, a.Repo, target, "plan.md")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Repo.Run(ctx, "update-ref", a.Tracking(target), old.Tip); err != nil {
		t.Fatal(err)
	}
	got, s, err := c.Claim(ctx, map[string]bool{"S-2": true, "S-3": true})
	if err != nil || got != nil {
		t.Fatalf("claimed %s (%v), want nothing", s.ID, err)
	}
	for ref := range f.refs() {
		if strings.HasPrefix(ref, ClaimsPrefix) {
			t.Fatalf("%s left on the server", ref)
		}
	}
}

// A machine claims ahead while the free stories leave one for every other
// machine at work still without its next story: in the last round of a
// fleet each machine finds its next story claimed, not only the first to
// look. Claims ahead are told from more workers by the claims' workers.
func TestSpareLeavesOneForEachMachineWithoutItsNext(t *testing.T) {
	now := time.Now()
	me := Machine{ID: "m1", Host: "h"}
	c := &Coordinator{R: &Remote{Me: me, now: func() time.Time { return now }}}
	view := func(free int, claims map[string][]int) (*View, map[string]bool) {
		v := &View{Claims: map[string]*Claim{}, Conflicts: map[string]*Conflict{}}
		busy := map[string]bool{}
		n := 0
		story := func() string {
			n++
			id := fmt.Sprintf("S-%d", n)
			v.Plan = append(v.Plan, plan.Story{ID: id})
			return id
		}
		for m, held := range claims {
			for _, workers := range held {
				id := story()
				cl := &Claim{Story: id, Machine: m, Host: "h", Time: now, LeaseMS: time.Minute.Milliseconds(), Workers: workers}
				if workers < 0 {
					// Watched unrenewed for longer than its lease: stale.
					cl.Workers, cl.seen = 0, now.Add(-time.Hour)
				}
				v.Claims[mustKey(id)] = cl
				if m == me.ID {
					busy[id] = true
				}
			}
		}
		for range free {
			story()
		}
		v.Plan = append(v.Plan, plan.Story{ID: "done", Done: true})
		return v, busy
	}
	for _, tc := range []struct {
		name   string
		free   int
		claims map[string][]int // machine: its claims' workers (-1: stale)
		want   bool
	}{
		{"last round, one machine has its next", 3, map[string][]int{"m1": {1}, "m2": {1, 1}, "m3": {1}, "m4": {1}}, true},
		{"last round, one short", 2, map[string][]int{"m1": {1}, "m2": {1, 1}, "m3": {1}, "m4": {1}}, false},
		{"a machine of two workers has no next", 3, map[string][]int{"m1": {1}, "m2": {2, 2}, "m3": {1}, "m4": {1}}, false},
		{"claims of older builds say one worker", 2, map[string][]int{"m1": {1}, "m2": {0, 0}, "m3": {0}}, true},
		{"a stale claim's machine wants nothing", 1, map[string][]int{"m1": {1}, "m2": {-1}}, true},
		{"alone", 1, map[string][]int{"m1": {1}}, true},
		{"nothing free", 0, map[string][]int{"m1": {1}}, false},
	} {
		v, busy := view(tc.free, tc.claims)
		if got := c.spare(v, busy); got != tc.want {
			t.Errorf("%s: spare = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A fetch or ls-remote that fails for a moment (the server's upload-pack
// dies, as git daemon's did under 8 machines' landings: "not our ref
// 0000...", connection reset) is tried again; one that keeps failing is
// reported after three tries, and a missing target is reported at once.
func TestFetchTriesAFailureOfTheMomentAgain(t *testing.T) {
	f := newFixture(t, "file")
	ctx := context.Background()
	a := f.machine("a", time.Minute, 0)
	dir := t.TempDir()
	count := filepath.Join(dir, "count")
	flaky := filepath.Join(dir, "flaky-upload-pack")
	script := "#!/bin/sh\nn=$(cat " + count + " 2>/dev/null || echo 0)\necho $((n + 1)) > " + count + "\n" +
		"if [ $n -lt $FAILS ]; then echo 'fatal: remote error: upload-pack: not our ref 0000000000000000000000000000000000000000' >&2; exit 128; fi\n" +
		"exec git-upload-pack \"$@\"\n"
	if err := os.WriteFile(flaky, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, a.Repo.Root, "config", "remote.origin.uploadpack", flaky)
	for _, c := range []struct {
		fails, tries int
		ok           bool
	}{{0, 1, true}, {2, 3, true}, {3, 3, false}} {
		t.Setenv("FAILS", strconv.Itoa(c.fails))
		_ = os.Remove(count)
		v, err := a.Fetch(ctx, target)
		data, _ := os.ReadFile(count)
		tries, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		var ne *NetworkError
		switch {
		case tries != c.tries:
			t.Errorf("%d failures: %d tries, want %d", c.fails, tries, c.tries)
		case c.ok && (err != nil || v.Tip != f.refs()[target]):
			t.Errorf("%d failures: %v", c.fails, err)
		case !c.ok && (!errors.As(err, &ne) || !strings.Contains(err.Error(), "not our ref")):
			t.Errorf("%d failures: %v, want the server's error", c.fails, err)
		}
	}
	// ls-remote reads the server as well, and is tried again the same way.
	for _, c := range []struct {
		fails, tries int
		ok           bool
	}{{2, 3, true}, {3, 3, false}} {
		t.Setenv("FAILS", strconv.Itoa(c.fails))
		_ = os.Remove(count)
		now, err := a.lsRemote(ctx, "read", []update{{dst: target}})
		data, _ := os.ReadFile(count)
		tries, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		if tries != c.tries || c.ok != (err == nil) || c.ok && now[target] != f.refs()[target] {
			t.Errorf("ls-remote, %d failures: %d tries, %v, %v", c.fails, tries, now, err)
		}
	}
	t.Setenv("FAILS", "0")
	_ = os.Remove(count)
	var bad *BadRemoteError
	if _, err := a.Fetch(ctx, "refs/heads/nosuch"); !errors.As(err, &bad) {
		t.Fatalf("fetch of a missing branch: %v", err)
	}
	if data, _ := os.ReadFile(count); strings.TrimSpace(string(data)) != "1" {
		t.Fatalf("a missing branch was fetched %s times", data)
	}
}

// Claims' leases are timed by what each machine sees, not by the clocks
// their holders write in them: machines' clocks disagree. One running an
// hour ahead took every other machine's live claim over (the story done
// twice); a stopped machine whose clock ran an hour ahead kept its
// stories claimed, to every other machine, for an hour past its lease.
func TestClaimLeaseIgnoresClockSkew(t *testing.T) {
	eachTransport(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		lease := 2 * time.Second
		a := f.machine("a", lease, 0)
		ahead := f.machine("ahead", lease, time.Hour)
		c := f.machine("c", lease, 0)

		// A live claim stays its holder's to a machine whose clock is an
		// hour ahead.
		ha := claim(t, a, "S-1")
		v, err := ahead.Fetch(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		var taken *ClaimTakenError
		if _, err := ahead.Claim(ctx, "S-1", v); !errors.As(err, &taken) {
			t.Fatalf("a machine whose clock is ahead took a live claim over: %v", err)
		}
		if f.refs()[ClaimsPrefix+"S-1"] != ha.Claim().Commit {
			t.Fatal("a's live claim was replaced")
		}

		// The claim of a machine whose clock is an hour ahead, stopped
		// (never renewed), lapses once c has watched it for a lease.
		h2 := claim(t, ahead, "S-2")
		v, err = c.Fetch(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Claim(ctx, "S-2", v); !errors.As(err, &taken) {
			t.Fatalf("c took over a claim it had not watched for a lease: %v", err)
		}
		watch(t, c, lease)
		hc := claim(t, c, "S-2")
		if hc.Took == nil || hc.Took.Commit != h2.Claim().Commit {
			t.Fatalf("c did not take the lapsed claim over: %+v", hc.Took)
		}
	})
}
