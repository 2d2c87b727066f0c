package guard

import "strings"

// gitSubmodule checks git submodule: foreach runs shell code in every
// submodule; update --force and deinit --force throw away the uncommitted
// changes in submodules' working trees, which no backup of the main tree
// holds. git submodule's own options (--quiet, --cached) come before its
// command.
func (w *walk) gitSubmodule(rest []string) {
	i := 0
	for i < len(rest) && strings.HasPrefix(rest[i], "-") && rest[i] != "--" {
		i++
	}
	if i >= len(rest) {
		return
	}
	cmd, args := rest[i], rest[i+1:]
	switch cmd {
	case "foreach":
		j := 0
		for j < len(args) && strings.HasPrefix(args[j], "-") {
			j++
		}
		if j < len(args) {
			w.g.script(strings.Join(args[j:], " "), w.depth+1)
		}
	case "update", "deinit":
		for _, a := range beforeDashDash(args) {
			if a == "-f" || longOpt(a, "--force", 3) {
				what := "checks submodules out over their uncommitted changes"
				if cmd == "deinit" {
					what = "removes submodules' working trees with their uncommitted changes"
				}
				w.g.verdict(Deny, "git submodule %s --force %s, for good (wiggum's backups of this tree cannot hold what is inside a submodule); commit or stash in the submodule first, or run it without --force", cmd, what)
				return
			}
		}
	}
}
