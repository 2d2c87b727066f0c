package guard

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// gitInlineConfig checks git -c KEY=VALUE (judgeSetting) and returns the
// setting, which holds for this one git command.
func (w *walk) gitInlineConfig(value string) gitSetting {
	key, v, set := strings.Cut(value, "=")
	s := gitSetting{key: strings.ToLower(key), value: v, set: set}
	w.judgeSetting("git -c "+s.key, s)
	if includeKey(s.key) {
		w.gitConfigFile("git -c "+s.key, v, w.g.p.Cwd, 1)
	}
	return s
}

// gitConfig denies setting core.hooksPath, or expiry dates of now, and
// any change to the person's own settings (--global, --system).
func (w *walk) gitConfig(rest []string) {
	if len(rest) < 2 || slices.Contains(rest, "--get") || slices.Contains(rest, "--list") || slices.Contains(rest, "-l") {
		return
	}
	// (safe.directory lets git work in a tree another user owns - a
	// container's mount - and weakens nothing of the person's.)
	if (slices.Contains(rest, "--global") || slices.Contains(rest, "--system") || w.personsConfigFile(rest)) && configWrites(rest) &&
		!slices.ContainsFunc(rest, func(a string) bool { return strings.EqualFold(a, "safe.directory") }) {
		w.g.verdict(Deny, "git config %s changes the person's git settings for every repository on the machine (an identity set there signs every later commit of theirs); set it for this repository only, without --global", printable(strings.Join(rest, " ")))
	}
	for i, a := range rest {
		if strings.EqualFold(a, "core.hooksPath") {
			w.g.verdict(Deny, "changing core.hooksPath disables wiggum's git hooks (the commit journal and push guard)")
		}
		unset := slices.Contains(rest, "--unset") || slices.Contains(rest, "--unset-all")
		if !strings.HasPrefix(a, "-") && i+1 < len(rest) && includeKey(strings.ToLower(a)) && !unset {
			w.g.verdict(Deny, "git config %s %s makes git read that file as more of its configuration, in wiggum's git commands too: what it sets (a command git runs, core.hooksPath) wiggum's guard never sees, and a FIFO there makes every git wait forever; set what you need in the config itself", a, printable(rest[i+1]))
			continue
		}
		if !strings.HasPrefix(a, "-") && i+1 < len(rest) && !strings.HasPrefix(strings.ToLower(a), "alias.") &&
			CommandKey(strings.ToLower(a), rest[i+1]) && !unset {
			w.g.verdict(Deny, "git config %s makes git run a command of its own, or read settings that may (%s) - in wiggum's git commands too - where wiggum's guard never sees it; run the command directly instead", a, printable(rest[i+1]))
		}
		if strings.HasPrefix(strings.ToLower(a), "alias.") && i+1 < len(rest) {
			w.gitAlias(rest[i+1])
		}
		if k := strings.ToLower(a); remoteKey(k) && (i+1 < len(rest) || slices.Contains(rest, "--unset") || slices.Contains(rest, "--unset-all")) ||
			(k == "--remove-section" || k == "--rename-section") && i+1 < len(rest) && remoteSection(strings.ToLower(rest[i+1])) {
			w.g.verdict(Deny, "git config %s changes where the repository's remotes point (a later push or fetch of the person's would go there); not allowed during a wiggum session", printable(strings.Join(rest, " ")))
		}
		if !strings.HasPrefix(a, "-") && i+1 < len(rest) && configWrites(rest) {
			w.gitConfigWrite(a, rest[i+1])
			if strings.EqualFold(a, "clean.requireForce") && gitOff(gitSetting{value: rest[i+1], set: true}) {
				w.g.verdict(Deny, "git config %s %s lets git clean delete untracked files without -f (wiggum's backups cannot save them); not allowed during a wiggum session", a, printable(rest[i+1]))
			}
		}
		if expiryKey(strings.ToLower(a)) && i+1 < len(rest) && pruneNow(rest[i+1]) {
			w.g.verdict(Deny, "git config %s %s makes git delete unreachable objects or reflogs at once; not allowed during a wiggum session", a, rest[i+1])
		}
	}
}

// remoteKey names the settings that say where a remote is, or rewrite
// every URL git fetches from or pushes to: remote.NAME.url, .pushurl,
// url.BASE.insteadOf, .pushInsteadOf.
func remoteKey(key string) bool {
	switch {
	case strings.HasPrefix(key, "remote."):
		return strings.HasSuffix(key, ".url") || strings.HasSuffix(key, ".pushurl")
	case strings.HasPrefix(key, "url."):
		return strings.HasSuffix(key, ".insteadof") || strings.HasSuffix(key, ".pushinsteadof")
	}
	return false
}

