package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/wiggum-dev/wiggum/internal/badinput"
	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/plan"
	"github.com/wiggum-dev/wiggum/loop"
	"github.com/wiggum-dev/wiggum/remote"
	"github.com/wiggum-dev/wiggum/worktree"
)

// RemoteFlags name the shared server of a run across machines.
type RemoteFlags struct {
	Lease      time.Duration `default:"5m" help:"With --remote: how long a claim stays live without a renewal (renewed every third of it); a machine silent for longer loses its story to another."`
	NetTimeout time.Duration `name:"net-timeout" default:"60s" help:"With --remote: bound on every fetch and push; a hanging server is an error, not a hang."`
}

// openRemote opens the named remote of the clone at dir; a bad name or
// option is a usage error.
func openRemote(ctx context.Context, dir, name string, f RemoteFlags) (*git.Repo, *remote.Remote, error) {
	repo, err := git.Open(ctx, dir)
	if err != nil {
		return nil, nil, badinput.Wrap(err)
	}
	r, err := remote.Open(ctx, repo, name, remote.Options{Lease: f.Lease, Timeout: f.NetTimeout})
	if err != nil {
		return nil, nil, remoteErr(err)
	}
	return repo, r, nil
}

// remoteErr maps the remote package's input errors to exit 2.
func remoteErr(err error) error {
	var bad *remote.BadRemoteError
	var div *remote.DivergedError
	var live *remote.LiveClaimError
	var none *remote.NotClaimedError
	if errors.As(err, &bad) || errors.As(err, &div) || errors.As(err, &live) || errors.As(err, &none) {
		return badinput.Wrap(err)
	}
	return err
}

// sharedRun adapts remote.Coordinator to the loop's Coordinator.
type sharedRun struct {
	c *remote.Coordinator
}

func (s *sharedRun) Claim(ctx context.Context, busy map[string]bool) (loop.Claimed, error) {
	began := time.Now()
	h, story, err := s.c.Claim(ctx, busy)
	if err != nil || h == nil {
		return nil, err
	}
	return &sharedClaim{c: s.c, h: h, story: story, took: time.Since(began)}, nil
}

func (s *sharedRun) ClaimFinished(ctx context.Context, story string) (loop.Claimed, error) {
	began := time.Now()
	h, st, err := s.c.ClaimFinished(ctx, story)
	if err != nil || h == nil {
		return nil, err
	}
	h.Spent = time.Since(began)
	return &sharedClaim{c: s.c, h: h, story: st, took: h.Spent}, nil
}

func (s *sharedRun) Follow(ctx context.Context) (*worktree.Merged, error) { return s.c.Follow(ctx) }

func (s *sharedRun) Done(ctx context.Context) error { return s.c.Done(ctx) }

func (s *sharedRun) Final(ctx context.Context) (open, conflicted, held []string, err error) {
	return s.c.Final(ctx)
}

func (s *sharedRun) Remote() string { return s.c.R.Name }

func (s *sharedRun) LandedHere(ctx context.Context, story string) bool {
	landed, err := s.c.R.Landed(ctx, s.c.Target, 256)
	if err != nil {
		return false
	}
	for _, l := range landed {
		if l.Story == story {
			return l.By == "" && l.Machine == s.c.R.Me.String()
		}
	}
	return false
}

func (s *sharedRun) Stats() map[string]any {
	f, p := s.c.R.Counts()
	return map[string]any{"remote": s.c.R.Name, "machine": s.c.R.Me.String(), "fetches": f, "pushes": p}
}

type sharedClaim struct {
	c     *remote.Coordinator
	h     *remote.Held
	story plan.Story
	took  time.Duration

	lostOnce sync.Once
	lostHow  string
}

func (s *sharedClaim) Story() plan.Story     { return s.story }
func (s *sharedClaim) Start() string         { return s.h.Start }
func (s *sharedClaim) Follow(branch string)  { s.h.Follow(branch) }
func (s *sharedClaim) Lost() <-chan struct{} { return s.h.Lost() }

