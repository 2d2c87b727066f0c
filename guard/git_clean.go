package guard

import "strings"

// gitClean denies clean -f unless it is a dry run.
func (w *walk) gitClean(rest []string) {
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
	if force && !dry {
		w.g.verdict(Deny, "git clean -f deletes untracked files for good (wiggum's backups cannot save them afterwards); delete the specific files you created with rm instead, or preview with git clean -n")
	}
}
