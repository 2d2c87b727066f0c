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
	"github.com/wiggum-dev/wiggum/internal/statefile"
	"github.com/wiggum-dev/wiggum/worktree"
)

// View is the server's shared state as of one fetch.
type View struct {
	Target    string               // the target branch, refs/heads/<name>
	Tip       string               // its commit on the server
	Claims    map[string]*Claim    // by story key
	Conflicts map[string]*Conflict // by story key
	Branches  map[string]string    // story branches' tips by story key
	Plan      []plan.Story         // the plan at Tip, when asked for
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
	return r.FetchPlan(ctx, target, "")
}

// FetchPlan is Fetch that also reads the plan planRel at the target's tip.
func (r *Remote) FetchPlan(ctx context.Context, target, planRel string) (*View, error) {
	if _, err := r.fetchAll(ctx, target); err != nil {
		return nil, err
	}
	return r.Local(ctx, target, planRel)
}

// fetchAll fetches the target and every shared ref and returns
// the target's tip.
func (r *Remote) fetchAll(ctx context.Context, target string) (string, error) {
	if err := r.fetch(ctx, "fetch "+strings.TrimPrefix(target, "refs/heads/")+" and the claims", target,
		"+"+target+":"+r.Tracking(target),
		"+"+ClaimsPrefix+"*:"+r.mirror("claims")+"*",
		"+"+ConflictsPrefix+"*:"+r.mirror("conflicts")+"*",
		"+"+BranchPrefix+"*:"+r.mirror("branches")+"*",
	); err != nil {
		return "", err
	}
	return r.readRef(ctx, r.Tracking(target))
}

// readRef reads a ref: its loose file when there is one (a fetch writes
// it; no process to start), else through git.
func (r *Remote) readRef(ctx context.Context, ref string) (string, error) {
	if data, err := statefile.ReadFile(filepath.Join(r.Repo.CommonDir, filepath.FromSlash(ref))); err == nil {
		if sha := strings.TrimSpace(string(data)); len(sha) >= 40 && !strings.HasPrefix(sha, "ref:") {
			return sha, nil
		}
	}
	return r.Repo.Line(ctx, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
}

// readTries are the waits before each try of a read of the server (a fetch,
// an ls-remote): it changes nothing there, and one can fail for a moment -
// seen with git daemon under 8 machines' landings: "upload-pack: not our
// ref 0000...", the connection reset - which must not end a machine's run.
var readTries = []time.Duration{0, 50 * time.Millisecond, 200 * time.Millisecond}

// retryRead runs read, a request that changes nothing on the server, until
// it succeeds, fails for good (not a *NetworkError: a missing branch, say),
// times out (it already took the whole timeout), or has had its tries.
func retryRead(ctx context.Context, read func() error) error {
	var err error
	for _, wait := range readTries {
		if wait > 0 {
			select {
			case <-ctx.Done():
				return err
			case <-time.After(wait):
			}
		}
		err = read()
		var ne *NetworkError
		if err == nil || !errors.As(err, &ne) || ne.Timeout || ctx.Err() != nil {
			return err
		}
	}
	return err
}

func (r *Remote) fetch(ctx context.Context, op, target string, refspecs ...string) error {
	return retryRead(ctx, func() error { return r.fetchOnce(ctx, op, target, refspecs...) })
}

func (r *Remote) fetchOnce(ctx context.Context, op, target string, refspecs ...string) error {
	r.fetchMu.Lock()
	defer r.fetchMu.Unlock()
	// A fetch's connectivity check reads every worktree's HEAD, which
	// git worktree add writes in two steps: no worktree may come or go
	// meanwhile (the repository mutex guards both).
	mu, err := worktree.LockRepo(ctx, r.Repo)
	if err != nil {
		return err
	}
	defer mu.Unlock()
	r.stats.mu.Lock()
	r.stats.Fetches++
	r.stats.mu.Unlock()
	// No auto-maintenance, commit-graph or forced-update walk: each is a
	// process or a history walk per fetch, and fetches are per story.
	// --no-show-forced-updates makes git print a three-line warning on
	// every fetch, which hid the error after it: the advice is off.
	args := append([]string{"-c", "fetch.writeCommitGraph=false", "-c", "advice.fetchShowForcedUpdates=false", "fetch", "--quiet", "--prune", "--no-tags", "--no-write-fetch-head",
		"--atomic", "--no-recurse-submodules", "--no-auto-maintenance", "--no-show-forced-updates", remoteArg}, refspecs...)
	_, _, err = r.net(ctx, op, uploadPack, nil, args...)
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
// network; with planRel, also the plan's stories at the tip.
func (r *Remote) Local(ctx context.Context, target, planRel string) (*View, error) {
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
	planName := ""
	if planRel != "" && v.Tip != "" {
		planName = v.Tip + ":" + planRel
		ids = append(ids, planName)
	}
	objs, err := r.readObjects(ctx, ids)
	if err != nil {
		return nil, err
	}
	for key, sha := range claims {
		v.Claims[key] = r.decodeClaim(key, sha, meta(objs[sha]))
	}
	for key, sha := range conflicts {
		v.Conflicts[key] = decodeConflict(key, sha, meta(objs[sha]))
	}
	if planName != "" {
		o, ok := objs[planName]
		if !ok || o.typ != "blob" {
			return nil, fmt.Errorf("remote: the plan %s is not in %.12s: it must be committed on the target branch", planRel, v.Tip)
		}
		if v.Plan, err = parsePlan(o.data, planRel); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// meta keeps a commit small enough to be a claim or a marker.
func meta(o object) []byte {
	if o.typ != "commit" || len(o.data) > maxMeta {
		return nil
	}
	return o.data
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
	data, err := r.Repo.Run(ctx, "cat-file", "blob", commit+":"+planRel)
	if err != nil {
		return nil, fmt.Errorf("remote: the plan %s is not in %.12s: it must be committed on the target branch: %w", planRel, commit, err)
	}
	return parsePlan([]byte(data), planRel)
}

func parsePlan(data []byte, planRel string) ([]plan.Story, error) {
	p, dir, err := planFile(data, planRel)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	return p.Stories()
}

// planFile writes a plan's content into a temporary directory, under its
// own name (which says its kind), and opens it there.
func planFile(data []byte, planRel string) (plan.Plan, string, error) {
	dir, err := os.MkdirTemp("", "wiggum-plan-")
	if err != nil {
		return nil, "", err
	}
	base := path.Base(planRel)
	if err := os.WriteFile(filepath.Join(dir, base), data, 0o644); err != nil {
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
