package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// Snapshots and rollbacks cost what the git they need costs: a private
// index starts as the user's index (a hard link; git replaces an index by
// rename, never in place), so every unchanged file keeps the stat data git
// already has and is never hashed again; only the paths `git status` named
// are read. A rollback then writes only the paths whose content differs
// from the checkpoint, so untouched files keep their mtime.

// treeIndex is a private index describing the working tree.
type treeIndex struct {
	path string
	env  []string // GIT_INDEX_FILE pointing at it
}

func (t *treeIndex) remove() {
	if t != nil {
		os.Remove(t.path)
		os.Remove(t.path + ".lock")
	}
}

// newTreeIndex names a private index in the git dir (so renames within it
// are atomic), removing any left by a killed process with the same pid.
func (s *State) newTreeIndex() *treeIndex {
	t := &treeIndex{path: filepath.Join(s.Repo.GitDir, fmt.Sprintf("wiggum-index-%d", os.Getpid()))}
	t.env = []string{"GIT_INDEX_FILE=" + t.path}
	t.remove()
	return t
}

// indexPath is the user's index of this worktree.
func (s *State) indexPath() string { return filepath.Join(s.Repo.GitDir, "index") }

// worktreeIndex builds a private index that holds the working tree as now
// describes it (tracked and untracked, not ignored) and returns it with
// its tree. The user's index and working tree are untouched.
func (s *State) worktreeIndex(ctx context.Context, now *git.Status) (*treeIndex, string, error) {
	t := s.newTreeIndex()
	err := s.linkIndex(t)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// No index yet (a fresh clone that never staged): start from HEAD.
		if _, err := s.Repo.RunEnv(ctx, t.env, nil, "read-tree", now.Head); err != nil {
			return nil, "", err
		}
	case err != nil:
		return nil, "", fmt.Errorf("copy the index: %w", err)
	}
	if paths := now.Paths(); len(paths) > 0 {
		in := strings.Join(paths, "\x00") + "\x00"
		// --replace: a file that became a directory (or the reverse)
		// replaces the entries it conflicts with.
		if _, err := s.Repo.RunEnv(ctx, t.env, []byte(in), "update-index", "-z", "--add", "--remove", "--replace", "--stdin"); err != nil {
			t.remove()
			return nil, "", err
		}
	}
	tree, err := s.Repo.RunEnv(ctx, t.env, nil, "write-tree")
	if err != nil {
		t.remove()
		return nil, "", err
	}
	return t, strings.TrimSpace(tree), nil
}

// snapshot writes a commit, child of now's HEAD, whose tree is the whole
// working tree (tracked and untracked, not ignored). With keep, the private
// index behind it is returned for the caller to use and remove.
func (s *State) snapshot(ctx context.Context, now *git.Status, message string, keep bool) (commit, tree string, idx *treeIndex, err error) {
	idx, tree, err = s.worktreeIndex(ctx, now)
	if err != nil {
		return "", "", nil, err
	}
	if !keep {
		defer idx.remove()
	}
	out, err := s.Repo.RunEnv(ctx, wiggumIdent, []byte(message+"\n"), "commit-tree", tree, "-p", now.Head, "-F", "-")
	if err != nil {
		idx.remove()
		return "", "", nil, err
	}
	if !keep {
		idx = nil
	}
	return strings.TrimSpace(out), tree, idx, nil
}

// linkIndex gives t the user's index as its starting content.
func (s *State) linkIndex(t *treeIndex) error {
	err := os.Link(s.indexPath(), t.path)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// A file system without hard links: copy it.
	data, rerr := os.ReadFile(s.indexPath())
	if rerr != nil {
		return rerr
	}
	return os.WriteFile(t.path, data, 0o644)
}

// indexLock holds the user's index the way git does while it is replaced
// (index.lock, created exclusively): a concurrent git command fails on the
// lock instead of writing an index that is then overwritten.
type indexLock struct {
	path, index string
	done        bool
}

// lockIndex takes the index lock; a held lock is a refusal, nothing changed.
func (s *State) lockIndex() (*indexLock, error) {
	l := &indexLock{path: s.indexPath() + ".lock", index: s.indexPath()}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil, refuse("git's index is locked (%s exists): another git command is running, or one was killed; try again when it is done, or remove the file if no git is running", l.path)
	}
	if err != nil {
		return nil, fmt.Errorf("lock the index: %w", err)
	}
	f.Close()
	return l, nil
}

// commit puts the lock file (now holding the new index) in place.
func (l *indexLock) commit() error {
	if err := os.Rename(l.path, l.index); err != nil {
		return fmt.Errorf("replace the index: %w", err)
	}
	l.done = true
	return nil
}

// release drops the lock unless it was committed.
func (l *indexLock) release() {
	if !l.done {
		os.Remove(l.path)
	}
}

// restoreTree makes the working tree hold want (the checkpoint's tree)
// and the index hold cp.Head's tree, under lk. idx is a private index that
// holds now, the working tree's tree, with the user's stat data (made by
// snapshot); nil means the user's index does (the tree was clean). A
// two-tree read-tree from now to want is what git checkout does: entries
// the trees share are kept without reading, stat'ing or writing their
// files; only the paths that differ are written or removed (with the
// directories that leaves empty). --reset lets it overwrite an ignored
// file in the way, as reset --hard would.
func (s *State) restoreTree(ctx context.Context, lk *indexLock, idx *treeIndex, cp *Checkpoint, now, want string) error {
	if idx == nil {
		idx = s.newTreeIndex()
		if err := s.linkIndex(idx); err != nil {
			return fmt.Errorf("copy the index: %w", err)
		}
	}
	defer idx.remove()
	if _, err := s.Repo.RunEnv(ctx, idx.env, nil, "read-tree", "--reset", "-u", now, want); err != nil {
		return err
	}
	if cp.Snapshot == "" {
		// The private index now is the checkpoint commit's tree.
		if err := os.Rename(idx.path, lk.path); err != nil {
			return fmt.Errorf("replace the index: %w", err)
		}
	} else {
		// The index gets the checkpoint commit's tree; its uncommitted
		// changes stay in the working tree only, as when it was taken. A
		// single-tree merge keeps the stat data of every entry whose
		// content matches, reading no file.
		if _, err := s.Repo.RunEnv(ctx, idx.env, nil, "read-tree", "-m", "--index-output="+lk.path, cp.Head); err != nil {
			return err
		}
	}
	return lk.commit()
}