func (s *sharedClaim) Unclaimed() string {
	if !s.h.Unclaimed {
		return ""
	}
	return strings.TrimPrefix(s.h.Branch(), "refs/heads/")
}

// LostHow says how the claim was lost: deleted on the server (a person's
// wiggum claims release --force), or replaced by another machine's.
// A claim deleted because another machine took it over and landed the
// story reads as deleted too: the server's plan tells (one fetch, once).
func (s *sharedClaim) LostHow() string {
	s.lostOnce.Do(func() {
		s.lostHow = "another machine took its claim over"
		var l *remote.LeaseLostError
		if !errors.As(s.h.LostErr(), &l) || l.Now != "" {
			return
		}
		v, err := s.c.R.FetchPlan(context.Background(), s.c.Target, s.c.PlanRel)
		if err != nil {
			s.lostHow = "its claim is gone from the server (released by a person, or taken over by another machine and landed)"
			return
		}
		for _, st := range v.Plan {
			if st.ID == s.story.ID && st.Done {
				return
			}
		}
		s.lostHow = "its claim was released on the server (wiggum claims release --force), by no machine taking it over"
	})
	return s.lostHow
}

func (s *sharedClaim) Fields() map[string]any {
	c := s.h.Claim()
	// claim_ms is what the claim cost; wait_ms what the worker waited for
	// it (less when it was claimed ahead, while the last story ran). A
	// claim that rode along in a landing's push (rode) cost its view and
	// its commit; the push is the landing's, counted in its land_ms.
	f := map[string]any{"story": s.story.ID, "claim": c.Commit, "machine": s.c.R.Me.String(),
		"claim_ms": float64(s.h.Spent.Microseconds()) / 1000, "wait_ms": float64(s.took.Microseconds()) / 1000,
		"ahead": s.h.Ahead, "rode": s.h.Rode, "start": s.h.Start}
	if s.h.Unclaimed {
		f["start_unclaimed"] = true
	}
	if s.h.Took != nil {
		f["took_over"] = s.h.Took.Host + "/" + s.h.Took.Machine
		f["took_over_why"] = "lease ran out"
		if s.h.TookDead {
			f["took_over_why"] = "its process is gone"
		}
	}
	return f
}

func (s *sharedClaim) Land(ctx context.Context, branch, subject string, add *loop.PlanAdd) (string, int, error) {
	defer s.c.Forget(s.story.ID)
	var added *remote.Added
	if add != nil {
		added = &remote.Added{IDs: add.IDs, Lines: add.Lines, Objects: add.Objects}
	}
	l, err := s.c.Land(ctx, s.h, branch, subject, added)
	if err != nil {
		return "", 0, err
	}
	return l.Commit, l.Attempts, nil
}

func (s *sharedClaim) Release(ctx context.Context) error {
	defer s.c.Forget(s.story.ID)
	return s.c.Release(ctx, s.h)
}

func (s *sharedClaim) Ended() { s.c.Ended(s.h) }

// sharePlan refuses plans a shared run cannot tick inside a landing commit.
func sharePlan(p plan.Plan) error {
	if p.Kind() == "issues" {
		return badinput.Errorf("run: --remote needs a markdown plan or a prd.json committed on the target branch; an issues directory cannot be ticked inside a landing commit")
	}
	return nil
}

// ClaimsCmd is `wiggum claims`.
type ClaimsCmd struct {
	List    ClaimsListCmd    `cmd:"" help:"List the claims and conflict markers on the server."`
	Release ClaimsReleaseCmd `cmd:"" help:"Delete a story's claim (and conflict marker) on the server; refuses a live lease unless --force."`
}

