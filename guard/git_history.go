package guard

import "strings"

// Rewriting history and destroying what a rollback or the user would
// recover from: filter-branch, reflog expire/delete, gc --prune=now,
// prune.

func (w *walk) gitRewrite(sub string) {
	w.g.verdict(Deny, "git %s rewrites history the checkpoint and journal refer to; not allowed during a wiggum session", sub)
}

// gitReflog denies deleting reflog entries: they are how lost commits are
// found again.
func (w *walk) gitReflog(rest []string) {
	if len(rest) == 0 {
		return
	}
	switch rest[0] {
	case "delete":
		w.g.verdict(Deny, "git reflog delete removes the record of where branches were, which is how lost commits are found again; not allowed during a wiggum session")
	case "expire":
		for _, a := range rest[1:] {
			if strings.HasPrefix(a, "--expire") {
				w.g.verdict(Deny, "git reflog expire %s drops the record of where branches were, which is how lost commits are found again; not allowed during a wiggum session", a)
				return
			}
		}
	}
}

// gitPrune denies deleting unreachable objects now: git prune, and git gc
// with an immediate --prune.
func (w *walk) gitPrune(sub string, rest []string) {
	if sub == "prune" {
		if !hasAny(rest, "-n", "--dry-run") {
			w.g.verdict(Deny, "git prune deletes unreachable objects for good: the commits a reset or rollback left behind could not be recovered; not allowed during a wiggum session")
		}
		return
	}
	for i, a := range rest {
		name, when, ok := strings.Cut(a, "=")
		if !longOpt(name, "--prune", 4) {
			continue
		}
		if !ok && i+1 < len(rest) {
			when = rest[i+1]
		}
		if pruneNow(when) {
			w.g.verdict(Deny, "git gc %s deletes unreachable objects at once: the commits a reset or rollback left behind could not be recovered; run plain `git gc` (it keeps two weeks)", a)
			return
		}
	}
}

// pruneNow reports whether an expiry date means now.
func pruneNow(when string) bool {
	switch strings.ToLower(when) {
	case "now", "all", "0":
		return true
	}
	return false
}

func hasAny(args []string, opts ...string) bool {
	for _, a := range args {
		for _, o := range opts {
			if a == o {
				return true
			}
		}
	}
	return false
}
