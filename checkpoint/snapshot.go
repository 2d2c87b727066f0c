package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/wiggum-dev/wiggum/internal/git"
	"github.com/wiggum-dev/wiggum/internal/killpoint"
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
func (s *State) newTreeIndex(suffix string) *treeIndex {
	t := &treeIndex{path: filepath.Join(s.Repo.GitDir, fmt.Sprintf("wiggum-index-%d%s", os.Getpid(), suffix))}
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
	t := s.newTreeIndex("")
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
	if err := s.unhideInIndex(ctx, t, now); err != nil {
		t.remove()
		return nil, "", err
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
// working tree (tracked and untracked, not ignored). It is built from HEAD's
// trees when quickSnapshot can (tracked then holds the working-tree state
// of every path status named, tracked and untracked); otherwise through a private index,
// which with keep is returned for the caller to use and remove.
func (s *State) snapshot(ctx context.Context, now *git.Status, message string, keep bool, pre map[string]git.Object, cat *git.Cat) (commit, tree string, idx *treeIndex, tracked []treeChange, err error) {
	commit, tree, tracked, err = s.quickSnapshot(ctx, now, message, pre, cat)
	if !errors.Is(err, errDecline) {
		return commit, tree, nil, tracked, err
	}
	idx, tree, err = s.worktreeIndex(ctx, now)
	if err != nil {
		return "", "", nil, nil, err
	}
	if !keep {
		defer idx.remove()
	}
	out, err := s.Repo.RunEnv(ctx, wiggumIdent, []byte(message+"\n"), "commit-tree", tree, "-p", now.Head, "-F", "-")
	if err != nil {
		idx.remove()
		return "", "", nil, nil, err
	}
	if !keep {
		idx = nil
	}
	return strings.TrimSpace(out), tree, idx, nil, nil
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

// lockIndex takes the index lock. Another git holding it (an editor's
// git status) is waited for, as git.Repo's commands wait
// (git.IndexLockWait); a lock held longer is a refusal, nothing changed.
func (s *State) lockIndex() (*indexLock, error) {
	l := &indexLock{path: s.indexPath() + ".lock", index: s.indexPath()}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	for retry := git.NewLockRetry(); errors.Is(err, fs.ErrExist) && retry.Wait(context.Background(), l.path, s.Repo.Root, filepath.Dir(l.path)); {
		f, err = os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
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

// treeChange is one path that differs between two trees, as the second
// tree has it.
type treeChange struct {
	path string
	mode string // "" when the second tree does not have the path
	oid  string
}

// setEntries points idx's entries for changes at their blobs (dropping
// those without one), with no stat data: git checks those files on its
// next read. Removals go first, so a file that must become a directory (or
// the reverse) never conflicts.
func (s *State) setEntries(ctx context.Context, idx *treeIndex, changes []treeChange, hexLen int) error {
	var info strings.Builder
	zero := strings.Repeat("0", hexLen)
	for _, c := range changes {
		if c.mode == "" {
			fmt.Fprintf(&info, "0 %s\t%s\x00", zero, c.path)
		}
	}
	for _, c := range changes {
		if c.mode != "" {
			fmt.Fprintf(&info, "%s %s\t%s\x00", c.mode, c.oid, c.path)
		}
	}
	if info.Len() == 0 {
		return nil
	}
	_, err := s.Repo.RunEnv(ctx, idx.env, []byte(info.String()), "update-index", "--add", "--replace", "-z", "--index-info")
	return err
}

// restoreTree makes the working tree hold the checkpoint's tree and the
// index hold cp.Head's tree, under lk, touching only the paths in changes
// (from the working tree's tree to the checkpoint's): no other file is
// read, stat'ed or written, and no other index entry loses its stat data.
// index is the new index startIndex is making; restoreTree writes the
// files, then waits for it and puts it in place.
func (s *State) restoreTree(ctx context.Context, cat *git.Cat, lk *indexLock, index <-chan newIndex, cp *Checkpoint, changes []treeChange) error {
	werr := s.writeChanges(ctx, cat, cp, changes)
	idx := <-index
	defer idx.index.remove()
	if werr != nil {
		return werr
	}
	if idx.err != nil {
		return idx.err
	}
	if err := os.Rename(idx.index.path, lk.path); err != nil {
		return fmt.Errorf("replace the index: %w", err)
	}
	if err := lk.commit(); err != nil {
		return err
	}
	// The entries of hidden files the edit had to set lost their flags:
	// they are hidden again, as the person had them.
	if err := s.setHiding(ctx, nil, idx.rehide, "--assume-unchanged", "--skip-worktree"); err != nil {
		return fmt.Errorf("flag %d file(s) assume-unchanged or skip-worktree again, as they were: %w", len(idx.rehide), err)
	}
	return nil
}

// writeChanges makes the working tree's files at changes what changes
// says: removed, or written at their blobs.
func (s *State) writeChanges(ctx context.Context, cat *git.Cat, cp *Checkpoint, changes []treeChange) error {
	var write []treeChange
	for _, c := range changes {
		if c.mode == "" {
			if err := s.removeFile(c.path, cp.Time); err != nil {
				return err
			}
		} else if c.mode != "160000" { // a submodule is not checked out here, as git does
			write = append(write, c)
		}
	}
	// Between the two halves the tree is neither the attempt's nor the
	// checkpoint's: where a crash test stops a rollback.
	killpoint.At("rollback-files-removed")
	written, err := s.writeVerbatim(cat, write)
	if err != nil {
		return err
	}
	if len(write) > 0 && !written {
		w := s.newTreeIndex("changes")
		defer w.remove()
		if ok, err := writeIndex(w.path, write); err != nil {
			return err
		} else if !ok {
			if err := s.setEntries(ctx, w, write, len(cp.Head)); err != nil {
				return err
			}
		}
		// -f replaces whatever is in the way (an ignored file, a directory
		// where a file belongs).
		if _, err := s.Repo.RunEnv(ctx, w.env, nil, "checkout-index", "-f", "-a"); err != nil {
			return err
		}
	}
	return nil
}

// newIndex is the private index startIndex made, or why it could not.
type newIndex struct {
	index *treeIndex
	err   error
	// rehide: hidden files (see withHidden) whose entries the edit set,
	// which lost their flags with them.
	rehide []git.Change
}

// startIndex makes, in the background, the index a rollback leaves: the
// checkpoint commit's tree, as a private index built from idx (a private
// index that matches the working tree, made by snapshot's index route) or,
// when idx is nil, from the user's index - which the caller holds locked,
// so it cannot change meanwhile. With the user's index as the start,
// tracked lists every tracked path where the working tree differs from
// HEAD, and every untracked file, as the working tree has it (from
// quickSnapshot; nil when clean): an entry the attempt deleted (git rm
// --cached), added or staged is set, whether or not its file changed.
// uncommitted lists what the checkpoint's snapshot changed from cp.Head.
// Only the entries of changed paths are set (with no stat data: git checks
// those files on its next read), so every other entry keeps its stat data.
//
// The edit is made in this process (editIndex) or, where that declines, by
// git's update-index; either touches nothing but the private index, so it
// runs while the refs move and the files are written; the index takes its
// place only after both. The caller receives from the channel exactly once.
//
// A file the index hides from git status (hidden, see withHidden) keeps its
// entry, flags and stat data, when the user's index is the start and its
// entry already holds what the edit would set; otherwise it is set and
// listed to be flagged again.
func (s *State) startIndex(ctx context.Context, idx *treeIndex, tracked []treeChange, cp *Checkpoint, changes, uncommitted []treeChange, hidden []git.Change) <-chan newIndex {
	// First every path the user's index may have differently from the
	// working tree at its working-tree state (the index route did that
	// already), then the changed paths at the checkpoint's blobs,
	// except that its uncommitted changes stay in the working tree only,
	// as when it was taken. The last word for a path wins.
	own := make(map[string]bool, len(uncommitted))
	for _, u := range uncommitted {
		own[u.path] = true
	}
	at := map[string]int{}
	var final []treeChange
	set := func(c treeChange) {
		if i, ok := at[c.path]; ok {
			final[i] = c
			return
		}
		at[c.path] = len(final)
		final = append(final, c)
	}
	for _, c := range tracked {
		set(c)
	}
	for _, c := range changes {
		if !own[c.path] {
			set(c)
		}
	}
	for _, c := range uncommitted {
		set(c)
	}
	rehide := lostFlags(cp, &git.Status{Changes: hidden})
	for _, h := range hidden {
		if !h.AssumeUnchanged && !h.SkipWorktree {
			continue
		}
		if idx != nil {
			// The private index holds the file unflagged (unhideInIndex).
			rehide = append(rehide, h)
			continue
		}
		if i, ok := at[h.Path]; ok {
			if c := final[i]; c.mode == h.HeadMode && c.oid == h.HeadOID {
				final[i].path = "" // kept as it is
			} else {
				rehide = append(rehide, h)
			}
		}
	}
	final = slices.DeleteFunc(final, func(c treeChange) bool { return c.path == "" })
	done := make(chan newIndex, 1)
	go func() {
		src := s.indexPath()
		if idx == nil {
			idx = s.newTreeIndex("")
		} else {
			src = idx.path
		}
		// In this process when it can (see editIndex), else in git.
		err := editIndex(src, idx.path, final, len(cp.Head))
		if !errors.Is(err, errIndexDecline) {
			done <- newIndex{index: idx, err: err, rehide: rehide}
			return
		}
		if src != idx.path {
			if err := s.linkIndex(idx); err != nil {
				done <- newIndex{index: idx, err: fmt.Errorf("copy the index: %w", err)}
				return
			}
		}
		done <- newIndex{index: idx, err: s.setEntries(ctx, idx, final, len(cp.Head)), rehide: rehide}
	}()
	return done
}

// removeFile deletes a working-tree file the checkpoint does not have, and
// the directories that leaves empty that did not exist at the checkpoint
// (made after since, its time). Missing is fine: gone is the goal.
//
// An empty directory is invisible to git, so neither the checkpoint's tree
// nor its list of untracked files can say that the person had it (an
// upload directory, a mount point, a chmod 700 one); its mtime and ctime
// cannot either, since the attempt's files in it changed both. Its birth
// time can: a directory born after the checkpoint is the attempt's. The
// kernel stamps it from a coarse clock, never ahead of the checkpoint's,
// so a directory that existed then is never judged new; one the attempt
// made within a clock tick of the checkpoint, or on a file system with no
// birth time, is left in place, empty, which loses nothing.
func (s *State) removeFile(rel string, since time.Time) error {
	path := filepath.Join(s.Repo.Root, filepath.FromSlash(rel))
	if err := s.remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		if fi, serr := os.Lstat(path); serr == nil && fi.IsDir() {
			return nil // a submodule's checkout: left alone, as git does
		}
		return err
	}
	for dir := filepath.Dir(path); dir != s.Repo.Root && strings.HasPrefix(dir, s.Repo.Root); dir = filepath.Dir(dir) {
		if !bornAfter(dir, since) || s.remove(dir) != nil {
			break
		}
	}
	return nil
}

// remove removes path (a file, or an empty directory) from the working
// tree. A directory it is in that its user may not write - a read-only
// tree an attempt made, as go mod download makes its module cache - is
// made writable for the removal, as go clean -modcache does, and given
// its mode back after when it is still there: the rollback saved what it
// removes, and a directory no rollback could empty would fail every
// rollback after it the same way.
func (s *State) remove(path string) error {
	err := os.Remove(path)
	if !errors.Is(err, fs.ErrPermission) {
		return err
	}
	dir := filepath.Dir(path)
	if !strings.HasPrefix(dir, s.Repo.Root+string(filepath.Separator)) {
		return err // never the top of the working tree, nor above it
	}
	fi, serr := os.Lstat(dir)
	if serr != nil || !fi.IsDir() || fi.Mode().Perm()&0o300 == 0o300 {
		return err
	}
	mode := fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
	if os.Chmod(dir, mode|0o700) != nil {
		return err // not this user's to change: the error says so
	}
	err = os.Remove(path)
	_ = os.Chmod(dir, mode)
	return err
}

// removeAll removes the directory path and everything in it, as
// os.RemoveAll, making the directories in it that its user may not write
// writable first when that stops it (see remove).
func removeAll(path string) error {
	err := os.RemoveAll(path)
	if !errors.Is(err, fs.ErrPermission) {
		return err
	}
	_ = filepath.WalkDir(path, func(p string, d fs.DirEntry, werr error) error {
		if werr == nil && d.IsDir() {
			if fi, err := d.Info(); err == nil && fi.Mode().Perm()&0o700 != 0o700 {
				_ = os.Chmod(p, fi.Mode().Perm()|0o700)
			}
		}
		return nil
	})
	return os.RemoveAll(path)
}
