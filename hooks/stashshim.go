package hooks

import (
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	gitfiles "github.com/wiggum-dev/wiggum/internal/git"
)

// git's stash is one for all the worktrees of a repository (refs/stash
// and its reflog), and `git stash pop` takes the newest entry: in a
// parallel run an agent that stashed, ran its tests and popped took
// another worker's entry whenever that worker had stashed in between -
// each story then committed the other's work as its own. As a parallel
// worker's git in the run's repository (layout.SharedStashEnv), the shim gives each agent the
// stash of its own branch, the entries whose message git wrote on it
// ("WIP on <branch>: ...", "On <branch>: ..."):
//
//   - pop, apply, drop, show and branch with no entry named take this
//     branch's newest; one named by number (stash@{n}, n) must be this
//     branch's, or the command is refused with the entries that are;
//   - list shows only this branch's entries, with their numbers in the
//     shared stash (the ones pop and the rest accept);
//   - clear drops only this branch's entries.
//
// Every stash command of the workers' agents takes a lock file in the
// common git dir first, and git inherits it, so that no other agent's
// stash moves the numbers between the shim's choice and git's work (and
// two pushes at one moment no longer fail on refs/stash's lock). A git
// run by its full path goes round all this and sees git's own stash.

// ownStash prepares git ARGS, whose command (args[sub]) is stash, in dir,
// when that is a worktree of the repository whose common git dir is shared
// (any other keeps git's own stash): it returns the arguments to exec with
// code -1, or the exit code the shim ends with when it has answered
// itself. The stash lock it takes is the exec'd git's; release lets it go
// before (for a caller that does not exec).
func ownStash(dir, shared string, args []string, sub int, real string, stderr io.Writer) (_ []string, code int, release func()) {
	release = func() {}
	root := gitfiles.FindRoot(dir)
	if root == "" || !gitfiles.InRepository(root, shared) {
		return args, -1, release // a repository of the project's own
	}
	gitDir, _ := gitfiles.Dirs(root)
	branch, known := gitfiles.HeadBranch(gitDir)
	if !known { // refs in a reftable: HEAD's file cannot tell
		out, _ := exec.Command(real, "-C", dir, "symbolic-ref", "--quiet", "--short", "HEAD").Output()
		branch = strings.TrimSpace(string(out))
	}
	if branch == "" {
		return args, -1, release // a detached HEAD: git's own stash
	}
	release = lockStash(filepath.Join(shared, "wiggum-stash.lock"))
	out, err := exec.Command(real, "-C", dir, "stash", "list", "--format=%gs").Output()
	if err != nil {
		return args, -1, release
	}
	var all []string
	if s := strings.TrimSuffix(string(out), "\n"); s != "" {
		all = strings.Split(s, "\n")
	}
	var own []int // positions in the shared stash, newest first
	for i, msg := range all {
		if gitfiles.StashMadeOn(msg, branch) {
			own = append(own, i)
		}
	}
	rest := args[sub+1:]
	cmd := "push"
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		cmd, rest = rest[0], rest[1:]
	}
	head := slices.Clone(args[:len(args)-len(rest)])
	switch cmd {
	case "list":
		esc := bre(branch)
		return append(append(head, "--grep-reflog=^WIP on "+esc+": ", "--grep-reflog=^On "+esc+": "), rest...), -1, release
	case "clear":
		for _, n := range slices.Backward(own) {
			c := exec.Command(real, "-C", dir, "stash", "drop", "-q", fmt.Sprintf("stash@{%d}", n))
			c.Stderr = stderr
			if err := c.Run(); err != nil {
				return nil, 1, release
			}
		}
		return nil, 0, release
	case "pop", "apply", "drop", "show", "branch":
	default:
		return args, -1, release // push, save, create, store: under the lock
	}
	var pos []int // rest's arguments that are no option
	for i, a := range rest {
		if !strings.HasPrefix(a, "-") {
			pos = append(pos, i)
		}
	}
	named := len(pos) > 0
	if cmd == "branch" {
		named = len(pos) > 1 // branch <name> [<stash>]
	}
	if !named {
		if len(own) == 0 {
			fmt.Fprintln(stderr, "No stash entries found.")
			return nil, 1, release
		}
		return append(append(head, rest...), fmt.Sprintf("stash@{%d}", own[0])), -1, release
	}
	entry := rest[pos[len(pos)-1]]
	n, ok := stashNumber(entry)
	if !ok || slices.Contains(own, n) || n >= len(all) {
		return args, -1, release // a commit, or this branch's entry (or none: git says so)
	}
	yours := "it has none"
	if len(own) > 0 {
		var list []string
		for _, i := range own {
			list = append(list, fmt.Sprintf("stash@{%d} (%s)", i, all[i]))
		}
		yours = "its entries: " + strings.Join(list, ", ")
	}
	fmt.Fprintf(stderr, "wiggum: %s (%s) was not made on this worktree's branch, %s: in a parallel run every worktree shares git's stash, "+
		"and each agent works with the entries of its own branch; %s\n", entry, all[n], branch, yours)
	return nil, 1, release
}

// stashNumber reads a stash entry named by its position: n, stash@{n},
// refs/stash@{n}.
func stashNumber(s string) (int, bool) {
	if v, ok := strings.CutPrefix(strings.TrimPrefix(s, "refs/"), "stash@{"); ok {
		s, ok = strings.CutSuffix(v, "}")
		if !ok {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 0
}

// bre quotes s for a basic regular expression.
func bre(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.[]*^$`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// lockStash takes the workers' stash lock and leaves it to the git the
// shim execs: the descriptor is opened without close-on-exec, and the
// lock goes when git exits. A lock that cannot be had (a read-only git
// dir, as in codex's sandbox, where git's stash fails anyway) or that
// another git holds for over a minute is gone without. release closes
// the descriptor.
func lockStash(path string) (release func()) {
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CREAT, 0o644)
	if err != nil {
		return func() {}
	}
	release = func() { _ = syscall.Close(fd) }
	for deadline := time.Now().Add(time.Minute); ; {
		err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil || err != syscall.EWOULDBLOCK || time.Now().After(deadline) {
			return release
		}
		time.Sleep(10 * time.Millisecond)
	}
}
