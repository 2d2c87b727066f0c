package remote

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// LiveClaimError is an operator's release of a claim whose lease has not
// run out; nothing changed.
type LiveClaimError struct{ Claim *Claim }

func (e *LiveClaimError) Error() string {
	c := e.Claim
	return fmt.Sprintf("claims: %s is held by %s/%s (pid %d) and its lease runs until %s; pass --force to release it anyway (that machine then stops the story and keeps its work)",
		c.Story, c.Host, c.Machine, c.PID, c.Expires().UTC().Format(time.RFC3339))
}

// NotClaimedError is a story with neither a claim nor a conflict marker.
type NotClaimedError struct{ Story string }

func (e *NotClaimedError) Error() string {
	return fmt.Sprintf("claims: %s has no claim and no conflict marker on the server; nothing to release", e.Story)
}

// Released is what an operator's release removed, and the ready claim it
// made for a resolved branch (Ready).
type Released struct {
	Claim    *Claim    `json:"claim,omitempty"`
	Conflict *Conflict `json:"conflict,omitempty"`
	Ready    *Claim    `json:"ready,omitempty"`
}

// releaseTries and releaseFor bound how often, and how long, ReleaseStory
// reads and pushes again when the claim changed on the server in between:
// its holder renews it every third of its lease, so a release of a live
// claim (--force) races every renewal - on a loaded machine with a short
// lease, a read and a push can take longer than the time between two
// renewals for several tries in a row. It goes on until both are spent.
const (
	releaseTries = 5
	releaseFor   = 30 * time.Second
)

// releaseRead, when set (tests), runs after each read of a release.
var releaseRead func()

// ReleaseStory deletes story's claim and conflict marker on the server,
// each by compare-and-swap on the value just read, in one atomic push. A
// live claim is refused unless force. A claim that changed between the
// read and the push (renewed, taken) is read again and judged again: a
// forced release does not lose to a renewal.
func (r *Remote) ReleaseStory(ctx context.Context, target, story string, force bool) (*Released, error) {
	key, err := Key(story)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	for try := 1; ; try++ {
		out, raced, err := r.releaseOnce(ctx, target, story, key, force)
		if err != nil || !raced {
			return out, err
		}
		if try >= releaseTries && time.Since(start) >= releaseFor {
			return nil, fmt.Errorf("claims: %s changed on the server while releasing it, %d times in %s (renewed or taken); nothing was released, look again with wiggum claims list", story, try, time.Since(start).Round(time.Second))
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

// releaseOnce is one read and push of ReleaseStory; raced when the push
// found a value other than the one read.
func (r *Remote) releaseOnce(ctx context.Context, target, story, key string, force bool) (_ *Released, raced bool, _ error) {
	v, err := r.Fetch(ctx, target)
	if err != nil {
		return nil, false, err
	}
	if releaseRead != nil {
		releaseRead()
	}
	out := &Released{Claim: v.Claims[key], Conflict: v.Conflicts[key]}
	if out.Claim == nil && out.Conflict == nil {
		return nil, false, &NotClaimedError{Story: story}
	}
	if out.Claim != nil && !out.Claim.PastExpiry(r.now()) && !force && !r.deadHere(out.Claim) {
		return nil, false, &LiveClaimError{Claim: out.Claim}
	}
	var ups []update
	if out.Claim != nil {
		ups = append(ups, update{dst: out.Claim.Ref, expect: out.Claim.Commit})
	}
	if out.Conflict != nil {
		ups = append(ups, update{dst: out.Conflict.Ref, expect: out.Conflict.Commit})
		if out.Claim == nil {
			if out.Ready = r.resolved(ctx, v, out.Conflict, key); out.Ready != nil {
				ups = append(ups, update{src: out.Ready.Commit, dst: out.Ready.Ref, expect: ""})
			}
		}
	}
	bad, err := r.push(ctx, "release "+story, ups)
	if err != nil {
		return nil, false, err
	}
	if len(bad) > 0 {
		return nil, true, nil
	}
	return out, false, nil
}

// resolved returns a ready claim on the conflicted story of cf, not yet
// pushed, when its branch on the server (in v) now merges cleanly into
// the target and the story is still open there: a person resolved the
// conflict on the branch (or merged it by hand). The next run lands the
// branch as it is (landReady), without running an agent on the story -
// whose new attempt overwrote the person's resolution. nil otherwise: a
// marker of an older wiggum (no plan in it), a branch gone, one that
// still conflicts (the story goes on from it, with an agent).
func (r *Remote) resolved(ctx context.Context, v *View, cf *Conflict, key string) *Claim {
	tip := v.Branches[key]
	if cf.Unreadable || cf.Plan == "" || cf.Target != v.Target || tip == "" || v.Tip == "" {
		return nil
	}
	stories, err := r.PlanAt(ctx, v.Tip, cf.Plan)
	if err != nil || !open(stories, cf.Story) {
		return nil
	}
	if m, err := r.Repo.MergeTree(ctx, v.Tip, tip); err != nil || len(m.Conflicts) > 0 {
		return nil
	}
	subject := "Merge " + cf.Story
	for _, s := range stories {
		if s.ID == cf.Story && strings.TrimSpace(s.Title) != "" {
			subject += ": " + strings.TrimSpace(s.Title)
			break
		}
	}
	c, err := r.freshClaim(ctx, cf.Story, key, r.now())
	if err != nil {
		return nil
	}
	c.Ready, c.Target, c.Plan, c.Subject, c.Resolved = tip, cf.Target, cf.Plan, subject, true
	if c.Commit, err = r.claimCommit(ctx, &c); err != nil {
		return nil
	}
	return &c
}

// LandedStory is one landing on the target branch.
type LandedStory struct {
	Story   string `json:"story"`
	Commit  string `json:"commit"`
	Machine string `json:"machine"`
	// By is the machine that landed another's ready story.
	By   string    `json:"by,omitempty"`
	Time time.Time `json:"time"`
}

// Landed lists the stories landed on the fetched target (newest first, at
// most limit), from the Wiggum-Story trailers of its first-parent history.
func (r *Remote) Landed(ctx context.Context, target string, limit int) ([]LandedStory, error) {
	out, err := r.Repo.Run(ctx, "log", "--first-parent", fmt.Sprintf("-n%d", limit),
		"--format=%H%x00%cI%x00%(trailers:key=Wiggum-Story,valueonly,separator=%x20)%x00%(trailers:key=Wiggum-Machine,valueonly,separator=%x20)%x00%(trailers:key=Wiggum-Landed-By,valueonly,separator=%x20)%x1e",
		r.Tracking(target), "--")
	if err != nil {
		return nil, fmt.Errorf("remote: read the landings on %s: %w", target, err)
	}
	var res []LandedStory
	for _, rec := range strings.Split(out, "\x1e") {
		f := strings.Split(strings.TrimSpace(rec), "\x00")
		if len(f) != 5 || strings.TrimSpace(f[2]) == "" {
			continue
		}
		t, _ := time.Parse(time.RFC3339, f[1])
		res = append(res, LandedStory{Story: strings.TrimSpace(f[2]), Commit: f[0], Machine: strings.TrimSpace(f[3]), By: strings.TrimSpace(f[4]), Time: t})
	}
	return res, nil
}
