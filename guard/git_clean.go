package guard

import "strings"

// gitClean denies clean -f unless it is a dry run, and a clean that needs
// no -f because clean.requireForce is off: in -c, in the command's
// GIT_CONFIG_* settings or config writes, or in the repository's config.
func (w *walk) gitClean(rest []string, inline []gitSetting) {
	force, dry := false, false
	for _, a := range beforeDashDash(rest) {
		switch {
		case longOpt(a, "--force", 3):
			force = true
		case a == "--dry-run":
			dry = true
		case len(a) > 1 && a[0] == '-' && a[1] != '-':
			force = force || strings.ContainsRune(a, 'f')
			dry = dry || strings.ContainsRune(a, 'n')
		}
	}
	if dry {
		return
	}
	if force {
		w.g.verdict(Deny, "git clean -f deletes untracked files for good (wiggum's backups cannot save them afterwards); delete the specific files you created with rm instead, or preview with git clean -n")
		return
	}
	if w.requireForceOff(inline) {
		w.g.verdict(Deny, "git clean with clean.requireForce off deletes untracked files for good, as git clean -f does (wiggum's backups cannot save them afterwards); delete the specific files you created with rm instead, or preview with git clean -n")
		return
	}
	if why := w.g.settings().unknown; why != "" {
		w.g.verdict(Ask, "git clean deletes untracked files when clean.requireForce is off, and %s; wiggum's guard cannot tell whether it is", why)
	}
}

// requireForceOff reports whether git clean runs without -f: the setting's
// -c value decides; otherwise any false one the command gives git, or
// the repository or the person has, counts.
func (w *walk) requireForceOff(inline []gitSetting) bool {
	const key = "clean.requireforce"
	if s, ok := lookup(inline, key); ok {
		return gitOff(s)
	}
	if s, ok := lookup(w.g.settings().list, key); ok && gitOff(s) {
		return true
	}
	for _, s := range w.g.diskConfig() {
		if s.key == key && gitOff(s) {
			return true
		}
	}
	return false
}
