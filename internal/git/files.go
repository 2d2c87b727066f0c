package git

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/statefile"
)

// The reads in this file cost a few small file reads and never spawn git:
// a hook call must cost about what starting a Go binary costs. They
// understand the files git itself writes (.git as a directory or as a
// "gitdir:" file in linked worktrees, commondir, HEAD); anything else reads
// as "unknown", never as a guess.

// FindRoot walks up from dir to the directory holding .git (a directory,
// or a file in linked worktrees); "" when there is none.
func FindRoot(dir string) string {
	dir = filepath.Clean(dir)
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// InRepository reports whether the working tree at root belongs to the
// repository whose common dir is commonDir: its .git (a directory, or a
// linked worktree's gitdir: file) leads there.
func InRepository(root, commonDir string) bool {
	_, common := Dirs(root)
	if common == "" || commonDir == "" {
		return false
	}
	a, err1 := os.Stat(common)
	b, err2 := os.Stat(commonDir)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// SameRepository reports whether two working trees share a git common
// directory: worktrees of one repository.
func SameRepository(a, b string) bool {
	_, cb := Dirs(b)
	return InRepository(a, cb)
}

// Dirs returns the working tree's git dir (.git, or .git/worktrees/NAME in
// a linked worktree) and the common dir shared by all worktrees; both ""
// when root holds no readable .git.
func Dirs(root string) (gitDir, commonDir string) {
	if gitDir = layout.GitDir(root); gitDir == "" {
		return "", ""
	}
	commonDir = gitDir
	if data, err := statefile.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(data))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		commonDir = filepath.Clean(c)
	}
	return gitDir, commonDir
}

// HeadBranch returns the short name of the branch checked out in gitDir
// (HEAD is "ref: refs/heads/NAME"), or "" when HEAD is detached, points
// outside refs/heads or cannot be read. known is false when HEAD's file
// cannot tell: in a repository that keeps its refs in a reftable, HEAD's
// file is a placeholder naming the branch ".invalid" (ask git then).
func HeadBranch(gitDir string) (name string, known bool) {
	data, err := statefile.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", true
	}
	name, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "ref: refs/heads/")
	if !ok {
		return "", true
	}
	if !ValidBranch(name) {
		return "", false
	}
	return name, true
}

// ValidBranch reports whether name (without refs/heads/) can name a
// branch: no empty component or one that starts with a dot (the reftable
// placeholder ".invalid" is one), none of the characters or sequences git
// refuses (git check-ref-format).
func ValidBranch(name string) bool {
	if name == "" || strings.HasSuffix(name, ".lock") || strings.HasSuffix(name, ".") ||
		strings.Contains(name, "..") || strings.Contains(name, "@{") ||
		strings.ContainsAny(name, " ~^:?*[\\\x7f") {
		return false
	}
	for _, c := range strings.Split(name, "/") {
		if c == "" || strings.HasPrefix(c, ".") || strings.HasSuffix(c, ".lock") {
			return false
		}
	}
	for _, r := range name {
		if r < 0x20 {
			return false
		}
	}
	return true
}

// RemoteDefaultBranch returns the short name of the branch origin's HEAD
// points at (refs/remotes/origin/HEAD, which git keeps as a loose symbolic
// ref), or "" when it is not recorded. known is false when the refs are
// kept in a reftable (ask git then).
func RemoteDefaultBranch(commonDir string) (name string, known bool) {
	if reftableRefs(commonDir) {
		return "", false
	}
	data, err := statefile.ReadFile(filepath.Join(commonDir, "refs", "remotes", "origin", "HEAD"))
	if err != nil {
		return "", true
	}
	name, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "ref: refs/remotes/origin/")
	if !ok || !ValidBranch(name) {
		return "", true
	}
	return name, true
}

// reftableRefs reports whether the repository whose common dir is
// commonDir keeps its refs in a reftable: then HEAD's file is a
// placeholder, and no ref is in a loose file or packed-refs.
func reftableRefs(commonDir string) bool {
	_, err := os.Stat(filepath.Join(commonDir, "reftable"))
	return err == nil
}

