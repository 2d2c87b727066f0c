package git

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A git killed while it held the index (an agent's `git commit` when
// --timeout stopped the agent, a client's process tree torn down, a
// power cut) leaves its lock file behind, and git then refuses every
// command that writes the index until someone removes it: an unattended
// run's commit and rollback failed on it, and the run stopped (exit 4)
// over a file no process held. ClearStaleLock removes such a lock once it
// is proven stale; wiggum's own index writes call it after waiting
// StaleLockAfter for the holder, so a live git (an editor's git status, a
// pre-commit hook that runs for minutes) is still waited out.

// StaleLockAfter is how long a git command waits on an index lock before
// it asks whether the lock's holder still runs.
var StaleLockAfter = time.Second

// OnStaleLock, when set, is told of each stale lock removed: path and how
// long ago it was last written.
var OnStaleLock func(path string, age time.Duration)

// ClearStaleLock removes the git lock file at path when no git process
// that could hold it still runs: none of the live processes named git
// that may take such a lock (holds) works in one of dirs (its current
// directory inside one of them; pass the working tree and the git
// directory). A git whose directory cannot be read (another user's)
// counts as a holder, and so does everything where /proc cannot be read:
// a lock is never removed on a guess. It reports whether it removed the
// file, and tells OnStaleLock.
func ClearStaleLock(path string, dirs ...string) bool {
	age, removed := clearStale(path, dirs)
	if removed && OnStaleLock != nil {
		OnStaleLock(path, age)
	}
	return removed
}

// clearStale is ClearStaleLock, telling no one; age is how long ago the
// removed lock was last written.
func clearStale(path string, dirs []string) (age time.Duration, removed bool) {
	seen, err := os.Lstat(path)
	if err != nil || !seen.Mode().IsRegular() {
		return 0, false
	}
	in, unreadable, ok := GitsWorkingIn(dirs...)
	if !ok || len(unreadable) > 0 {
		return 0, false
	}
	for _, pid := range in {
		if isIdle(pid) || !MayHold(pid, path) {
			continue
		}
		return 0, false
	}
	removed, err = RemoveStale(path, seen)
	if !removed || err != nil {
		return 0, false
	}
	return time.Since(seen.ModTime()).Round(time.Second), true
}

// MayHold reports whether the live git pid may hold the lock file lock:
// false once it has exited, and for the commands that never take such a
// lock (holds) - a git log open in a pager, an editor's cat-file --batch -
// which must not keep a stale lock in place for as long as they are open.
func MayHold(pid int, lock string) bool {
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return !gone(err)
	}
	return holds(cmdline, strings.HasSuffix(lock, "index.lock"))
}

// StaleLock is a lock file removed as stale, and how long before it had
// last been written.
type StaleLock struct {
	Path string
	Age  time.Duration
}

func (l StaleLock) String() string { return fmt.Sprintf("%s (last written %s ago)", l.Path, l.Age) }

// ClearStaleLocks removes the lock files a git killed mid-command leaves
// where they stop wiggum's own next commands - the index's, HEAD's, the
// branch's (a full ref name; "" for none), packed-refs' - when no git that
// could hold them still runs (ClearStaleLock). It is a few stats when
// there are none. It returns the locks it removed.
func (r *Repo) ClearStaleLocks(branch string) []StaleLock { return r.clearStaleLocks(branch, true) }

// ClearStaleRefLocks is ClearStaleLocks for the refs' locks only: for a
// caller that holds the index lock itself (a rollback), which no git
// process holds and which must stay.
func (r *Repo) ClearStaleRefLocks(branch string) []StaleLock {
	return r.clearStaleLocks(branch, false)
}

func (r *Repo) clearStaleLocks(branch string, index bool) []StaleLock {
	// A lock of this tree's git dir is held by a git working in this
	// tree; a shared one (refs) by a git working in any of them: in the
	// main tree, which holds wiggum's worktrees, or in the git dir.
	own := []string{r.Root, r.GitDir}
	shared := []string{r.Root, r.CommonDir}
	if filepath.Base(r.CommonDir) == ".git" {
		shared = append(shared, filepath.Dir(r.CommonDir))
	}
	type lock struct {
		path string
		dirs []string
	}
	var candidates []lock
	if index {
		candidates = append(candidates, lock{filepath.Join(r.GitDir, "index.lock"), own})
	}
	candidates = append(candidates,
		lock{filepath.Join(r.GitDir, "HEAD.lock"), own},
		lock{filepath.Join(r.CommonDir, "packed-refs.lock"), shared})
	if strings.HasPrefix(branch, "refs/heads/") {
		candidates = append(candidates, lock{filepath.Join(r.CommonDir, filepath.FromSlash(branch)+".lock"), shared})
	}
	var removed []StaleLock
	for _, c := range candidates {
		if _, err := os.Lstat(c.path); err != nil {
			continue
		}
		if age, ok := clearStale(c.path, c.dirs); ok {
			removed = append(removed, StaleLock{Path: c.path, Age: age})
		}
	}
	return removed
}

