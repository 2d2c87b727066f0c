package guard

import "strings"

// The commands that move the working tree: checkout, restore and switch.
// Discarding every uncommitted change is denied; the branches they check
// out are remembered for the merge rule.

func (w *walk) gitCheckout(rest []string) {
	opts, paths := splitDashDash(rest)
	for _, a := range opts {
		if a == "-f" || longOpt(a, "--force", 4) || (shortFlag(a, "f") && !strings.ContainsAny(a, "bB")) {
			w.g.verdict(Deny, "git checkout %s throws away uncommitted changes; commit or stash them first", a)
		}
	}
	if created, start, force := checkoutCreates(opts, "bB"); force {
		w.forceBranch("git checkout -B", created, start)
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

// checkoutCreates finds the branch checkout -b/-B (switch -c/-C, letters)
// creates and its start point; force: the upper-case option, which moves
// a branch that exists.
func checkoutCreates(opts []string, letters string) (name, start string, force bool) {
	for j := 0; j < len(opts); j++ {
		a := opts[j]
		if len(a) != 2 || a[0] != '-' || !strings.ContainsRune(letters, rune(a[1])) || j+1 >= len(opts) {
			continue
		}
		name, force = opts[j+1], a[1] == letters[1]
		for _, b := range opts[j+2:] {
			if !strings.HasPrefix(b, "-") {
				start = b
				break
			}
		}
		return name, start, force
	}
	return "", "", false
}

// checkoutTarget tells "git checkout ." (a pathspec, returned) from "git
// checkout main" (a branch, remembered): after the branch or commit,
// operands are pathspecs (git checkout HEAD . restores them all).
func (w *walk) checkoutTarget(opts []string) []string {
	for j := 0; j < len(opts); j++ {
		a := opts[j]
		if strings.HasPrefix(a, "-") {
			if (a == "-b" || a == "-B" || a == "--orphan") && j+1 < len(opts) {
				w.branches = append(w.branches, opts[j+1])
				j++
				if j+1 < len(opts) && !strings.HasPrefix(opts[j+1], "-") {
					j++ // the start point
				}
			}
			continue
		}
		if w.wholeTree(a) {
			return []string{a}
		}
		w.branches = append(w.branches, a)
		return opts[j+1:]
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
	if created, start, force := checkoutCreates(rest, "cC"); force {
		w.forceBranch("git switch -C", created, start)
	}
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		switch {
		case longOpt(a, "--discard-changes", 4) || a == "-f" || longOpt(a, "--force", 4) || (shortFlag(a, "f") && !strings.ContainsAny(a, "cC")):
			w.g.verdict(Deny, "git switch %s throws away uncommitted changes; commit or stash them first", a)
		case (a == "-c" || a == "-C") && j+1 < len(rest):
			w.branches = append(w.branches, rest[j+1])
			return // what follows is the start point
		case !strings.HasPrefix(a, "-"):
			w.branches = append(w.branches, a)
			return
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
