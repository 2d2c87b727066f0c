package remote

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/worktree"
)

// Claim is what a claim ref's commit says: who holds the story, since
// when, and for how long without a renewal.
type Claim struct {
	Story   string    `json:"story"`
	Machine string    `json:"machine"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Run     string    `json:"run,omitempty"`
	Since   time.Time `json:"since"` // first claimed by this holder
	Time    time.Time `json:"time"`  // last renewed
	LeaseMS int64     `json:"lease_ms"`
	// Workers: how many stories its process works on at once (0 in
	// claims of older builds: one), so that other machines can tell a
	// story claimed ahead from one more worker's.
	Workers int `json:"workers,omitempty"`
	// Ready: the story's work is finished and on its branch on the
	// server at this commit, to land on Target with the plan Plan ticked,
	// under Subject. Any machine's landing may carry it, leased on this
	// exact claim and branch; its holder keeps trying too.
	Ready   string `json:"ready,omitempty"`
	Target  string `json:"target,omitempty"`
	Plan    string `json:"plan,omitempty"`
	Subject string `json:"subject,omitempty"`
	// Base is the target's tip the ready work was built on: a landing
	// whose target no longer holds it (rewritten on the server) does not
	// carry the work, which would bring the removed commits back.
	Base string `json:"base,omitempty"`
	// Add: the stories its agent added to the plan, which the landing
	// adds to the target's plan.
	Add *Added `json:"add,omitempty"`
	// Resolved: made by an operator's release of a conflict whose branch
	// was resolved (ReleaseStory): nobody holds it, any machine lands the
	// branch at once, or takes the story over when it cannot.
	Resolved bool `json:"resolved,omitempty"`

	Ref    string `json:"ref"`    // refs/wiggum/claims/<key>
	Commit string `json:"commit"` // the claim's value on the server
	// Unreadable: the ref's commit is not a wiggum claim (written by hand,
	// or damaged); its commit time and the default lease stand in.
	Unreadable bool `json:"unreadable,omitempty"`

	// seen is when this process first saw the claim at Commit, on its
	// own clock (Remote.sighted); zero for a claim it read no view of.
	seen time.Time
	// since is the clock seen is read against (time.Since, or a test's).
	since func(time.Time) time.Duration
}

// Lease is the claim's lease length.
func (c *Claim) Lease() time.Duration { return time.Duration(c.LeaseMS) * time.Millisecond }

// Expires is when the claim may be taken over unless renewed.
func (c *Claim) Expires() time.Time { return c.Time.Add(c.Lease()) }

// Stale reports whether the claim's lease ran out: this process has seen
// it unchanged - not renewed - for a whole lease. The time its holder
// wrote in it is not compared with this machine's clock: machines'
// clocks disagree (a laptop back from sleep, a VM restored, WSL after a
// suspend), and judged by it, a clock running ahead by most of a lease
// took over every other machine's live claim - the story done twice -
// and one running behind kept a stopped machine's stories claimed for as
// long as it was behind. The price: a machine that starts after another
// stopped waits one lease before it takes that machine's stories over
// (a restarted clone takes its own at once: Remote.deadHere). A claim no
// view was read of (seen zero) is live.
func (c *Claim) Stale() bool {
	if c.seen.IsZero() {
		return false
	}
	since := c.since
	if since == nil {
		since = time.Since
	}
	return since(c.seen) >= c.Lease()
}

// PastExpiry reports whether the claim's lease ran out at now by the
// time its holder wrote in it: for a one-off command (wiggum claims
// release), which watches no claim for a lease; its clock may be wrong.
func (c *Claim) PastExpiry(now time.Time) bool { return now.After(c.Expires()) }

// Conflict is a story whose branch could not merge into the target: its
// marker ref refs/wiggum/conflicts/<key> points at a commit whose parent is
// the branch's tip, so the work stays reachable even if the branch goes.
type Conflict struct {
	Story   string    `json:"story"`
	Machine string    `json:"machine"`
	Host    string    `json:"host"`
	Time    time.Time `json:"time"`
	Branch  string    `json:"branch"`
	Target  string    `json:"target"`
	Plan    string    `json:"plan,omitempty"` // the plan file the story is in
	Paths   []string  `json:"paths,omitempty"`

	Ref        string `json:"ref"`
	Commit     string `json:"commit"`
	Unreadable bool   `json:"unreadable,omitempty"`
}

// Key is the ref-safe name of a story id (hostile input): the same name
// its worktree and branch get.
func Key(story string) (string, error) { return worktree.Name(story) }

// ClaimTakenError is a story another machine holds (or that is marked
// conflicted); nothing changed.
type ClaimTakenError struct {
	Story  string
	Holder *Claim    // nil when unknown (lost a race just now)
	Marked *Conflict // set when the story is marked conflicted
}

func (e *ClaimTakenError) Error() string {
	switch {
	case e.Marked != nil:
		return fmt.Sprintf("claim %s: the story is marked conflicted (%s); resolve it, then wiggum claims release %s", e.Story, e.Marked.Ref, e.Story)
	case e.Holder != nil:
		return fmt.Sprintf("claim %s: held by %s/%s (pid %d) until %s", e.Story, e.Holder.Host, e.Holder.Machine, e.Holder.PID, e.Holder.Expires().UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("claim %s: another machine claimed it first", e.Story)
}

// LeaseLostError is a claim this machine no longer holds: its lease ran
// out and another machine took it over, or an operator released it. The
// story's work stays on its local branch.
type LeaseLostError struct {
	Story string
	Now   string // the claim ref's value on the server now; "" when deleted
}

func (e *LeaseLostError) Error() string {
	how := "it was taken over by another machine after its lease ran out"
	if e.Now == "" {
		how = "it was released on the server (wiggum claims release --force, or its lease ran out and it was released)"
	}
	return fmt.Sprintf("claim %s lost: %s; the work stays on its local branch", e.Story, how)
}

// IsLeaseLost reports whether err is a lost claim.
func IsLeaseLost(err error) bool {
	var l *LeaseLostError
	return errors.As(err, &l)
}

// Held is a claim this process holds. It renews itself (Keep) until it is
// landed, released or lost; every renewal also pushes the story's branch
// when it moved, in the same atomic push, so a machine that lost its claim
// can never move the branch.
type Held struct {
	r     *Remote
	key   string
	Story string
	// Start is the story's branch on the server when it was claimed (the
	// work of a machine whose claim was taken over); "" when there is none.
	Start string
	// Unclaimed: Start is a story branch on the server that no claim
	// named when this one was made - work a run gave back with its claim
	// (Release publishes it for the next machine to go on from), or a
	// push of someone's - not a taken-over claim's.
	Unclaimed bool
	// Took is the stale claim this one replaced; nil for a fresh claim.
	Took *Claim
	// TookDead: Took's lease had not run out, but it was this clone's
	// own claim from a process that is gone.
	TookDead bool
	// Spent is how long the claim took to make (the fetch and pushes of
	// Coordinator.Claim); Ahead: it was made while another story was
	// worked on.
	Spent time.Duration
	Ahead bool
	// Rode: the claim was made in the push of a landing of this process
	// (Spent is then its own work: its view and its commit, not the push).
	Rode bool
	// Moved: the target moved since the view the claim was made from, so
	// the story may have landed meanwhile; look before working on it.
	Moved bool

	// seen is the target's tip in the view the claim was made from.
	seen string

	mu     sync.Mutex
	claim  Claim  // as last pushed
	pushed string // the story branch's value on the server; "" none
	branch string // the local branch published with renewals
	done   bool
	kept   bool // Keep was called
	// fresh: the story had no branch on the server when claimed, so its
	// work may start from any later tip of the target.
	fresh bool
	// foreign: the story's branch on the server (pushed, when known) holds
	// commits this process's work does not - someone not holding the
	// claim moved it, or it was there before and the work was not built
	// on it. It is never moved or deleted by this process then, only
	// left where it is and reported (Landed.Kept).
	foreign bool

	lost     chan struct{}
	lostOnce sync.Once
	lostErr  error
	stop     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// Claim returns the claim as last pushed.
func (h *Held) Claim() Claim {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.claim
}

// Lost is closed when the claim is lost; LostErr then says how.
func (h *Held) Lost() <-chan struct{} { return h.lost }

// LostErr is the *LeaseLostError once Lost is closed, else nil.
func (h *Held) LostErr() error {
	select {
	case <-h.lost:
		return h.lostErr
	default:
		return nil
	}
}

func (h *Held) markLost(err error) {
	h.lostOnce.Do(func() { h.lostErr = err; close(h.lost) })
}

// Branch is the story's branch on the server.
func (h *Held) Branch() string { return BranchPrefix + h.key }

// Claim claims story on the server: creates its claim ref only if absent,
// or takes over a claim whose lease ran out by compare-and-swap on its
// exact value. view is a recent Fetch; a claim that is live there, or
// that another machine makes first, is a *ClaimTakenError.
func (r *Remote) Claim(ctx context.Context, story string, view *View) (*Held, error) {
	key, err := Key(story)
	if err != nil {
		return nil, err
	}
	if c := view.Conflicts[key]; c != nil {
		return nil, &ClaimTakenError{Story: story, Marked: c}
	}
	now := r.now()
	expect := ""
	old := view.Claims[key]
	dead := false
	if old != nil {
		if !old.Stale() && !old.Resolved {
			if dead = r.deadHere(old); !dead {
				return nil, &ClaimTakenError{Story: story, Holder: old}
			}
		}
		expect = old.Commit
	}
	c, err := r.freshClaim(ctx, story, key, now)
	if err != nil {
		return nil, err
	}
	ups := []update{{src: c.Commit, dst: c.Ref, expect: expect}}
	if view.Tip != "" {
		// The target's tip as the view saw it rides along: an unchanged
		// ref is not sent, but its lease is checked against the server's
		// answer to this same push. The push is not atomic: the claim is
		// made either way (create-only, or on the exact stale value), and
		// a tip that moved only says that the view is old - the claim is
		// then Moved, and the story may have landed since the view (the
		// caller looks at the target before working on it; holding the
		// claim, nobody else can land it any more). A moving target, a
		// landing every few hundred milliseconds in a busy fleet, so
		// never refuses a claim. (A landing that slips in between the
		// server's answer and the update still cannot land the story
		// twice: a landing refuses a story the target marks done.)
		ups = append(ups, update{src: view.Tip, dst: view.Target, expect: view.Tip})
	}
	bad, err := r.pushRefs(ctx, "claim "+story, ups, false)
	if err != nil {
		return nil, err
	}
	if _, ok := bad[c.Ref]; ok {
		return nil, &ClaimTakenError{Story: story}
	}
	_, moved := bad[view.Target]
	h := &Held{r: r, key: key, Story: story, Took: old, TookDead: dead, claim: c, seen: view.Tip,
		Start: view.Branches[key], pushed: view.Branches[key], Moved: moved,
		lost: make(chan struct{}), stop: make(chan struct{})}
	h.Unclaimed = old == nil && h.Start != ""
	return h, nil
}

// movedSince reports whether the server's target (a branch ref) has moved from the tip
// of the view h was claimed from, read after the claim was made. The claim
// push checked the target against the server's advertisement, which git
// writes one ref at a time: read while another machine's landing is
// applied, it can show the claim that landing deletes gone and the target
// it moves not yet moved (a files backend moves the target first, then
// deletes). The target read after this claim exists cannot be that old:
// if the landing deleted the claim before this one was created, it had
// moved the target before. A failed read says no.
func (r *Remote) movedSince(ctx context.Context, h *Held, target string) bool {
	if h.seen == "" {
		return false
	}
	now, err := r.lsRemote(ctx, "claim "+h.Story, []update{{dst: target}})
	return err == nil && now[target] != h.seen
}

// newClaim writes a fresh claim on story (key its ref name) for a push
// that creates its ref, from view v; nothing is pushed.
func (r *Remote) newClaim(ctx context.Context, story, key string, v *View) (*Held, error) {
	c, err := r.freshClaim(ctx, story, key, r.now())
	if err != nil {
		return nil, err
	}
	// Made only for a story no claim names (rideWith.rider).
	return &Held{r: r, key: key, Story: story, claim: c, seen: v.Tip, Start: v.Branches[key], pushed: v.Branches[key],
		Unclaimed: v.Branches[key] != "", lost: make(chan struct{}), stop: make(chan struct{})}, nil
}

// freshClaim is this process's claim on story (key its ref name), made
// at now, with its commit written; nothing is pushed.
func (r *Remote) freshClaim(ctx context.Context, story, key string, now time.Time) (Claim, error) {
	c := Claim{Story: story, Machine: r.Me.ID, Host: r.Me.Host, PID: os.Getpid(), Run: r.Run,
		Since: now.UTC(), Time: now.UTC(), LeaseMS: r.Lease.Milliseconds(), Workers: r.Workers, Ref: ClaimsPrefix + key}
	sha, err := r.claimCommit(ctx, &c)
	if err != nil {
		return Claim{}, err
	}
	c.Commit = sha
	return c, nil
}

// deadHere reports whether c was made by an earlier process of this very
// clone whose pid is gone: a machine restarted after a crash goes on with
// its own stories at once instead of waiting out their leases. A reused
// pid only makes it wait for the lease, as for any other machine.
func (r *Remote) deadHere(c *Claim) bool {
	if c.Unreadable || c.Machine != r.Me.ID || c.Host != r.Me.Host || c.PID <= 0 || c.PID == os.Getpid() {
		return false
	}
	return !layout.PIDAlive(c.PID)
}

// DeadHere reports whether c is a claim of this clone whose process is
// gone (a run here takes it over at once; nothing renews it).
func (r *Remote) DeadHere(c *Claim) bool { return r.deadHere(c) }

// Follow names the local branch whose commits renewals publish.
func (h *Held) Follow(branch string) {
	h.mu.Lock()
	h.branch = branch
	h.mu.Unlock()
}

// Keep renews the claim every third of its lease until Close; a renewal
// that finds the claim gone or replaced closes Lost. A failed renewal
// (the server unreachable) is retried on the next tick: the lease, not
// this process, decides when others may take over.
func (h *Held) Keep(onError func(error)) {
	h.mu.Lock()
	kept := h.kept
	h.kept = true
	h.mu.Unlock()
	if kept {
		return
	}
	h.wg.Go(func() {
		t := time.NewTicker(max(h.r.Lease/3, 100*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-h.lost:
				return
			case <-t.C:
			}
			if err := h.Renew(context.Background()); err != nil && !IsLeaseLost(err) && onError != nil {
				onError(err)
			}
		}
	})
}

// Close stops the renewals; it does not release the claim.
func (h *Held) Close() {
	h.stopOnce.Do(func() { close(h.stop) })
	h.wg.Wait()
}

// Renew replaces the claim with a fresh one by compare-and-swap on its
// exact current value, publishing the followed branch in the same atomic
// push when it moved.
func (h *Held) Renew(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return nil
	}
	if err := h.LostErr(); err != nil {
		return err
	}
	c := h.claim
	c.Time = h.r.now().UTC()
	sha, err := h.r.claimCommit(ctx, &c)
	if err != nil {
		return err
	}
	c.Commit = sha
	tip, bad, err := h.pushWithBranch(ctx, "renew the claim on "+h.Story, []update{{src: sha, dst: c.Ref, expect: h.claim.Commit}})
	if err != nil {
		return err
	}
	if now, ok := bad[c.Ref]; ok {
		lerr := &LeaseLostError{Story: h.Story, Now: h.r.valueNow(ctx, c.Ref, now)}
		h.markLost(lerr)
		return lerr
	}
	if len(bad) > 0 {
		return fmt.Errorf("remote %s: %s changed meanwhile; the claim was not renewed", h.r.Name, strings.Join(keys(bad), ", "))
	}
	h.claim = c
	if tip != "" {
		h.pushed = tip
	}
	return nil
}

// pushWithBranch pushes ups (the claim's own update first) with the
// publication of the followed branch when it moved, in one atomic push
// (pushLeaving). tip is the branch tip published ("" none).
func (h *Held) pushWithBranch(ctx context.Context, op string, ups []update) (tip string, bad map[string]string, err error) {
	all := ups
	if tip, err = h.branchUpdate(ctx, &all); err != nil {
		return "", nil, err
	}
	if tip == "" {
		bad, err = h.r.push(ctx, op, ups)
		return "", bad, err
	}
	left, bad, err := h.pushLeaving(ctx, op, ups, all[len(all)-1])
	if err != nil {
		return "", nil, err
	}
	if left {
		tip = ""
	}
	return tip, bad, nil
}

// pushLeaving pushes ups with branch, an update of the story's branch on
// the server, in one atomic push. A branch refused alone, someone not
// holding the claim having moved it on the server, is left to them from
// then on (movedBy: foreign), and ups go again alone: their commits are
// not this process's to overwrite or delete, and the claim stays
// renewable. left reports that.
func (h *Held) pushLeaving(ctx context.Context, op string, ups []update, branch update) (left bool, bad map[string]string, err error) {
	bad, err = h.r.push(ctx, op, append(ups[:len(ups):len(ups)], branch))
	if err != nil {
		return false, nil, err
	}
	if now, ok := bad[h.Branch()]; ok && len(bad) == 1 {
		h.movedBy(ctx, now)
		bad, err = h.r.push(ctx, op, ups)
		return true, bad, err
	}
	return false, bad, nil
}

// valueNow is ref's value on the server as a refused push answered it
// (now), read from the server when the answer did not say (unknown): a
// claim deleted by a person and one replaced by another machine's read
// differently (LeaseLostError).
func (r *Remote) valueNow(ctx context.Context, ref, now string) string {
	if now != unknown {
		return now
	}
	read, err := r.lsRemote(ctx, "read "+ref, []update{{dst: ref}})
	if err != nil {
		return now
	}
	return read[ref]
}

// addsNothing reports whether the story's branch on the server is this
// process's (pushed, not foreign) and holds nothing the target had not
// when the claim was made, nor has the followed local branch. The caller
// holds h.mu.
func (h *Held) addsNothing(ctx context.Context) bool {
	if h.pushed == "" || h.foreign || h.seen == "" {
		return false
	}
	tip := h.pushed
	if h.branch != "" {
		local, err := h.r.Repo.Line(ctx, "rev-parse", "--verify", "--quiet", h.branch+"^{commit}")
		if err != nil || local == "" {
			return false
		}
		tip = local
	}
	for _, c := range []string{h.pushed, tip} {
		if in, err := h.r.Repo.OK(ctx, "merge-base", "--is-ancestor", c, h.seen); err != nil || !in {
			return false
		}
	}
	return true
}

// ours reports whether the story's branch on the server (h.pushed) holds
// nothing that tip lacks: this process pushed it, or tip was built on it.
// Otherwise the branch is foreign from then on. The caller holds h.mu.
func (h *Held) ours(ctx context.Context, tip string) bool {
	if h.foreign {
		return false
	}
	if h.pushed == "" || h.pushed == tip {
		return true
	}
	if in, err := h.r.Repo.OK(ctx, "merge-base", "--is-ancestor", h.pushed, tip); err == nil && in {
		return true
	}
	h.foreign = true
	return false
}

// movedBy records that the story's branch was moved on the server by
// someone not holding the claim, to now (unknown: read it). The caller
// holds h.mu.
func (h *Held) movedBy(ctx context.Context, now string) {
	h.foreign = true
	if now = h.r.valueNow(ctx, h.Branch(), now); now != unknown {
		h.pushed = now
	}
}

// branchUpdate adds the publication of the followed branch to ups when its
// tip is not what the server has; it returns the tip it publishes.
func (h *Held) branchUpdate(ctx context.Context, ups *[]update) (string, error) {
	if h.branch == "" {
		return "", nil
	}
	tip, err := h.r.Repo.Line(ctx, "rev-parse", "--verify", "--quiet", h.branch+"^{commit}")
	if err != nil || tip == "" || tip == h.pushed || !h.ours(ctx, tip) {
		return "", nil
	}
	*ups = append(*ups, update{src: tip, dst: h.Branch(), expect: h.pushed})
	return tip, nil
}

// Publish pushes the followed branch now (with a renewal).
func (h *Held) Publish(ctx context.Context) error { return h.Renew(ctx) }

// Release gives the story back: deletes the claim by compare-and-swap on
// its exact value and, in the same atomic push, publishes the branch's
// last commits, so nothing committed is lost and another machine can go on
// from them.
func (h *Held) Release(ctx context.Context) error {
	h.Close()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return nil
	}
	if err := h.LostErr(); err != nil {
		return err
	}
	ups := []update{{dst: h.claim.Ref, expect: h.claim.Commit}}
	var tip string
	var bad map[string]string
	var err error
	drop := h.addsNothing(ctx)
	if drop {
		// Its branch on the server holds nothing the target lacks (work
		// given back before it began): it goes with the claim, not left
		// at an old target tip - unless someone else moved it meanwhile.
		var left bool
		left, bad, err = h.pushLeaving(ctx, "release the claim on "+h.Story, ups, update{dst: h.Branch(), expect: h.pushed})
		drop = !left
	} else {
		tip, bad, err = h.pushWithBranch(ctx, "release the claim on "+h.Story, ups)
	}
	if err != nil {
		return err
	}
	if now, ok := bad[h.claim.Ref]; ok {
		lerr := &LeaseLostError{Story: h.Story, Now: h.r.valueNow(ctx, h.claim.Ref, now)}
		h.markLost(lerr)
		return lerr
	}
	if len(bad) > 0 {
		return fmt.Errorf("remote %s: %s was moved by someone not holding its claim; the claim is kept", h.r.Name, h.Branch())
	}
	if tip != "" {
		h.pushed = tip
	}
	if drop {
		h.pushed = ""
	}
	h.done = true
	return nil
}

// claimCommit writes c as a commit on the empty tree and returns its id.
func (r *Remote) claimCommit(ctx context.Context, c *Claim) (string, error) {
	body, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	return r.metaCommit(ctx, "wiggum claim "+c.Story, body, "")
}

// metaCommit writes a commit on the empty tree (with parent, when given)
// whose message is subject and a JSON body.
func (r *Remote) metaCommit(ctx context.Context, subject string, body []byte, parent string) (string, error) {
	tree, err := r.emptyTree(ctx)
	if err != nil {
		return "", err
	}
	msg := []byte(oneLine(subject) + "\n\n" + string(body) + "\n")
	if r.obj.w != nil {
		var parents []string
		if parent != "" {
			parents = []string{parent}
		}
		who := "wiggum <wiggum@" + oneLine(r.Me.Host) + ">"
		return r.obj.commit(tree, parents, who, who, r.now(), msg)
	}
	args := []string{"commit-tree", tree}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	args = append(args, "-F", "-")
	env := []string{"GIT_AUTHOR_NAME=wiggum", "GIT_AUTHOR_EMAIL=wiggum@" + r.Me.Host, "GIT_COMMITTER_NAME=wiggum", "GIT_COMMITTER_EMAIL=wiggum@" + r.Me.Host}
	out, err := r.Repo.RunEnv(ctx, env, msg, args...)
	if err != nil {
		return "", fmt.Errorf("remote: write a claim commit: %w", err)
	}
	return strings.TrimSpace(out), nil
}

var emptyTreeOnce sync.Map // repo common dir -> tree id

func (r *Remote) emptyTree(ctx context.Context) (string, error) {
	if t, ok := emptyTreeOnce.Load(r.Repo.CommonDir); ok {
		return t.(string), nil
	}
	if r.obj.w != nil {
		t, err := r.obj.write("tree", nil)
		if err == nil {
			emptyTreeOnce.Store(r.Repo.CommonDir, t)
		}
		return t, err
	}
	out, err := r.Repo.RunEnv(ctx, nil, []byte{}, "hash-object", "-t", "tree", "-w", "--stdin")
	if err != nil {
		return "", fmt.Errorf("remote: write the empty tree: %w", err)
	}
	t := strings.TrimSpace(out)
	emptyTreeOnce.Store(r.Repo.CommonDir, t)
	return t, nil
}

func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == 0 {
			return ' '
		}
		return r
	}, s)
}

// object is one object read by readObjects.
type object struct {
	typ  string
	data []byte
}

// readObjects reads objects by name (an id, or rev:path) with one cat-file
// --batch; a missing one is absent from the map.
func (r *Remote) readObjects(ctx context.Context, names []string) (map[string]object, error) {
	out := map[string]object{}
	if len(names) == 0 {
		return out, nil
	}
	data, err := r.Repo.RunEnv(ctx, nil, []byte(strings.Join(names, "\n")+"\n"), "cat-file", "--batch")
	if err != nil {
		return nil, fmt.Errorf("remote: read objects: %w", err)
	}
	br := bufio.NewReader(strings.NewReader(data))
	for _, name := range names {
		head, err := br.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("remote: read objects: short output from git cat-file")
		}
		f := strings.Fields(head)
		if len(f) != 3 {
			continue // "<name> missing"
		}
		n, err := strconv.Atoi(f[2])
		if err != nil || n < 0 {
			return nil, fmt.Errorf("remote: read objects: bad cat-file header %q", head)
		}
		buf := make([]byte, n+1)
		if _, err := io.ReadFull(br, buf); err != nil {
			return nil, fmt.Errorf("remote: read objects: %w", err)
		}
		out[name] = object{typ: f[1], data: buf[:n]}
	}
	return out, nil
}

// maxMeta bounds the claim and conflict commits read: anything larger was
// not written by wiggum.
const maxMeta = 64 << 10

// decodeMeta splits a commit into its committer time and the JSON body of
// its message; ok is false when there is no JSON object to read.
func decodeMeta(raw []byte, v any) (committed time.Time, ok bool) {
	head, msg, _ := strings.Cut(string(raw), "\n\n")
	for _, line := range strings.Split(head, "\n") {
		if rest, found := strings.CutPrefix(line, "committer "); found {
			f := strings.Fields(rest)
			if len(f) >= 2 {
				if sec, err := strconv.ParseInt(f[len(f)-2], 10, 64); err == nil {
					committed = time.Unix(sec, 0).UTC()
				}
			}
		}
	}
	i := strings.IndexByte(msg, '{')
	if i < 0 {
		return committed, false
	}
	return committed, json.Unmarshal([]byte(strings.TrimSpace(msg[i:])), v) == nil
}

func (r *Remote) decodeClaim(key, sha string, raw []byte) *Claim {
	c := &Claim{}
	committed, ok := decodeMeta(raw, c)
	if !ok || c.Time.IsZero() || c.LeaseMS <= 0 {
		c = &Claim{Story: key, Since: committed, Time: committed, LeaseMS: DefaultLease.Milliseconds(), Unreadable: true}
	}
	c.Ref, c.Commit = ClaimsPrefix+key, sha
	c.seen, c.since = r.sighted(c.Ref, sha), r.since
	return c
}

// sighting is a claim ref's value and when this process first saw it.
type sighting struct {
	sha string
	at  time.Time
}

// sighted is when this process first saw ref at sha: a claim's lease runs
// from there (Claim.Stale). A renewal is a new value, seen anew.
func (r *Remote) sighted(ref, sha string) time.Time {
	r.seenMu.Lock()
	defer r.seenMu.Unlock()
	if s, ok := r.seen[ref]; ok && s.sha == sha {
		return s.at
	}
	if r.seen == nil {
		r.seen = map[string]sighting{}
	}
	at := r.sightingClock()
	r.seen[ref] = sighting{sha: sha, at: at}
	return at
}

// sightingClock reads the clock sightings are timed by; r.seenMu is held.
func (r *Remote) sightingClock() time.Time {
	if r.clock != nil {
		return r.clock()
	}
	return time.Now()
}

// since is how long ago t was on the clock sightings are timed by.
func (r *Remote) since(t time.Time) time.Duration {
	r.seenMu.Lock()
	defer r.seenMu.Unlock()
	return r.sightingClock().Sub(t)
}

func decodeConflict(key, sha string, raw []byte) *Conflict {
	c := &Conflict{}
	committed, ok := decodeMeta(raw, c)
	if !ok || c.Story == "" {
		c = &Conflict{Story: key, Time: committed, Unreadable: true}
	}
	c.Ref, c.Commit = ConflictsPrefix+key, sha
	return c
}
