package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/renameio/v2"

	"github.com/wiggum-dev/wiggum/internal/statefile"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// Paths of wiggum's runtime state, relative to the working-tree root.
const (
	StateDir   = ".ralph"
	LockFile   = ".ralph/.agent-lock"      // contract: the bash loop locks the same file
	HolderFile = ".ralph/.agent-lock.json" // who holds the lock
	RuntimeDir = ".ralph/wiggum"           // checkpoint, journal, logs
)

// excludeLines keep runtime state out of every commit and every
// "untracked files" listing.
var excludeLines = []string{"/.ralph/.agent-lock", "/.ralph/.agent-lock.json", "/.ralph/wiggum/"}

// State is wiggum's view of one working tree.
type State struct {
	Repo *git.Repo
}

// Open finds the working tree containing dir and makes sure its runtime state
// is invisible to git.
func Open(ctx context.Context, dir string) (*State, error) {
	repo, err := git.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	st := &State{Repo: repo}
	if err := st.ensureExcluded(); err != nil {
		return nil, err
	}
	return st, nil
}

// Path joins a state-relative path onto the working-tree root.
func (s *State) Path(rel string) string { return filepath.Join(s.Repo.Root, filepath.FromSlash(rel)) }

// Runtime returns the path of a file in the runtime directory, creating the
// directory.
func (s *State) Runtime(name string) (string, error) {
	dir := s.Path(RuntimeDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", RuntimeDir, err)
	}
	return filepath.Join(dir, name), nil
}

func (s *State) ensureExcluded() error {
	path := filepath.Join(s.Repo.InfoDir, "exclude")
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	have := map[string]bool{}
	for _, l := range strings.Split(string(data), "\n") {
		have[strings.TrimSpace(l)] = true
	}
	var missing []string
	for _, l := range excludeLines {
		if !have[l] {
			missing = append(missing, l)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	out := string(data)
	if out != "" && !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	out += "# wiggum runtime state\n" + strings.Join(missing, "\n") + "\n"
	if err := os.MkdirAll(s.Repo.InfoDir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", s.Repo.InfoDir, err)
	}
	// Two wiggums may add the same lines at once; both write the same
	// content through a rename, so the race is harmless.
	if err := renameio.WriteFile(path, []byte(out), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// CorruptError is a state file that exists but cannot be read; it is never
// treated as "no state".
type CorruptError = statefile.CorruptError