// GitsWorkingIn lists the live processes named git (git, git-remote-https,
// ...) that work in one of dirs, and apart those that could not be looked
// at (another user's); ok is false when /proc cannot be listed. A git works
// in a directory when its working directory is inside it, when its
// environment (GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE, GIT_COMMON_DIR) or
// its arguments (--git-dir, --work-tree) name a path inside it, or when it
// has a file inside it open. Paths are compared by what they are, not by
// how they are spelled (refersTo), so a git run from elsewhere with
// --git-dir, or in a container that mounts the checkout at another path,
// is seen: its lock must never be taken for a dead git's.
func GitsWorkingIn(dirs ...string) (in, unreadable []int, ok bool) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, nil, false
	}
	var roots []fs.FileInfo
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			roots = append(roots, st)
		}
	}
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		comm, err := os.ReadFile("/proc/" + e.Name() + "/comm")
		if err != nil || !strings.HasPrefix(strings.TrimSpace(string(comm)), "git") {
			continue
		}
		switch works, err := worksIn(pid, roots); {
		case err != nil && !gone(err):
			unreadable = append(unreadable, pid)
		case works:
			in = append(in, pid)
		}
	}
	return in, unreadable, true
}

// gone reports whether err, from reading a process's /proc files, says
// the process has exited or is exiting: ENOENT once it is reaped, ESRCH
// while it exits (its memory, and so its environment, is gone before its
// working directory is). Under load a machine's other gits are caught in
// that window all the time, and counting one as unreadable kept a killed
// commit's lock in place: the rollback then failed on it
// (run_commit_killed under go test -race ./..., 2 in 24 runs).
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

// worksIn reports whether the process pid works in one of roots
// (GitsWorkingIn); the error is the one that kept it from looking (one
// gone says of a process that exited while it looked).
func worksIn(pid int, roots []fs.FileInfo) (bool, error) {
	p := "/proc/" + strconv.Itoa(pid)
	// Paths as the process sees them: through its root (a container's
	// mounts) and its working directory.
	cwd, root := p+"/cwd", p+"/root"
	if _, err := os.Readlink(cwd); err != nil {
		return false, err
	}
	if refersTo(cwd, roots) {
		return true, nil
	}
	resolve := func(path string) string {
		if filepath.IsAbs(path) {
			return root + path
		}
		return cwd + "/" + path
	}
	environ, err := os.ReadFile(p + "/environ")
	if err != nil {
		return false, err
	}
	for _, kv := range strings.Split(string(environ), "\x00") {
		for _, name := range []string{"GIT_DIR=", "GIT_WORK_TREE=", "GIT_INDEX_FILE=", "GIT_COMMON_DIR="} {
			if v, ok := strings.CutPrefix(kv, name); ok && v != "" && refersTo(resolve(v), roots) {
				return true, nil
			}
		}
	}
	cmdline, err := os.ReadFile(p + "/cmdline")
	if err != nil {
		return false, err
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	for i, a := range args {
		for _, opt := range []string{"--git-dir", "--work-tree"} {
			v, ok := strings.CutPrefix(a, opt+"=")
			if !ok && a == opt && i+1 < len(args) {
				v, ok = args[i+1], true
			}
			if ok && v != "" && refersTo(resolve(v), roots) {
				return true, nil
			}
		}
	}
	fds, err := os.ReadDir(p + "/fd")
	if err != nil {
		return false, err
	}
	for _, fd := range fds {
		target, err := os.Readlink(p + "/fd/" + fd.Name())
		if err != nil || !filepath.IsAbs(target) {
			continue // gone, or a pipe, a socket
		}
		if refersTo(root+filepath.Dir(target), roots) {
			return true, nil
		}
	}
	return false, nil
}

// refersTo reports whether path (a directory, or a file whose directory
// then counts) is one of roots or inside one, going up from it with ".."
// and comparing what each step is (device and inode) to the roots: a bind
// mount or a symbolic link of the tree is the tree.
func refersTo(path string, roots []fs.FileInfo) bool {
	st, err := os.Stat(path)
	if err == nil && !st.IsDir() {
		// Its directory; not filepath.Dir, which would clean away the
		// ".." the path may hold.
		path = path[:strings.LastIndex(path, "/")]
		st, err = os.Stat(path)
	}
	for i := 0; err == nil && i < 256; i++ {
		for _, r := range roots {
			if os.SameFile(st, r) {
				return true
			}
		}
		path += "/.."
		up, err := os.Stat(path)
		if err != nil || os.SameFile(up, st) {
			return false // at the top
		}
		st = up
	}
	return false
}

// RemoveStale removes a lock file found stale - seen as it was before the
// look for gits at work found none - unless it has been replaced since (a
// new git took the lock after the old file went): the file existed, so no
// git could have made it anew without its going first. A file made anew
// may get the old one's inode back; its change time then tells them apart
// (to the file system's clock tick).
func RemoveStale(lock string, seen fs.FileInfo) (bool, error) {
	now, err := os.Lstat(lock)
	if err != nil || seen == nil || !os.SameFile(seen, now) || changed(seen) != changed(now) {
		return false, nil
	}
	if err := os.Remove(lock); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("remove the stale git lock %s: %w", lock, err)
	}
	return true, nil
}