// Help is shown by `wiggum claims --help`.
func (c *ClaimsCmd) Help() string {
	return `wiggum run --remote NAME claims each story on the git server as
refs/wiggum/claims/<story> before working on it, renews the claim while it
works, and deletes it in the same atomic push that lands the story. A story
whose branch could not merge is marked by refs/wiggum/conflicts/<story> and
left alone until an operator resolves it.

  wiggum claims list --remote origin
  wiggum claims list --remote origin --json
  wiggum claims release US-3 --remote origin          # a stale claim or a resolved conflict
  wiggum claims release US-3 --remote origin --force  # even a live claim: its machine stops the story`
}

// ClaimsListCmd is `wiggum claims list`.
type ClaimsListCmd struct {
	Remote string `default:"origin" placeholder:"NAME" help:"The remote the machines share."`
	Target string `placeholder:"BRANCH" help:"The shared target branch (default: the current branch)."`
	JSON   bool   `name:"json" help:"Print JSON: as wiggum status --remote --json."`
	RemoteFlags
}

// Run lists the claims.
func (c *ClaimsListCmd) Run(ctx context.Context, g *Globals) error {
	rep, err := sharedStatus(ctx, g, c.Remote, c.Target, c.RemoteFlags)
	if err != nil {
		return err
	}
	if c.JSON {
		return writeJSON(g.stdout, rep)
	}
	printShared(g.stdout, rep, false)
	return nil
}

// ClaimsReleaseCmd is `wiggum claims release`.
type ClaimsReleaseCmd struct {
	Story  string `arg:"" help:"The story id."`
	Remote string `default:"origin" placeholder:"NAME" help:"The remote the machines share."`
	Target string `placeholder:"BRANCH" help:"The shared target branch (default: the current branch)."`
	Force  bool   `help:"Release even a live claim (its machine stops the story and keeps its work)."`
	RemoteFlags
}

// Run releases one story.
func (c *ClaimsReleaseCmd) Run(ctx context.Context, g *Globals) error {
	repo, r, err := openRemote(ctx, g.WorkDir(), c.Remote, c.RemoteFlags)
	if err != nil {
		return err
	}
	tgt, err := targetBranch(ctx, repo, c.Target)
	if err != nil {
		return err
	}
	rel, err := r.ReleaseStory(ctx, tgt, c.Story, c.Force)
	if err != nil {
		return remoteErr(err)
	}
	if rel.Claim != nil {
		fmt.Fprintf(g.stdout, "released the claim on %s held by %s/%s (pid %d)\n", c.Story, rel.Claim.Host, rel.Claim.Machine, rel.Claim.PID)
	}
	if rel.Conflict != nil {
		fmt.Fprintf(g.stdout, "removed the conflict marker of %s; its branch %s stays on the server\n", c.Story, rel.Conflict.Branch)
	}
	if rel.Ready != nil {
		fmt.Fprintf(g.stdout, "%s's branch now merges cleanly into %s: it is marked ready, and the next run lands it without running an agent on the story\n", c.Story, strings.TrimPrefix(rel.Ready.Target, "refs/heads/"))
	}
	return nil
}

func targetBranch(ctx context.Context, repo *git.Repo, name string) (string, error) {
	if name != "" {
		return "refs/heads/" + name, nil
	}
	b, err := repo.Branch(ctx)
	if err != nil {
		return "", err
	}
	if b == "" {
		return "", badinput.Errorf("HEAD is detached; name the shared branch with --target")
	}
	return b, nil
}

// SharedStatus is the --json report of status --remote and claims list.
type SharedStatus struct {
	Remote    string               `json:"remote"`
	Target    string               `json:"target"`
	Tip       string               `json:"tip"`
	Machine   string               `json:"machine"` // this clone's
	Claims    []SharedClaim        `json:"claims"`
	Conflicts []*remote.Conflict   `json:"conflicts"`
	Landed    []remote.LandedStory `json:"landed"`
	now       time.Time
}

