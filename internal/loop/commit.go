package loop

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// treeState is what `git status` says about the working tree.
type treeState struct {
	paths  []string // every changed, staged or untracked path (both sides of a rename)
	staged []string // paths with staged changes
}

func status(ctx context.Context, repo *git.Repo) (*treeState, error) {
	out, err := repo.Run(ctx, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
	if err != nil {
		return nil, fmt.Errorf("git status: %w", err)
	}
	ts := &treeState{}
	for _, e := range git.SplitZ(out) {
		if len(e) < 4 {
			continue
		}
		p := e[3:]
		ts.paths = append(ts.paths, p)
		if x := e[0]; x != ' ' && x != '?' && x != '!' {
			ts.staged = append(ts.staged, p)
		}
	}
	return ts, nil
}

// committer commits what an iteration changed, never the paths that were
// dirty or untracked before the run started.
type committer struct {
	repo  *git.Repo
	env   []string // WIGGUM_SESSION, so a journal hook attributes the commit
	keep  []string // paths dirty before the run, never committed
	keepM map[string]bool
}

func newCommitter(repo *git.Repo, env []string, keep []string) *committer {
	c := &committer{repo: repo, env: env, keep: keep, keepM: map[string]bool{}}
	for _, p := range keep {
		c.keepM[p] = true
	}
	return c
}

func (c *committer) git(ctx context.Context, stdin []byte, args ...string) (string, error) {
	return c.repo.RunEnv(ctx, c.env, stdin, args...)
}

// stage adds every change under pathspec (":/" is the whole tree) except
// the kept paths; it unstages kept paths an agent may have added.
func (c *committer) stage(ctx context.Context, pathspec string) error {
	if len(c.keep) == 0 {
		_, err := c.git(ctx, nil, "add", "-A", "--", pathspec)
		return err
	}
	var keep strings.Builder
	for _, p := range c.keep {
		keep.WriteString(":(top,literal)" + p + "\x00")
	}
	// reset of a path that is neither in HEAD nor in the index fails; only
	// reset what is staged.
	st, err := status(ctx, c.repo)
	if err != nil {
		return err
	}
	var unstage strings.Builder
	for _, p := range st.staged {
		if c.keepM[p] {
			unstage.WriteString(":(top,literal)" + p + "\x00")
		}
	}
	if unstage.Len() > 0 {
		if _, err := c.git(ctx, []byte(unstage.String()), "reset", "-q", "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
			return err
		}
	}
	spec := pathspec + "\x00" + strings.ReplaceAll(keep.String(), ":(top,literal)", ":(top,literal,exclude)")
	_, err = c.git(ctx, []byte(spec), "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul")
	return err
}

var commitSHA = regexp.MustCompile(`^\[[^\]]* ([0-9a-f]{4,})\]`)

// commit stages pathspec and commits it with message. It returns the new
// commit's short id, or "" when there was nothing to commit.
func (c *committer) commit(ctx context.Context, pathspec, message string) (string, error) {
	if err := c.stage(ctx, pathspec); err != nil {
		return "", fmt.Errorf("stage changes: %w", err)
	}
	out, err := c.git(ctx, nil, "commit", "-m", message)
	if err != nil {
		var ge *git.Error
		if errors.As(err, &ge) && ge.Status() == 1 && strings.TrimSpace(ge.Stderr) == "" {
			// git says "nothing to commit" on stdout and exits 1.
			return "", nil
		}
		return "", fmt.Errorf("commit: %w", err)
	}
	if m := commitSHA.FindStringSubmatch(out); m != nil {
		return m[1], nil
	}
	return c.repo.Line(ctx, "rev-parse", "--short", "HEAD")
}

// relPath is path relative to the repository root with forward slashes,
// for git pathspecs and prompts.
func relPath(root, path string) string {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(rel)
}

func summarize(paths []string, n int) string {
	sorted := append([]string(nil), paths...)
	sort.Strings(sorted)
	if len(sorted) <= n {
		return strings.Join(sorted, ", ")
	}
	return strings.Join(sorted[:n], ", ") + fmt.Sprintf(" and %d more", len(sorted)-n)
}
