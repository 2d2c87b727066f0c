package guard

import "strings"

// The commands that move the working tree: checkout, restore and switch.
// Discarding every uncommitted change is denied; the branches they check
// out are remembered for the merge rule.

func (w *walk) gitCheckout(rest []string) {
	opts, paths := splitDashDash(rest)
	for _, a := range opts {
		if a == "-f" || longOpt(a, "--force", 4) {
			w.g.verdict(Deny, "git checkout --force throws away uncommitted changes; commit or stash them first")
		}
	}
	if paths == nil {
		paths = w.checkoutTarget(opts)
	}
	for _, p := range paths {
		if w.wholeTree(p) {
			w.g.verdict(Deny, "git checkout %s discards every uncommitted change in the working tree; restore only the files you mean to (git checkout -- FILE), or let `wiggum rollback` return to the checkpoint", printable(p))
			break
		}
	}
}

// checkoutTarget tells "git checkout ." (a pathspec, returned) from "git
// checkout main" (a branch, remembered).
func (w *walk) checkoutTarget(opts []string) []string {
	for j, a := range opts {
		if strings.HasPrefix(a, "-") {
			if (a == "-b" || a == "-B") && j+1 < len(opts) {
				w.branches = append(w.branches, opts[j+1])
			}
			continue
		}
		if w.wholeTree(a) {
			return []string{a}
		}
		w.branches = append(w.branches, a)
		return nil
	}
	return nil
}

func (w *walk) gitRestore(rest []string) {
	opts, paths := splitDashDash(rest)
	staged, worktree := false, false
	var operands []string
	for j := 0; j < len(opts); j++ {
		a := opts[j]
		switch {
		case a == "--staged" || a == "-S":
			staged = true
		case a == "--worktree" || a == "-W":
			worktree = true
		case a == "-s" || a == "--source":
			j++
		case strings.HasPrefix(a, "-"):
			if len(a) > 1 && a[1] != '-' {
				staged = staged || strings.ContainsRune(a, 'S')
				worktree = worktree || strings.ContainsRune(a, 'W')
			}
		default:
			operands = append(operands, a)
		}
	}
	if staged && !worktree {
		return // only the index changes
	}
	for _, p := range append(operands, paths...) {
		if w.wholeTree(p) {
			w.g.verdict(Deny, "git restore %s discards every uncommitted change in the working tree; restore only the files you mean to, or let `wiggum rollback` return to the checkpoint", printable(p))
			break
		}
	}
}

func (w *walk) gitSwitch(rest []string) {
	for j, a := range rest {
		switch {
		case longOpt(a, "--discard-changes", 4) || a == "-f" || longOpt(a, "--force", 4):
			w.g.verdict(Deny, "git switch %s throws away uncommitted changes; commit or stash them first", a)
		case (a == "-c" || a == "-C") && j+1 < len(rest):
			w.branches = append(w.branches, rest[j+1])
		case !strings.HasPrefix(a, "-"):
			w.branches = append(w.branches, a)
		}
	}
}

// wholeTree reports whether a pathspec names the whole working tree.
func (w *walk) wholeTree(p string) bool {
	switch p {
	case ".", "./", ":/", ":/*", "*", ":(top)", ":(top).", "./*", ":":
		return true
	}
	if w.g.p.Root == "" {
		return false
	}
	for _, dir := range w.dirs {
		if dir == w.g.p.Root && (p == "." || p == "*") {
			return true
		}
	}
	abs := w.g.resolve(w.g.p.Cwd, p)
	return abs != "" && abs == w.g.p.Root
}
