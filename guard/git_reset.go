package guard

import "slices"

// gitReset denies reset --hard, and reset --merge, which throws away
// every staged change as --hard does. (--keep refuses to lose changes.)
func (w *walk) gitReset(rest []string) {
	if slices.ContainsFunc(rest, func(a string) bool { return longOpt(a, "--hard", 4) }) {
		w.g.verdict(Deny, "git reset --hard throws away uncommitted work and commits wiggum may not be able to recover; to return to the checkpoint run `wiggum rollback` (it refuses when unsafe and saves what it discards), or use `git reset --soft`/`git restore FILE` for a narrower undo")
	}
	if slices.ContainsFunc(beforeDashDash(rest), func(a string) bool { return longOpt(a, "--merge", 4) }) {
		w.g.verdict(Deny, "git reset --merge throws away every staged change, as git reset --hard does; to abandon a merge use `git merge --abort`, to return to the checkpoint `wiggum rollback`, or `git reset --keep` (it refuses to lose changes)")
	}
}

// gitReadTree denies read-tree -u --reset, and read-tree -u -m of one
// tree: both write the tree over the working tree, discarding tracked
// edits and staged new files as reset --hard does.
func (w *walk) gitReadTree(rest []string) {
	update, reset, merge, trees := false, false, false, 0
	for _, a := range beforeDashDash(rest) {
		switch {
		case a == "--reset":
			reset = true
		case len(a) > 1 && a[0] == '-' && a[1] != '-':
			update = update || shortFlag(a, "u")
			merge = merge || shortFlag(a, "m")
		case len(a) > 1 && a[0] == '-':
		default:
			trees++
		}
	}
	if update && (reset || merge && trees == 1) {
		w.g.verdict(Deny, "git read-tree -u with --reset, or -m of one tree, writes the tree over the working tree and throws away uncommitted work, as git reset --hard does; to return to the checkpoint run `wiggum rollback`, or use `git restore FILE` for a narrower undo")
	}
}
