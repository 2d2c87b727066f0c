package guard

import "strings"

// gitWorktree denies removing or moving a worktree under wiggum's state
// (.ralph/wiggum/worktrees): a parallel worker's, whose lease says it is
// in use; a forced removal of a worktree only known at run time is asked
// about. git worktree prune forgets only worktrees whose directory is
// gone, and stays allowed.
func (w *walk) gitWorktree(rest []string) {
	if len(rest) == 0 || (rest[0] != "remove" && rest[0] != "move") {
		return
	}
	sub := rest[0]
	force := false
	for _, a := range rest[1:] {
		if a == "-f" || a == "--force" || shortFlag(a, "f") {
			force = true
		}
	}
	for _, p := range operands(rest[1:]) {
		if strings.Contains(p, dynamic) {
			if force {
				w.g.verdict(Ask, "git worktree %s --force of a worktree only known at run time: a parallel worker's worktree in use must never be removed; spell the path out", sub)
			}
			continue
		}
		if w.worktreeState(p) {
			w.g.verdict(Deny, "git worktree %s %s: that is a wiggum worker's worktree, which may be in use (its lease held); `wiggum worktree prune` removes the ones no worker holds", sub, printable(p))
		}
		if sub == "move" {
			break // the destination is new
		}
	}
}

// worktreeState reports whether p, seen from any directory the script
// runs in, lies in wiggum's state - also from inside a worker's worktree,
// whose siblings are outside the policy's tree.
func (w *walk) worktreeState(p string) bool {
	if w.protected(p) != "" {
		return true
	}
	for _, d := range w.dirs {
		if abs := w.g.resolve(d, p); abs != "" && w.g.protectedState(abs) != "" {
			return true
		}
	}
	return false
}
