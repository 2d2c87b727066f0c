package checkpoint

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// Files git is told to look away from. `git update-index --assume-unchanged`
// and `--skip-worktree` - the advice everywhere for a tracked file with
// local settings (a config with a local database, a .env.local) - hide the
// file's changes from git status, and so they were hidden from the
// checkpoint, from the rollback and from its backup: an agent that
// rewrote such a file kept its version through the rollback, and the
// person's local content, which the checkpoint should have held, was
// saved nowhere. The checkpoint and the rollback read those entries from
// the index themselves (no git process: the index is in the page cache,
// status has just read it) and take each file whose stat data says it
// changed as status takes a changed file. The rollback leaves the flags
// as they were.

// Index entry flags (git's Documentation/gitformat-index).
const (
	indexAssumeValid  = 0x8000 // flags: assume-unchanged
	indexSkipWorktree = 0x4000 // extended flags: skip-worktree
)

// withHidden returns now with the changes of the files the index hides
// from git status added, or now itself when there are none. A file hidden
// by skip-worktree that is not in the working tree is sparse checkout's,
// not a change; one hidden by assume-unchanged that is gone was deleted.
// An index it cannot read adds nothing: git status, which read it first,
// would have failed.
func (s *State) withHidden(now *git.Status) *git.Status {
	if now == nil || now.Head == "" {
		return now
	}
	data, err := os.ReadFile(s.indexPath())
	if err != nil || len(data) < 12 {
		return now
	}
	idLen := len(now.Head) / 2
	known := make(map[string]bool, len(now.Changes))
	for _, c := range now.Changes {
		known[c.Path] = true
	}
	var hidden []git.Change
	// A sparse checkout flags every file outside its cone skip-worktree:
	// a directory found absent answers for all its files, so a sparse
	// monorepo costs a stat a directory, not one a file.
	absent := map[string]bool{}
	_, _ = scanIndex(data, idLen, func(raw, name []byte, flags uint16) error {
		assume := flags&indexAssumeValid != 0
		skip := flags&indexExtended != 0 && binary.BigEndian.Uint16(raw[40+idLen+2:])&indexSkipWorktree != 0
		if (!assume && !skip) || flags&indexStageMask != 0 || known[string(name)] {
			return nil
		}
		if skip && !assume && dirGone(s.Repo.Root, path.Dir(string(name)), absent) {
			return nil // sparse checkout's, not a change
		}
		if c, ok := s.hiddenChange(string(name), raw, idLen, skip); ok {
			c.AssumeUnchanged, c.SkipWorktree = assume, skip
			hidden = append(hidden, c)
		}
		return nil
	})
	if len(hidden) == 0 {
		return now
	}
	out := *now
	out.Changes = append(append([]git.Change(nil), now.Changes...), hidden...)
	return &out
}

// HiddenPaths lists the files the index hides from git status
// (skip-worktree, assume-unchanged) whose content changed since their entry
// was made: the person's local settings, which git add -A leaves alone -
// until an agent takes the flag off. The loop leaves them out of its
// commits, as it does the changes the tree had when the run began.
func (s *State) HiddenPaths(now *git.Status) []string {
	var paths []string
	for _, c := range s.withHidden(now).Changes {
		if c.AssumeUnchanged || c.SkipWorktree {
			paths = append(paths, c.Path)
		}
	}
	return paths
}

