package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/plan"
)

// View is the server's shared state as of one fetch.
type View struct {
	Target    string               // the target branch, refs/heads/<name>
	Tip       string               // its commit on the server
	Claims    map[string]*Claim    // by story key
	Conflicts map[string]*Conflict // by story key
	Branches  map[string]string    // story branches' tips by story key
	Fetched   time.Time
}

// Tracking is where this clone keeps the server's copy of target.
func (r *Remote) Tracking(target string) string {
	return "refs/remotes/" + r.Name + "/" + strings.TrimPrefix(target, "refs/heads/")
}

// mirror is where this clone keeps the server's refs/wiggum/<kind>/ refs.
func (r *Remote) mirror(kind string) string {
	return "refs/wiggum/remotes/" + r.Name + "/" + kind + "/"
}

// Fetch reads the server's target branch, claims, conflict markers and
// story branches in one fetch (atomic for the local refs it updates).
func (r *Remote) Fetch(ctx context.Context, target string) (*View, error) {
	if err := r.fetch(ctx, "fetch "+strings.TrimPrefix(target, "refs/heads/")+" and the claims", target,
		"+"+target+":"+r.Tracking(target),
		"+"+ClaimsPrefix+"*:"+r.mirror("claims")+"*",
		"+"+ConflictsPrefix+"*:"+r.mirror("conflicts")+"*",
		"+"+BranchPrefix+"*:"+r.mirror("branches")+"*",
	); err != nil {
		return nil, err
	}
	return r.Local(ctx, target)
}

// FetchTarget fetches only the target branch and returns its tip.
func (r *Remote) FetchTarget(ctx context.Context, target string) (string, error) {
	if err := r.fetch(ctx, "fetch "+strings.TrimPrefix(target, "refs/heads/"), target, "+"+target+":"+r.Tracking(target)); err != nil {
		return "", err
	}
	return r.Repo.Line(ctx, "rev-parse", "--verify", "--quiet", r.Tracking(target)+"^{commit}")
}

func (r *Remote) fetch(ctx context.Context, op, target string, refspecs ...string) error {
	r.fetchMu.Lock()
	defer r.fetchMu.Unlock()
	r.stats.mu.Lock()
	r.stats.Fetches++
	r.stats.mu.Unlock()
	args := append([]string{"fetch", "--quiet", "--prune", "--no-tags", "--no-write-fetch-head", "--atomic", "--no-recurse-submodules", r.Name}, refspecs...)
	_, _, err := r.net(ctx, op, nil, args...)
	if err == nil {
		return nil
	}
	var ge *git.Error
	if errors.As(err, &ge) && strings.Contains(ge.Stderr, "couldn't find remote ref") {
		short := strings.TrimPrefix(target, "refs/heads/")
		return &BadRemoteError{Msg: fmt.Sprintf("remote %s: the server has no branch %s; push it first (git push %s HEAD:%s)", r.Name, short, r.Name, short)}
	}
	return r.transportError(op, err)
}

// Local reads the view the last Fetch left in this clone, without the
// network.
func (r *Remote) Local(ctx context.Context, target string) (*View, error) {
	v := &View{Target: target, Claims: map[string]*Claim{}, Conflicts: map[string]*Conflict{}, Branches: map[string]string{}, Fetched: r.now()}
	out, err := r.Repo.Run(ctx, "for-each-ref", "--format=%(objectname) %(refname)", r.Tracking(target), "refs/wiggum/remotes/"+r.Name+"/")
	if err != nil {
		return nil, fmt.Errorf("remote: list the fetched refs: %w", err)
	}
	claims, conflicts := map[string]string{}, map[string]string{}
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		sha, ref, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		switch {
		case ref == r.Tracking(target):
			v.Tip = sha
		case strings.HasPrefix(ref, r.mirror("claims")):
			claims[strings.TrimPrefix(ref, r.mirror("claims"))] = sha
			ids = append(ids, sha)
		case strings.HasPrefix(ref, r.mirror("conflicts")):
			conflicts[strings.TrimPrefix(ref, r.mirror("conflicts"))] = sha
			ids = append(ids, sha)
		case strings.HasPrefix(ref, r.mirror("branches")):
			v.Branches[strings.TrimPrefix(ref, r.mirror("branches"))] = sha
		}
	}
	objs, err := r.readObjects(ctx, ids)
	if err != nil {
		return nil, err
	}
	for key, sha := range claims {
		v.Claims[key] = r.decodeClaim(key, sha, objs[sha])
	}
	for key, sha := range conflicts {
		v.Conflicts[key] = decodeConflict(key, sha, objs[sha])
	}
	return v, nil
}

// SortedClaims lists the view's claims by story key.
func (v *View) SortedClaims() []*Claim {
	var out []*Claim
	for _, c := range v.Claims {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Ref < out[j].Ref })
	return out
}

// SortedConflicts lists the view's conflict markers by story key.
func (v *View) SortedConflicts() []*Conflict {
	var out []*Conflict
	for _, c := range v.Conflicts {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Ref < out[j].Ref })
	return out
}

// PlanAt reads the plan file planRel (a markdown plan or prd.json) as it is
// in commit: the plan lives on the target branch, so the server's tip, not
// a local file, says which stories are done.
func (r *Remote) PlanAt(ctx context.Context, commit, planRel string) ([]plan.Story, error) {
	p, dir, err := r.planFile(ctx, commit, planRel)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	return p.Stories()
}

// planFile writes planRel at commit into a temporary directory and opens it.
func (r *Remote) planFile(ctx context.Context, commit, planRel string) (plan.Plan, string, error) {
	data, err := r.Repo.Run(ctx, "cat-file", "blob", commit+":"+planRel)
	if err != nil {
		return nil, "", fmt.Errorf("remote: the plan %s is not in %.12s: it must be committed on the target branch: %w", planRel, commit, err)
	}
	dir, err := os.MkdirTemp("", "wiggum-plan-")
	if err != nil {
		return nil, "", err
	}
	base := path.Base(planRel)
	if err := os.WriteFile(filepath.Join(dir, base), []byte(data), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	p, err := plan.Resolve(dir, dir, plan.Source{File: base})
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	return p, dir, nil
}