// SharedClaim is a claim with its lease as seen now.
type SharedClaim struct {
	*remote.Claim
	Live             bool    `json:"live"`
	LeaseLeftSeconds float64 `json:"lease_left_seconds"`
	Mine             bool    `json:"mine"`
	// ProcessGone: a claim of this clone whose process is gone.
	ProcessGone bool `json:"process_gone,omitempty"`
}

func sharedStatus(ctx context.Context, g *Globals, name, target string, f RemoteFlags) (*SharedStatus, error) {
	repo, r, err := openRemote(ctx, g.WorkDir(), name, f)
	if err != nil {
		return nil, err
	}
	tgt, err := targetBranch(ctx, repo, target)
	if err != nil {
		return nil, err
	}
	v, err := r.Fetch(ctx, tgt)
	if err != nil {
		return nil, remoteErr(err)
	}
	landed, err := r.Landed(ctx, tgt, 100)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	rep := &SharedStatus{Remote: name, Target: tgt, Tip: v.Tip, Machine: r.Me.String(), Claims: []SharedClaim{},
		Conflicts: v.SortedConflicts(), Landed: landed, now: now}
	if rep.Conflicts == nil {
		rep.Conflicts = []*remote.Conflict{}
	}
	if rep.Landed == nil {
		rep.Landed = []remote.LandedStory{}
	}
	for _, c := range v.SortedClaims() {
		left := c.Expires().Sub(now)
		rep.Claims = append(rep.Claims, SharedClaim{Claim: c, Live: left > 0, LeaseLeftSeconds: max(0, left.Seconds()), Mine: c.Machine == r.Me.ID, ProcessGone: r.DeadHere(c)})
	}
	return rep, nil
}

func printShared(w io.Writer, rep *SharedStatus, landed bool) {
	fmt.Fprintf(w, "remote %s · %s at %.12s · this machine %s\n", rep.Remote, short(rep.Target), rep.Tip, rep.Machine)
	if len(rep.Claims) == 0 {
		fmt.Fprintln(w, "claims: none")
	} else {
		fmt.Fprintf(w, "claims (%d):\n", len(rep.Claims))
	}
	for _, c := range rep.Claims {
		state := fmt.Sprintf("lease %s left", time.Duration(c.LeaseLeftSeconds*float64(time.Second)).Round(time.Second))
		if !c.Live {
			state = "STALE: another machine may take it over"
		}
		if c.ProcessGone {
			state = "its process on this machine is gone: a run here takes it over at once (wiggum claims release frees it now)"
		}
		if c.Ready != "" {
			// Its landing lost a race: the next machine to land carries it.
			state = fmt.Sprintf("finished, ready to land at %.12s · %s", c.Ready, state)
		}
		who := fmt.Sprintf("%s/%s pid %d", c.Host, c.Machine, c.PID)
		if c.Unreadable {
			who = "unreadable claim (not written by wiggum)"
		}
		fmt.Fprintf(w, "  %-16s %s · since %s · %s\n", c.Story, who, c.Since.Local().Format("15:04:05"), state)
	}
	if len(rep.Conflicts) > 0 {
		fmt.Fprintf(w, "conflicted (%d): resolve, then wiggum claims release STORY\n", len(rep.Conflicts))
		for _, c := range rep.Conflicts {
			fmt.Fprintf(w, "  %-16s branch %s · %s/%s · %v\n", c.Story, short(c.Branch), c.Host, c.Machine, c.Paths)
		}
	}
	if landed {
		fmt.Fprintf(w, "landed (%d):\n", len(rep.Landed))
		for _, l := range rep.Landed {
			by := ""
			if l.By != "" {
				by = " · landed by " + l.By
			}
			fmt.Fprintf(w, "  %-16s %.12s · %s%s · %s\n", l.Story, l.Commit, l.Machine, by, l.Time.Local().Format("15:04:05"))
		}
	}
}

func short(ref string) string {
	if len(ref) > len("refs/heads/") && ref[:len("refs/heads/")] == "refs/heads/" {
		return ref[len("refs/heads/"):]
	}
	return ref
}