// LockedFile is the lock file git failed on in err ("Unable to create
// '/repo/.git/refs/heads/main.lock': File exists."), "" when err is not
// such a failure.
func LockedFile(err error) string { return lockPathOf(err) }

// lockPathOf is the lock file git names in err ("Unable to create
// '/repo/.git/index.lock': File exists."), "" when it names none.
func lockPathOf(err error) string {
	var ge *Error
	if !errors.As(err, &ge) {
		return ""
	}
	_, rest, ok := strings.Cut(ge.Stderr, "Unable to create '")
	if !ok {
		return ""
	}
	p, _, ok := strings.Cut(rest, "': File exists")
	if !ok || !strings.HasSuffix(p, ".lock") || !filepath.IsAbs(p) {
		return ""
	}
	return p
}

// readOnly reports whether the git command sub never takes a lock of the
// index or of a ref: an agent's pager left open on git log, wiggum's own
// cat-file --batch, must not keep a stale lock in place for ever. (A
// switch, not a map: a map literal would be built at every wiggum
// process's start, hooks' included.)
func readOnly(sub string) bool {
	switch sub {
	case "cat-file", "hash-object", "rev-parse", "rev-list", "for-each-ref", "show-ref", "log", "show",
		"ls-tree", "merge-base", "config", "var", "mktree", "commit-tree", "diff-tree", "name-rev",
		"describe", "blame", "shortlog", "cherry", "grep", "ls-remote", "upload-pack", "pack-objects",
		"index-pack", "unpack-objects", "credential", "version":
		return true
	}
	return false
}

// noIndex reports whether sub locks refs but never the index.
func noIndex(sub string) bool {
	switch sub {
	case "update-ref", "symbolic-ref", "fetch", "push", "receive-pack":
		return true
	}
	return false
}

// idle is wiggum's own git children started ahead that have taken no
// lock yet (Started: update-ref --stdin before its input ends).
var idle sync.Map

func markIdle(pid int, on bool) {
	if on {
		idle.Store(pid, true)
	} else {
		idle.Delete(pid)
	}
}

func isIdle(pid int) bool {
	_, ok := idle.Load(pid)
	return ok
}

// subcommand is the git command in args (after git's own options).
func subcommand(args []string) string {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-c" || a == "-C" || a == "--git-dir" || a == "--work-tree" || a == "--namespace":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}

// holds reports whether the git command line cmdline (NUL separated, as
// /proc has it) may hold the index's lock (index) or a ref's: false only
// for the commands that never take one.
func holds(cmdline []byte, index bool) bool {
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	sub := subcommand(args[1:])
	if sub == "" || strings.HasPrefix(filepath.Base(args[0]), "git-") {
		return true // git's helpers (git-remote-https ...): their parent fetches or pushes
	}
	return !readOnly(sub) && !(index && noIndex(sub))
}
