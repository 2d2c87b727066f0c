package guard

import (
	"slices"
	"strings"
)

// gitFetch judges a fetch's refspecs: one that lands commits on a
// protected branch (intoProtected), and one that can delete or
// force-move refs it has no business with: with --prune or force, a refspec whose destination
// covers wiggum's ref namespace or the current or a protected branch
// (refs/*, refs/w*, +x:refs/heads/main). The destination's pattern is
// judged, not its text.
func (w *walk) gitFetch(rest []string) {
	prune, force, stdin := false, false, false
	var operands []string
	opts, paths := splitDashDash(rest)
	for i := 0; i < len(opts); i++ {
		a := opts[i]
		switch {
		case longOpt(a, "--prune", 4) || longOpt(a, "--prune-tags", 8):
			prune = true
		case longOpt(a, "--force", 3):
			force = true
		case a == "--stdin":
			stdin = true
		case a == "-j" || a == "-o" || a == "--depth" || a == "--deepen" || a == "--shallow-since" || a == "--shallow-exclude" ||
			a == "--refmap" || a == "--upload-pack" || a == "--server-option" || a == "--negotiation-tip" || a == "--filter" || a == "--jobs":
			i++
		case len(a) > 1 && a[0] == '-' && a[1] != '-':
			prune = prune || shortFlag(a, "pP")
			force = force || shortFlag(a, "f")
		case strings.HasPrefix(a, "-"):
		default:
			operands = append(operands, a)
		}
	}
	operands = append(operands, paths...)
	if len(operands) > 0 {
		operands = operands[1:] // the repository
	}
	if slices.Contains(rest, "--multiple") || slices.Contains(rest, "--all") {
		operands = nil // every operand names a remote
	}
	if stdin && (prune || force) {
		w.g.verdict(Ask, "git fetch --stdin with --prune or --force reads refspecs wiggum's guard cannot see; they may delete or overwrite %s or a protected branch", w.g.p.RefNamespace)
	}
	for _, spec := range operands {
		plus := strings.HasPrefix(spec, "+")
		src, dst, ok := strings.Cut(strings.TrimPrefix(spec, "+"), ":")
		if !ok || strings.HasPrefix(spec, "^") {
			continue
		}
		if src != "" && dst != "" {
			// SRC:DST moves DST to SRC: git fetch . story:main
			// fast-forwards main to story, as a merge would.
			w.intoProtected("git fetch "+printable(spec), src, strings.TrimPrefix(dst, "refs/heads/"), false)
		}
		if dst == "" || !(prune || force || plus) {
			continue
		}
		if what := w.fetchCovers(dst); what != "" {
			w.g.verdict(Deny, "git fetch %s with --prune or force can delete or overwrite %s; fetch into a ref of your own (refs/remotes/...) without --prune or +", printable(spec), what)
		}
	}
}

// fetchCovers names what a fetch destination can write or delete that it
// must not - wiggum's ref namespace, the current or a protected branch -
// or "".
func (w *walk) fetchCovers(dst string) string {
	if strings.Contains(dst, dynamic) {
		return "refs only known at run time"
	}
	// A pattern reaches every ref that starts with what precedes its star.
	pre, _, glob := strings.Cut(dst, "*")
	if ns := w.g.p.RefNamespace; ns != "" && (glob && (strings.HasPrefix(ns, pre) || strings.HasPrefix(pre, ns)) || strings.HasPrefix(dst, ns)) {
		return ns
	}
	branches := append([]string{}, w.g.p.ProtectedBranches...)
	if w.g.p.Branch != "" {
		branches = append(branches, w.g.p.Branch)
	}
	for _, b := range branches {
		ref := "refs/heads/" + b
		if glob && strings.HasPrefix(ref, pre) || dst == ref || dst == b || dst == "heads/"+b {
			return "the branch " + b
		}
	}
	return ""
}
