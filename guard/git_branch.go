package guard

import (
	"slices"
	"strings"
)

// gitBranch denies deleting or moving branches by force.
func (w *walk) gitBranch(rest []string) {
	force := slices.ContainsFunc(rest, func(a string) bool { return a == "-f" || longOpt(a, "--force", 6) })
	for _, a := range beforeDashDash(rest) {
		if longOpt(a, "--force", 6) || (longOpt(a, "--delete", 4) && force) || shortFlag(a, "DMCf") {
			w.g.verdict(Deny, "git branch %s deletes or moves a branch that may hold unmerged work; use git branch -d (refuses unmerged branches) or leave branches to the loop", a)
		}
	}
}

// gitUpdateRef denies rewriting refs directly.
func (w *walk) gitUpdateRef(rest []string) {
	w.g.verdict(Deny, "git update-ref rewrites refs directly, behind the checkpoint's back; use normal commits, and `wiggum rollback`/`wiggum recover` to move between saved states")
}

// gitFastImport denies git fast-import, whatever its options: it writes
// the refs its input stream names (with --force over any history), and
// the guard cannot read the stream.
func (w *walk) gitFastImport() {
	w.g.verdict(Deny, "git fast-import writes the branches and refs its input stream names, behind the checkpoint's back; make the changes with normal commits, and `wiggum rollback`/`wiggum recover` to move between saved states")
}

// gitReplace denies writing or deleting replace refs: a replacement makes
// git show another object in place of a commit - for git log, merge-base
// and wiggum's own ancestry checks alike - and a graft hides the commits
// it skips. Only listing them is allowed: no argument, -l/--list with at
// most a pattern, --format.
func (w *walk) gitReplace(rest []string) {
	list, objects := false, false
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			objects = objects || i+1 < len(rest)
			i = len(rest)
		case a == "-l" || longOpt(a, "--list", 3):
			list = true
		case longOpt(a, "--format", 6):
			if !strings.Contains(a, "=") {
				i++ // the format, given apart
			}
		case strings.HasPrefix(a, "-"):
			w.g.verdict(Deny, "git replace %s changes which history git shows (and wiggum's checks see), behind the checkpoint's back; commit the change you mean instead (git replace -l lists the replacements)", printable(a))
			return
		default:
			objects = true
		}
	}
	if objects && !list {
		w.g.verdict(Deny, "git replace with objects makes git show one object in place of another (and wiggum's checks see it), behind the checkpoint's back; commit the change you mean instead (git replace -l lists the replacements)")
	}
}

// writesRefs names the subcommands that can create, move or delete refs
// given on their command line.
func writesRefs(sub string) bool {
	switch sub {
	case "branch", "tag", "replace", "symbolic-ref", "reflog", "fetch", "notes", "pack-refs":
		return true
	}
	return false
}

// gitOwnRefs denies touching the policy's ref namespace.
func (w *walk) gitOwnRefs(sub string, rest []string) {
	ns := strings.TrimSuffix(w.g.p.RefNamespace, "/")
	if ns == "" {
		return
	}
	for _, a := range rest {
		if strings.Contains(a, ns) {
			w.g.verdict(Deny, "git %s would touch %s, where wiggum keeps the backups of everything a rollback discarded; use `wiggum recover` to list, restore or prune them", sub, w.g.p.RefNamespace)
		}
	}
}