// hiddenChange is the change of the hidden file at path whose index entry
// is raw, if its file changed since the entry's stat data was taken (as
// git would judge it, had it looked).
func (s *State) hiddenChange(path string, raw []byte, idLen int, skip bool) (git.Change, bool) {
	mode := binary.BigEndian.Uint32(raw[24:28])
	if mode != 0o100644 && mode != 0o100755 && mode != 0o120000 {
		return git.Change{}, false // a submodule or a mode git does not write
	}
	c := git.Change{Path: path, Unstaged: true, HeadMode: strconv.FormatUint(uint64(mode), 8), HeadOID: hex.EncodeToString(raw[40 : 40+idLen])}
	if strings.ContainsAny(path, "\n\r") || !git.TreePath(path) {
		return git.Change{}, false // a name git would not check out
	}
	fi, err := os.Lstat(filepath.Join(s.Repo.Root, filepath.FromSlash(path)))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if skip {
			return git.Change{}, false
		}
		c.WorktreeMode = "000000"
		return c, true
	case err != nil:
		return git.Change{}, false
	case fi.Mode()&fs.ModeSymlink != 0:
		c.WorktreeMode = "120000"
	case fi.Mode().IsRegular():
		c.WorktreeMode = "100644"
		if fi.Mode()&0o111 != 0 {
			c.WorktreeMode = "100755"
		}
	default:
		return git.Change{}, false // a directory where the file was: git's to judge
	}
	mtime := fi.ModTime()
	sameStat := binary.BigEndian.Uint32(raw[8:12]) == uint32(mtime.Unix()) &&
		binary.BigEndian.Uint32(raw[12:16]) == uint32(mtime.Nanosecond()) &&
		binary.BigEndian.Uint32(raw[36:40]) == uint32(fi.Size())
	if sameStat && c.WorktreeMode == c.HeadMode {
		return git.Change{}, false
	}
	return c, true
}

// unhideInIndex clears the hiding flags of now's hidden changes in the
// private index t, so that update-index reads their files: it passes over
// an assume-unchanged entry and removes a skip-worktree one under
// --remove. One update-index a flag, only for a tree that has such files.
func (s *State) unhideInIndex(ctx context.Context, t *treeIndex, now *git.Status) error {
	return s.setHiding(ctx, t.env, now.Changes, "--no-assume-unchanged", "--no-skip-worktree")
}

// setHiding runs `git update-index FLAG -z --stdin` (in env's index) for
// the changes hidden by assume-unchanged (assume) and by skip-worktree
// (skip) - each flag for its own paths, as update-index takes one such
// flag a call.
func (s *State) setHiding(ctx context.Context, env []string, changes []git.Change, assume, skip string) error {
	var a, k strings.Builder
	for _, c := range changes {
		if c.AssumeUnchanged {
			a.WriteString(c.Path + "\x00")
		}
		if c.SkipWorktree {
			k.WriteString(c.Path + "\x00")
		}
	}
	for _, run := range []struct {
		flag  string
		paths string
	}{{assume, a.String()}, {skip, k.String()}} {
		if run.paths == "" {
			continue
		}
		if _, err := s.Repo.RunEnv(ctx, env, []byte(run.paths), "update-index", run.flag, "-z", "--stdin"); err != nil {
			return err
		}
	}
	return nil
}

// lostFlags lists the files the checkpoint recorded hidden (cp's
// AssumeUnchanged, SkipWorktree) that now does not show hidden: the
// attempt took the flag off (an agent that ran update-index
// --no-skip-worktree to commit the file). The rollback returns their
// content, and flags them again.
func lostFlags(cp *Checkpoint, now *git.Status) []git.Change {
	type flag struct {
		path string
		skip bool
	}
	has := map[flag]bool{}
	for _, c := range now.Changes {
		has[flag{c.Path, false}] = c.AssumeUnchanged
		has[flag{c.Path, true}] = c.SkipWorktree
	}
	var lost []git.Change
	for _, p := range cp.AssumeUnchanged {
		if !has[flag{p, false}] {
			lost = append(lost, git.Change{Path: p, AssumeUnchanged: true})
		}
	}
	for _, p := range cp.SkipWorktree {
		if !has[flag{p, true}] {
			lost = append(lost, git.Change{Path: p, SkipWorktree: true})
		}
	}
	return lost
}

// dirGone reports whether dir (slash-separated, under root; "." is root)
// is not a directory in the working tree. absent caches the answers, and a
// directory under one that is gone is gone without a stat, so a deep
// absent tree costs one stat a level.
func dirGone(root, dir string, absent map[string]bool) bool {
	if dir == "." {
		return false
	}
	if gone, ok := absent[dir]; ok {
		return gone
	}
	gone := dirGone(root, path.Dir(dir), absent)
	if !gone {
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(dir)))
		gone = err != nil || !fi.IsDir()
	}
	absent[dir] = gone
	return gone
}
