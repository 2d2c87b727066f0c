package worktree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/wiggum-dev/wiggum/internal/git"
)

// A worker's worktree is a fresh checkout: the files git ignores in the
// person's checkout - a .env with the database URL, a local config, a
// license key - are not in it, and the agent's tests fail there, or the
// agent writes a .env of its own with made-up values. IncludeFile is the
// convention Claude Code, Codex and the worktree tools share for it: a
// file at the root of the repository, in .gitignore syntax, naming the
// ignored files every new worktree gets a copy of.
//
// A file is copied when it matches a pattern and git ignores it in the
// person's checkout (a file the patterns name that git would show is the
// person's to commit, not to spread), is a regular file, and lands inside
// the worktree - never through a symbolic link, never over a file the
// worktree has - and when git ignores it in the worktree too, so that no
// commit of the worker's takes it in.

// IncludeFile names, at the root of the main working tree, the ignored
// files each worktree gets a copy of.
const IncludeFile = ".worktreeinclude"

// What one worktree gets copied at most: every worker's worktree gets its
// own copy, and a pattern that names a whole build directory would fill
// the disk with them.
var (
	includeMaxFiles       = 10000
	includeMaxBytes int64 = 1 << 30
)

// includes lists the files of main's working tree that IncludeFile names
// and git ignores there (relative, slash-separated); nil without the file.
func includes(ctx context.Context, main *git.Repo) ([]string, error) {
	patterns := filepath.Join(main.Root, IncludeFile)
	if fi, err := os.Stat(patterns); err != nil || !fi.Mode().IsRegular() {
		return nil, nil
	}
	// The untracked files the patterns match, read as ignore rules...
	out, err := main.Run(ctx, "ls-files", "-z", "--others", "--ignored", "--exclude-from="+patterns)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", IncludeFile, err)
	}
	var named []string
	for p := range strings.SplitSeq(out, "\x00") {
		if p != "" && git.TreePath(p) && !git.IsState(p) && p != IncludeFile {
			named = append(named, p)
		}
	}
	// ...that the repository's own rules ignore.
	return ignoredOf(ctx, main, named)
}

// ignoredOf returns those of paths that git ignores in repo's working tree.
func ignoredOf(ctx context.Context, repo *git.Repo, paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	out, err := repo.RunEnv(ctx, nil, []byte(strings.Join(paths, "\x00")+"\x00"), "check-ignore", "-z", "--stdin")
	var gerr *git.Error
	if errors.As(err, &gerr) && gerr.Status() == 1 {
		return nil, nil // none of them is ignored
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", IncludeFile, err)
	}
	var ignored []string
	for p := range strings.SplitSeq(out, "\x00") {
		if p != "" {
			ignored = append(ignored, p)
		}
	}
	return ignored, nil
}

// copyIncludes copies files (from includes) from the main working tree at
// from into the worktree at to, and returns a note for each it left out.
// A copy git does not ignore in the worktree (its .gitignore differs from
// the checkout's) is removed again.
func copyIncludes(ctx context.Context, from, to string, files []string) []string {
	var left leftOut
	var copied []string
	var total int64
	for i, rel := range files {
		if fi, err := os.Lstat(filepath.Join(from, filepath.FromSlash(rel))); err == nil {
			total += fi.Size()
		}
		if i >= includeMaxFiles || total > includeMaxBytes {
			left.add(fmt.Sprintf("over the %d files or %d MiB a worktree gets copied (a .worktreeinclude naming a whole build or node_modules: a copy is not an install)", includeMaxFiles, includeMaxBytes>>20), rel)
			continue
		}
		switch err := copyInto(from, to, rel); {
		case err == nil:
			copied = append(copied, rel)
		case errors.Is(err, fs.ErrExist):
			left.add("the worktree has a file there", rel)
		default:
			left.add(err.Error(), rel)
		}
	}
	if len(copied) > 0 {
		ignored, err := ignoredOf(ctx, &git.Repo{Root: to}, copied)
		keep := map[string]bool{}
		for _, p := range ignored {
			keep[p] = true
		}
		for _, rel := range copied {
			if err != nil || !keep[rel] {
				_ = os.Remove(filepath.Join(to, filepath.FromSlash(rel)))
				left.add("git does not ignore it in the worktree, and a commit would take it in", rel)
			}
		}
	}
	return left.notes()
}

// leftOut gathers the files copyIncludes left out, by reason.
type leftOut struct {
	reasons []string
	files   map[string][]string
}

func (l *leftOut) add(reason, rel string) {
	if l.files == nil {
		l.files = map[string][]string{}
	}
	if _, ok := l.files[reason]; !ok {
		l.reasons = append(l.reasons, reason)
	}
	l.files[reason] = append(l.files[reason], rel)
}

// notes says, a line a reason, which files were not copied: the first
// few by name (a node_modules listed in the file is not a page of notes).
func (l *leftOut) notes() []string {
	var out []string
	for _, r := range l.reasons {
		fs := l.files[r]
		names := strings.Join(fs[:min(len(fs), 3)], ", ")
		if len(fs) > 3 {
			names += fmt.Sprintf(" and %d more", len(fs)-3)
		}
		out = append(out, fmt.Sprintf("not copied from your checkout (%s): %s - %s", IncludeFile, names, r))
	}
	return out
}

// copyInto copies the regular file rel of the tree at from to the same
// path under to, making its directories: every directory on the way must
// be a real one (a symbolic link is refused, inside the worktree as in the
// checkout), and the file is created new (fs.ErrExist when something is
// there), with the source's permissions.
func copyInto(from, to, rel string) error {
	parts := strings.Split(rel, "/")
	src, dst := from, to
	for _, p := range parts[:len(parts)-1] {
		src, dst = filepath.Join(src, p), filepath.Join(dst, p)
		if fi, err := os.Lstat(src); err != nil || !fi.IsDir() {
			return errors.New("a directory on its path in your checkout is a symbolic link or gone")
		}
		fi, err := os.Lstat(dst)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(dst, 0o755); err != nil {
				return err
			}
		case err != nil:
			return err
		case !fi.IsDir():
			return errors.New("a directory on its path in the worktree is a file or a symbolic link")
		}
	}
	name := parts[len(parts)-1]
	if fi, err := os.Lstat(filepath.Join(src, name)); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return errors.New("a symbolic link in your checkout; only regular files are copied")
	}
	in, err := os.OpenFile(filepath.Join(src, name), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("not a regular file in your checkout (%w)", errors.Unwrap(err))
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return errors.New("not a regular file in your checkout")
	}
	out, err := os.OpenFile(filepath.Join(dst, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, fi.Mode().Perm())
	if err != nil {
		return err
	}
	_, cerr := io.Copy(out, in)
	if err := errors.Join(cerr, out.Chmod(fi.Mode().Perm()), out.Close()); err != nil {
		_ = os.Remove(filepath.Join(dst, name))
		return err
	}
	return nil
}
