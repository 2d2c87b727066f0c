package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

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
	if err != nil || !moved {
		return nil
	}
	if _, err := repo.Run(ctx, "update-ref", "-m", "wiggum: finish an interrupted merge: "+firstLine(in.Message), in.Target, in.New, in.Old); err != nil {
		return fmt.Errorf("merge: finish the interrupted merge into %s: %w", short(in.Target), err)
	}
	return nil
}
