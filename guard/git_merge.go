package guard

import (
	"slices"
	"strings"
)

// gitMerge denies merging into a protected branch (merge and pull).
func (w *walk) gitMerge(sub string, rest []string, otherDir bool) {
	for _, a := range rest {
		if a == "--abort" || a == "--quit" || a == "--continue" {
			return
		}
	}
	for _, d := range w.dirs[1:] {
		if !w.sameTree(d) {
			otherDir = true // the script changed into a directory the guard does not know
		}
	}
	if otherDir {
		w.g.verdict(Ask, "git %s in another directory: wiggum's guard cannot tell which branch it changes", sub)
		return
	}
	candidates := append([]string{w.g.p.Branch}, w.branches...)
	for _, b := range candidates {
		if strings.Contains(b, dynamic) {
			w.g.verdict(Ask, "git %s: the branch checked out before it is only known at run time, and merging into the main branch is not allowed during a session; spell the branch out", sub)
			continue
		}
		if b != "" && slices.Contains(w.g.p.ProtectedBranches, b) {
			w.g.verdict(Deny, "git %s into %s is not allowed during a wiggum session: %s is the main branch; commit on your story branch and leave merging to the loop or the user", sub, b, b)
			return
		}
	}
	if w.g.p.Branch == "" && len(w.branches) == 0 {
		w.g.verdict(Ask, "git %s: wiggum's guard cannot tell which branch is checked out, and merging into the main branch is not allowed during a session", sub)
	}
}