// RefValue reads the object id a ref names without starting git: its loose
// file under the common dir, else its line in packed-refs; "" when it has
// neither. ok is false when it cannot tell (a symbolic ref, refs kept some
// other way, an unreadable file): ask git then.
func (r *Repo) RefValue(name string) (value string, ok bool) {
	if reftableRefs(r.CommonDir) {
		return "", false
	}
	data, err := statefile.ReadFile(filepath.Join(r.CommonDir, filepath.FromSlash(name)))
	if err == nil {
		v := strings.TrimSpace(string(data))
		if strings.HasPrefix(v, "ref:") || (len(v) != 40 && len(v) != 64) {
			return "", false
		}
		return v, true
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	packed, err := statefile.ReadFile(filepath.Join(r.CommonDir, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", true
	}
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(packed), "\n") {
		if id, ref, found := strings.Cut(line, " "); found && ref == name && !strings.HasPrefix(line, "#") {
			return id, true
		}
	}
	return "", true
}

// maxPackedRefs bounds the packed-refs file Refs reads: a repository with
// more refs than that is asked of git instead.
const maxPackedRefs = 4 << 20

// Refs reads the refs under the given prefixes ("refs/tags/") and the
// object ids they name, without starting git: the loose files under the
// common dir over the lines of packed-refs. ok is false when it cannot
// tell (refs in a reftable, a packed-refs over 4 MB, an unreadable file).
func (r *Repo) Refs(prefixes ...string) (refs map[string]string, ok bool) {
	if reftableRefs(r.CommonDir) {
		return nil, false
	}
	refs = map[string]string{}
	if f, err := statefile.OpenRegular(filepath.Join(r.CommonDir, "packed-refs")); err == nil {
		st, serr := f.Stat()
		if serr != nil || st.Size() > maxPackedRefs {
			f.Close()
			return nil, false
		}
		data, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			return nil, false
		}
		for _, line := range strings.Split(string(data), "\n") {
			id, ref, found := strings.Cut(line, " ")
			if found && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "^") && hasAnyPrefix(ref, prefixes) {
				refs[ref] = id
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	for _, prefix := range prefixes {
		root := filepath.Join(r.CommonDir, filepath.FromSlash(strings.TrimSuffix(prefix, "/")))
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if d.IsDir() || strings.HasSuffix(path, ".lock") {
				return nil
			}
			data, err := statefile.ReadFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				return nil // deleted while read
			}
			if err != nil {
				return err
			}
			v := strings.TrimSpace(string(data))
			if len(v) != 40 && len(v) != 64 {
				return nil // a symbolic ref, or one being written
			}
			rel, err := filepath.Rel(r.CommonDir, path)
			if err != nil {
				return err
			}
			refs[filepath.ToSlash(rel)] = v
			return nil
		})
		if err != nil {
			return nil, false
		}
	}
	return refs, true
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// headFile reads what HEAD is on from its file in the worktree's git dir,
// as git symbolic-ref would answer it: the branch ("refs/heads/x") for
// "ref: refs/heads/x", "" for a detached HEAD (a bare commit id). ok is
// false when the file cannot settle it: refs kept in a reftable (HEAD's
// file is a placeholder there), a symbolic link (git's old way), a
// symbolic ref outside refs/heads/, anything unexpected.
func (r *Repo) headFile() (branch string, ok bool) {
	if r.GitDir == "" || r.CommonDir == "" {
		return "", false
	}
	if reftableRefs(r.CommonDir) {
		return "", false
	}
	path := filepath.Join(r.GitDir, "HEAD")
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	data, err := statefile.ReadFile(path)
	if err != nil {
		return "", false
	}
	v := strings.TrimSpace(string(data))
	if ref, isRef := strings.CutPrefix(v, "ref: "); isRef {
		if !strings.HasPrefix(ref, "refs/heads/") || len(ref) == len("refs/heads/") || strings.ContainsAny(ref, " \t\n\\") || strings.Contains(ref, "..") {
			return "", false
		}
		return ref, true
	}
	if (len(v) == 40 || len(v) == 64) && strings.Trim(v, "0123456789abcdef") == "" {
		return "", true
	}
	return "", false
}

// ReflogEntry is one line of a ref's reflog: the ref's value before and
// after, when (to the second), and the message.
type ReflogEntry struct {
	Old, New string
	Time     int64 // unix seconds
	Message  string
}

// StashMadeOn reports whether a stash entry whose reflog message is msg
// was made on branch (its short name): git writes "WIP on <branch>: ..."
// for a plain git stash and "On <branch>: ..." for one given a message.
func StashMadeOn(msg, branch string) bool {
	return strings.HasPrefix(msg, "WIP on "+branch+": ") || strings.HasPrefix(msg, "On "+branch+": ")
}

// Reflog reads ref's reflog (refs/heads/x, refs/stash) from its file in
// the common dir, oldest first, without starting git: none when there is
// no reflog. ok is false when refs are kept in a reftable.
func (r *Repo) Reflog(ref string) (entries []ReflogEntry, ok bool) {
	if reftableRefs(r.CommonDir) {
		return nil, false
	}
	data, err := statefile.ReadFile(filepath.Join(r.CommonDir, "logs", filepath.FromSlash(ref)))
	if err != nil {
		return nil, true
	}
	return parseReflog(data), true
}

// HeadReflogSize is the size of this worktree's HEAD reflog file (0 when
// there is none), for HeadReflogSince.
func (r *Repo) HeadReflogSize() int64 {
	st, err := os.Stat(filepath.Join(r.GitDir, "logs", "HEAD"))
	if err != nil {
		return 0
	}
	return st.Size()
}

// HeadReflogSince reads the entries this worktree's HEAD reflog gained
// since it was size bytes long (HeadReflogSize): git only appends to it,
// so they start there; all of it when the file is shorter now (expired
// meanwhile). ok is false when refs are kept in a reftable.
func (r *Repo) HeadReflogSince(size int64) (entries []ReflogEntry, ok bool) {
	if reftableRefs(r.CommonDir) {
		return nil, false
	}
	data, err := statefile.ReadFile(filepath.Join(r.GitDir, "logs", "HEAD"))
	if err != nil {
		return nil, true
	}
	if size > 0 && size <= int64(len(data)) && (size == int64(len(data)) || data[size-1] == '\n') {
		data = data[size:]
	}
	return parseReflog(data), true
}

func parseReflog(data []byte) (entries []ReflogEntry) {
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		// "<old> <new> <name> <email> <unix time> <zone>\t<message>"
		head, msg, _ := strings.Cut(line, "\t")
		f := strings.Fields(head)
		if len(f) < 4 {
			continue
		}
		secs, _ := strconv.ParseInt(f[len(f)-2], 10, 64)
		entries = append(entries, ReflogEntry{Old: f[0], New: f[1], Time: secs, Message: msg})
	}
	return entries
}
