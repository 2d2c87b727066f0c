package guard

import "strings"

// gitRm denies removing the whole tree (git rm -r .), unless only the
// index changes (--cached).
func (w *walk) gitRm(rest []string) {
	opts, paths := splitDashDash(rest)
	recursive := false
	var specs []string
	for _, a := range opts {
		switch {
		case a == "--cached":
			return
		case a == "-r" || shortFlag(a, "r"):
			recursive = true
		case !strings.HasPrefix(a, "-"):
			specs = append(specs, a)
		}
	}
	if !recursive {
		return
	}
	for _, p := range append(specs, paths...) {
		if w.wholeTree(p) {
			w.g.verdict(Deny, "git rm -r %s deletes every tracked file in the working tree; remove only the files you mean to", printable(p))
			return
		}
	}
}