// remoteSection reports whether a config section names a remote or a URL
// rewrite (remote.origin, url.https://x/).
func remoteSection(sec string) bool {
	return strings.HasPrefix(sec, "remote.") || strings.HasPrefix(sec, "url.")
}

// gitRemote denies changing where an existing remote points - set-url,
// remove, rename - during a session: a later push or fetch of the
// person's would go to the agent's URL, or find no remote. Adding a
// remote of its own (to fetch a reference) and reading them are the
// agent's.
func (w *walk) gitRemote(rest []string) {
	for i, a := range rest {
		if strings.HasPrefix(a, "-") {
			continue
		}
		switch a {
		case "set-url", "remove", "rm", "rename":
			w.g.verdict(Deny, "git remote %s changes where the repository's remotes point (a later push or fetch of the person's would go elsewhere); not allowed during a wiggum session", printable(strings.Join(rest[i:], " ")))
		}
		return
	}
}

// expiryKey names the settings that decide how long git keeps what a
// rollback or the user would recover from.
func expiryKey(key string) bool {
	switch key {
	case "gc.pruneexpire", "gc.reflogexpire", "gc.reflogexpireunreachable", "gc.worktreepruneexpire":
		return true
	}
	return false
}

// assigns checks VAR=value words before a command, and export VAR=value.
func (w *walk) assigns(as []*syntax.Assign) {
	for _, a := range as {
		if a.Name != nil && a.Value != nil {
			v, _ := wordValue(a.Value)
			w.gitEnv(a.Name.Value, v)
		}
	}
}

// gitEnv denies setting core.hooksPath through git's configuration
// variables (GIT_CONFIG_KEY_n, GIT_CONFIG_PARAMETERS), and the variables
// the hook managers read to skip the repository's hooks - what an agent
// whose commit a hook refused reaches for when --no-verify is denied.
func (w *walk) gitEnv(name, value string) {
	if strings.HasPrefix(name, "GIT_CONFIG") {
		w.gitConfigEnv(name, value)
	}
	if strings.HasPrefix(name, "GIT_CONFIG") && strings.Contains(strings.ToLower(value), "core.hookspath") {
		w.g.verdict(Deny, "%s=%s sets core.hooksPath, which bypasses wiggum's git hooks (the commit journal and push guard)", name, printable(value))
	}
	if by := hookSkipper(name, value); by != "" {
		w.g.verdict(Deny, "%s=%s skips the repository's git hooks (%s), as git commit --no-verify does; fix what the hooks report and commit normally", name, printable(value), by)
	}
}

// hookSkipper names the hook manager that the variable name set to value
// tells to skip the repository's hooks, or "".
func hookSkipper(name, value string) string {
	off := value == "0" || strings.EqualFold(value, "false")
	switch {
	case name == "HUSKY" && off, name == "HUSKY_SKIP_HOOKS" && value != "":
		return "husky"
	case name == "LEFTHOOK" && off:
		return "lefthook"
	case name == "SKIP" && value != "":
		return "the pre-commit framework's SKIP"
	case name == "OVERCOMMIT_DISABLE" && value != "" && !off:
		return "overcommit"
	}
	return ""
}

// configWrites reports whether git config's arguments write: a key and a
// value, an option that changes (--unset, --add, --replace-all, a
// section's removal or rename, --edit), or git 2.46's subcommands that do.
func configWrites(rest []string) bool {
	var words []string
	for i := 0; i < len(rest); i++ {
		switch a := rest[i]; {
		case a == "--unset", a == "--unset-all", a == "--add", a == "--replace-all", a == "--remove-section", a == "--rename-section",
			a == "-e", a == "--edit":
			return true
		case a == "-f" || a == "--file" || a == "--blob" || a == "--type" || a == "--default" || a == "--comment":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			words = append(words, a)
		}
	}
	if len(words) > 0 {
		switch words[0] {
		case "set", "unset", "rename-section", "remove-section", "edit":
			return true
		case "get", "list":
			return false
		}
	}
	return len(words) >= 2
}

// personsConfigFile reports whether git config's --file (-f) names the
// person's own settings: ~/.gitconfig or ~/.config/git/config.
func (w *walk) personsConfigFile(rest []string) bool {
	for i, a := range rest {
		var f string
		switch {
		case (a == "-f" || a == "--file") && i+1 < len(rest):
			f = rest[i+1]
		case strings.HasPrefix(a, "--file="):
			f = strings.TrimPrefix(a, "--file=")
		default:
			continue
		}
		if rel, ok := strings.CutPrefix(f, "~/"); ok && w.g.p.Home != "" {
			f = path.Join(w.g.p.Home, rel)
		}
		if w.g.homeGitConfig(path.Clean(f)) {
			return true
		}
	}
	return false
}
