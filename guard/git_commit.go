package guard

import "strings"

// gitCommit denies skipping the repository's hooks.
func (w *walk) gitCommit(rest []string) {
	if commitNoVerify(rest) {
		w.g.verdict(Deny, "git commit --no-verify skips the repository's hooks; fix what the hooks report and commit normally")
	}
}

// commitNoVerify finds --no-verify or -n, also inside clusters like -nm.
func commitNoVerify(args []string) bool {
	const valueOpts = "mFcCtuS"
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return false
		case longOpt(a, "--no-verify", 6):
			return true
		case strings.HasPrefix(a, "--"):
			if !strings.Contains(a, "=") && commitLongValue(a) {
				i++
			}
		case len(a) > 1 && a[0] == '-':
			n, skip := shortCluster(a, valueOpts)
			if n {
				return true
			}
			if skip {
				i++
			}
		}
	}
	return false
}

// shortCluster reads a cluster of commit's short options: whether it holds
// -n, and whether its last option takes the next argument as its value.
func shortCluster(a, valueOpts string) (noVerify, takesNext bool) {
	for j := 1; j < len(a); j++ {
		if a[j] == 'n' {
			return true, false
		}
		if strings.IndexByte(valueOpts, a[j]) >= 0 {
			// -u and -S take their value only when attached.
			return false, j == len(a)-1 && a[j] != 'u' && a[j] != 'S'
		}
	}
	return false, false
}

func commitLongValue(opt string) bool {
	switch opt {
	case "--message", "--file", "--author", "--date", "--template", "--reuse-message", "--reedit-message", "--fixup", "--squash", "--trailer", "--cleanup", "--pathspec-from-file":
		return true
	}
	return false
}
