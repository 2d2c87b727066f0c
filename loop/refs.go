package loop

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// refPrefixes are the refs an attempt's agent makes besides its branch's
// commits: tags, and branches of its own.
var refPrefixes = []string{"refs/tags/", "refs/heads/"}

// unref takes back, once a failed attempt is rolled back, the tags and
// branches its agent made or moved onto the work the rollback discarded -
// a release tag on a commit that failed its tests stayed, for the next
// attempt's `git tag` to trip on ("already exists") and for a later
// `git push --tags` to publish. A ref changed since the attempt started
// whose commit is in the attempt's backup and not on the rolled-back
// branch goes back to where it was, or is removed if the attempt made it;
// the backup holds its commits. Any other ref is left alone: one on the
// history kept, and one whose commit the attempt did not make (another
// worker's, in parallel mode). Reading the refs costs no git process; git
// runs only for a ref that changed.
func (e *executor) unref(ctx context.Context, backup string) (notes []string) {
	return e.unrefIn(ctx, e.st.Repo, "HEAD", backup)
}

// unrefIn is unref reading refs through repo, with kept the commit whose
// history stays and saved the backups that hold what was discarded (the
// first named in the notes).
func (e *executor) unrefIn(ctx context.Context, repo *git.Repo, kept string, saved ...string) (notes []string) {
	var restored []string
	if e.refsAtStart == nil || len(saved) == 0 || saved[0] == "" {
		return nil
	}
	backup := saved[0]
	now, ok := repo.Refs(refPrefixes...)
	if !ok {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	names := make([]string, 0, len(now))
	for name, v := range now {
		if old, had := e.refsAtStart[name]; (!had || old != v) && name != e.attemptBranch {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		v := now[name]
		commit, err := repo.Line(ctx, "rev-parse", "--verify", "--quiet", v+"^{commit}")
		if err != nil {
			continue // no commit: not the attempt's work
		}
		if stays, err := repo.OK(ctx, "merge-base", "--is-ancestor", commit, kept); err != nil || stays {
			continue
		}
		if !slices.ContainsFunc(saved, func(b string) bool {
			discarded, err := repo.OK(ctx, "merge-base", "--is-ancestor", commit, b)
			return err == nil && discarded
		}) {
			continue
		}
		kind, short := "branch", strings.TrimPrefix(name, "refs/heads/")
		if s, ok := strings.CutPrefix(name, "refs/tags/"); ok {
			kind, short = "tag", s
		}
		if old, had := e.refsAtStart[name]; had {
			if _, err := repo.Run(ctx, "update-ref", "-m", "wiggum: back from the failed attempt's work", name, old, v); err == nil {
				restored = append(restored, name)
				notes = append(notes, fmt.Sprintf("%s %s, which the attempt moved onto the work it discarded, is back at %.12s", kind, short, old))
			}
			continue
		}
		if _, err := repo.Run(ctx, "update-ref", "-d", name, v); err == nil {
			restored = append(restored, name)
			notes = append(notes, fmt.Sprintf("%s %s, which the attempt made on the work it discarded, is removed (%s holds that work)", kind, short, backup))
		}
	}
	if len(restored) > 0 {
		e.event("refs_restored", map[string]any{"backup": backup, "refs": restored})
	}
	return notes
}
