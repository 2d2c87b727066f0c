package checkpoint

import (
	"context"

	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// State is wiggum's view of one working tree: its layout (paths and the
// agent lock, owned by package layout) and its git repository.
type State struct {
	layout.Tree
	Repo *git.Repo
}

// Open finds the working tree containing dir and makes sure its runtime state
// is invisible to git.
func Open(ctx context.Context, dir string) (*State, error) {
	repo, err := git.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	st := FromRepo(repo)
	if err := layout.EnsureExcluded(repo.InfoDir); err != nil {
		return nil, err
	}
	return st, nil
}

// FromRepo is the State of an opened repository.
func FromRepo(repo *git.Repo) *State { return &State{Tree: layout.At(repo.Root), Repo: repo} }

// CorruptError is a state file that exists but cannot be read; it is never
// treated as "no state".
type CorruptError = statefile.CorruptError
