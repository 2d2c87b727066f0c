package guard

import "slices"

// gitReset denies reset --hard.
func (w *walk) gitReset(rest []string) {
	if slices.ContainsFunc(rest, func(a string) bool { return longOpt(a, "--hard", 4) }) {
		w.g.verdict(Deny, "git reset --hard throws away uncommitted work and commits wiggum may not be able to recover; to return to the checkpoint run `wiggum rollback` (it refuses when unsafe and saves what it discards), or use `git reset --soft`/`git restore FILE` for a narrower undo")
	}
}
