package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/wiggum-dev/wiggum/checkpoint"
	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// IntentFile, in the git dir every worktree shares, records a merge
// between its two visible steps - moving the checked-out tree, then the
// branch - so that a process killed in between leaves a record, and the
// next holder of the repository mutex finishes the merge instead of leaving
// the tree ahead of its branch.
const IntentFile = "wiggum-merge.json"

type intent struct {
	Tree    string `json:"tree"`   // the working tree that has Target checked out
	Target  string `json:"target"` // full ref
	Old     string `json:"old"`
	New     string `json:"new"`
	Message string `json:"message"`
}

func intentPath(repo *git.Repo) string { return filepath.Join(repo.CommonDir, IntentFile) }

func writeIntent(repo *git.Repo, in intent) error {
	if err := statefile.WriteJSON(intentPath(repo), in); err != nil {
		return fmt.Errorf("merge: record the merge in progress: %w", err)
	}
	return nil
}

// clearIntent removes the record; missing is fine, and a leftover one is
// harmless because finishing it checks the refs first.
func clearIntent(repo *git.Repo) { _ = os.Remove(intentPath(repo)) }

// finishInterrupted completes a merge whose process died after moving the
// tree and before moving the branch. It acts only when the branch still has
// its old value and the tree's index holds exactly the merge result;
// anything else means the merge never touched the tree, already finished,
// or was overtaken, and the record is dropped. The caller holds the mutex.
func finishInterrupted(ctx context.Context, repo *git.Repo) error {
	var in intent
	err := statefile.ReadJSON(intentPath(repo), &in, nil)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		// Unreadable: nothing can be proven from it; keep it for a person.
		_ = os.Rename(intentPath(repo), intentPath(repo)+".corrupt")
		return nil
	}
	defer clearIntent(repo)
	cur, err := repo.Line(ctx, "rev-parse", "--verify", "--quiet", in.Target)
	if err != nil || cur != in.Old {
		return nil
	}
	head, err := repo.Line(ctx, "-C", in.Tree, "symbolic-ref", "--quiet", "HEAD")
	if err != nil || head != in.Target {
		return nil
	}
	moved, err := repo.OK(ctx, "-C", in.Tree, "diff-index", "--cached", "--quiet", in.New, "--")
	if err != nil {
		return nil
	}
	if !moved {
		// Killed inside read-tree: it had checked every path it changes
		// was clean, then died writing them, before the index. Finish
		// its work on exactly those paths.
		if done, err := finishReadTree(ctx, repo, in); err != nil || !done {
			return err
		}
	}
	if _, err := repo.Run(ctx, "update-ref", "-m", "wiggum: finish an interrupted merge: "+firstLine(in.Message), in.Target, in.New, in.Old); err != nil {
		return fmt.Errorf("merge: finish the interrupted merge into %s: %w", checkpoint.BranchName(in.Target), err)
	}
	return nil
}

// finishReadTree completes a two-tree read-tree that died between writing
// files and writing the index. read-tree checks that every path it changes
// is clean before it writes any, so such a death leaves the index at Old
// and only paths that differ between Old and New changed in the tree, each
// holding New's content, a torn prefix of it, or nothing. Exactly then it
// moves those paths to New (index and files) and reports true. A tree that
// read-tree never touched, or that holds anything else (a person's edit),
// is left alone and reported false: the merge is then undone by not
// finishing it.
func finishReadTree(ctx context.Context, repo *git.Repo, in intent) (bool, error) {
	tree := &git.Repo{Root: in.Tree, GitDir: repo.GitDir, CommonDir: repo.CommonDir}
	atOld, err := tree.OK(ctx, "diff-index", "--cached", "--quiet", in.Old, "--")
	if err != nil || !atOld {
		return false, nil
	}
	out, err := tree.Run(ctx, "diff-tree", "-r", "-z", "--no-renames", "--name-status", in.Old, in.New)
	if err != nil {
		return false, nil
	}
	f := git.SplitZ(out)
	status := map[string]string{}
	for i := 0; i+1 < len(f); i += 2 {
		status[f[i+1]] = f[i]
	}
	_, _ = tree.Run(ctx, "update-index", "-q", "--refresh")
	out, err = tree.Run(ctx, "diff-files", "--name-only", "-z")
	if err != nil {
		return false, nil
	}
	changed := git.SplitZ(out)
	for p, st := range status {
		// Added paths are not in the index yet: a file there is read-tree's
		// (checked below) or someone's.
		if st == "A" {
			if _, err := os.Lstat(filepath.Join(in.Tree, filepath.FromSlash(p))); err == nil {
				changed = append(changed, p)
			}
		}
	}
	if len(changed) == 0 {
		return false, nil
	}
	for _, p := range changed {
		st, ok := status[p]
		if !ok {
			return false, nil
		}
		have, rerr := os.ReadFile(filepath.Join(in.Tree, filepath.FromSlash(p)))
		if rerr != nil {
			if errors.Is(rerr, fs.ErrNotExist) {
				continue
			}
			return false, nil
		}
		if st == "D" {
			return false, nil
		}
		want, err := tree.Run(ctx, "cat-file", "blob", in.New+":"+p)
		if err != nil || !strings.HasPrefix(want, string(have)) {
			return false, nil
		}
	}
	var keep, gone strings.Builder
	for p, st := range status {
		spec := ":(top,literal)" + p + "\x00"
		if st == "D" {
			gone.WriteString(spec)
		} else {
			keep.WriteString(spec)
		}
	}
	if keep.Len() > 0 {
		if _, err := tree.RunEnv(ctx, nil, []byte(keep.String()), "checkout", in.New, "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
			return false, fmt.Errorf("merge: finish the interrupted update of %s: %w", in.Tree, err)
		}
	}
	if gone.Len() > 0 {
		if _, err := tree.RunEnv(ctx, nil, []byte(gone.String()), "rm", "-q", "-f", "--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
			return false, fmt.Errorf("merge: finish the interrupted update of %s: %w", in.Tree, err)
		}
	}
	ok, err := tree.OK(ctx, "diff-index", "--cached", "--quiet", in.New, "--")
	return err == nil && ok, nil
}
