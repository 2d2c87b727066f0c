package guard

import (
	"slices"
	"strings"
)

// Commits reach a protected branch without merge or pull too: a rebase
// onto another branch, a cherry-pick, a reset to another branch, a fetch
// into the local branch (read with its other refspec rules, gitFetch),
// checkout -B / switch -C. Each is judged as the
// merge rule judges a merge: denied when the branch it moves is protected,
// asked about when that branch is only known at run time. Moving a branch
// within its own history (HEAD~2, its remote-tracking branch) lands
// nothing and stays allowed, as everything on the agent's own branch does.

// gitLands checks the subcommands that can move a branch onto other
// commits.
func (w *walk) gitLands(sub string, rest []string, otherDir bool) {
	switch sub {
	case "rebase":
		w.gitRebaseLands(rest, otherDir)
	case "cherry-pick":
		w.gitCherryPickLands(rest, otherDir)
	case "reset":
		w.gitResetLands(rest, otherDir)
	}
}

// ownHistory reports whether rev, moved onto by the branch dest, brings no
// commit from elsewhere: HEAD and its ancestors, dest itself, or dest's
// upstream.
func ownHistory(rev, dest string) bool {
	base, _, _ := strings.Cut(rev, "~")
	base, _, _ = strings.Cut(base, "^")
	switch base {
	case "HEAD", "@", "ORIG_HEAD", "@{u}", "@{upstream}", "HEAD@{u}", "HEAD@{upstream}":
		return true
	}
	if dest == "" || strings.Contains(dest, dynamic) {
		return false
	}
	b := strings.TrimPrefix(base, "refs/heads/")
	return b == dest || b == dest+"@{u}" || b == dest+"@{upstream}" ||
		(strings.HasSuffix(b, "/"+dest) && (strings.HasPrefix(b, "refs/remotes/") || strings.Count(b, "/") == 1))
}

// intoProtected judges landing commits (from, for the reason) on branch,
// or on the branch checked out when branch is "".
func (w *walk) intoProtected(what, from, branch string, otherDir bool) {
	candidates := []string{branch}
	if branch == "" {
		for _, d := range w.dirs[1:] {
			if !w.sameTree(d) {
				otherDir = true
			}
		}
		if otherDir {
			w.g.verdict(Ask, "%s in another directory: wiggum's guard cannot tell which branch it changes", what)
			return
		}
		candidates = append([]string{w.g.p.Branch}, w.branches...)
	}
	for _, b := range candidates {
		if b == "" || ownHistory(from, b) {
			continue
		}
		if strings.Contains(b, dynamic) {
			w.g.verdict(Ask, "%s: the branch it lands on is only known at run time, and landing commits on the main branch is not allowed during a session", what)
			continue
		}
		if slices.Contains(w.g.p.ProtectedBranches, b) {
			w.g.verdict(Deny, "%s lands %s on %s, as a merge into it would: not allowed during a wiggum session; commit on your story branch and leave merging to the loop or the user", what, printable(from), b)
			return
		}
	}
}

// gitRebaseLands: git rebase [--onto NEW] [UPSTREAM [BRANCH]] replays
// BRANCH (or the checked-out one) onto NEW or UPSTREAM.
func (w *walk) gitRebaseLands(rest []string, otherDir bool) {
	onto := ""
	var ops []string
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		switch {
		case a == "--abort" || a == "--continue" || a == "--skip" || a == "--quit" || a == "--edit-todo" || a == "--show-current-patch":
			return
		case a == "--onto" && j+1 < len(rest):
			onto = rest[j+1]
			j++
		case strings.HasPrefix(a, "--onto="):
			onto = strings.TrimPrefix(a, "--onto=")
		case a == "-x" || a == "--exec" || a == "-s" || a == "--strategy" || a == "-X" || a == "--strategy-option":
			j++
		case strings.HasPrefix(a, "-"):
		default:
			ops = append(ops, a)
		}
	}
	if slices.Contains(rest, "--root") {
		ops = append([]string{""}, ops...)
	}
	from := onto
	if from == "" && len(ops) > 0 {
		from = ops[0]
	}
	if from == "" {
		return // onto the branch's upstream
	}
	branch := ""
	if len(ops) > 1 {
		branch = ops[1]
		w.branches = append(w.branches, branch) // rebase checks it out
	}
	w.intoProtected("git rebase", from, branch, otherDir)
}

// gitCherryPickLands: every commit picked lands on the checked-out branch.
func (w *walk) gitCherryPickLands(rest []string, otherDir bool) {
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		switch {
		case a == "--abort" || a == "--continue" || a == "--skip" || a == "--quit":
			return
		case a == "-m" || a == "--mainline" || a == "-s" || a == "--strategy" || a == "-X" || a == "--strategy-option":
			j++
		case !strings.HasPrefix(a, "-"):
			w.intoProtected("git cherry-pick", a, "", otherDir)
		}
	}
}

// gitResetLands: git reset --soft/--mixed/--keep REV (or REV --) moves the
// checked-out branch to REV. Without a mode or --, REV may be a file.
func (w *walk) gitResetLands(rest []string, otherDir bool) {
	opts, paths := splitDashDash(rest)
	mode := paths != nil
	rev, words := "", 0
	for _, a := range opts {
		switch {
		case a == "--soft" || a == "--mixed" || a == "--keep" || a == "--merge" || a == "--hard":
			mode = true
		case !strings.HasPrefix(a, "-"):
			if rev == "" {
				rev = a
			}
			words++
		}
	}
	// With no mode and no --, a sole word is a commit when it names a
	// branch (git refuses one that is a file too): git reset story moves
	// the checked-out branch there, as --mixed does.
	if !mode && words == 1 && (rev == w.g.p.Branch || slices.Contains(w.branches, rev) || (w.g.p.BranchExists != nil && w.g.p.BranchExists(rev))) {
		mode = true
	}
	if mode && rev != "" {
		w.intoProtected("git reset "+strings.Join(opts, " "), rev, "", otherDir)
	}
}

// forceBranch judges checkout -B / switch -C NAME [START], which resets
// NAME to START (HEAD when absent) when it exists, as git branch -f does.
func (w *walk) forceBranch(verb, name, start string) {
	if start == "" {
		start = "HEAD"
	}
	switch {
	case name == w.g.p.Branch && start == "HEAD":
		// Recreating the checked-out branch at HEAD moves nothing.
	case strings.Contains(name, dynamic):
		w.g.verdict(Ask, "%s of a branch only known at run time: if it exists, it is moved by force; spell the name out", verb)
	case slices.Contains(w.g.p.ProtectedBranches, name):
		if start == "HEAD" || !ownHistory(start, name) {
			w.g.verdict(Deny, "%s %s %s moves %s to %s by force, as a merge into it would: not allowed during a wiggum session; commit on your story branch and leave merging to the loop or the user", verb, name, printable(start), name, printable(start))
		}
	case w.g.p.BranchExists == nil:
		w.g.verdict(Ask, "%s %s moves that branch by force if it exists (like git branch -f), dropping its commits; wiggum's guard cannot tell whether it does - use git checkout -b for a new branch", verb, name)
	case w.g.p.BranchExists(name):
		w.g.verdict(Deny, "%s %s moves the existing branch %s by force (like git branch -f), dropping commits it holds; use git checkout -b for a new branch, or git reset on your own branch", verb, name, name)
	}
}
