package hooks

import (
	"path/filepath"

	gitfiles "github.com/wiggum-dev/wiggum/internal/git"
)

// A hook call must cost about what starting a Go binary costs, so nothing
// here spawns git: the working tree and its branch come from internal/git's
// file reads, the session from the holder record and a lock probe.

// findRoot is the working tree containing dir, found without git.
func findRoot(dir string) string { return gitfiles.FindRoot(dir) }

// branches returns the checked-out branch ("" when detached or unknown)
// and the remote's default branch ("" when unknown), for the guard's
// protected-branch rule.
func branches(root string) (current, defaultBranch string) {
	gitDir, commonDir := gitfiles.Dirs(root)
	if gitDir == "" {
		return "", ""
	}
	return gitfiles.HeadBranch(gitDir), gitfiles.RemoteDefaultBranch(commonDir)
}

// infoDir is the repository's shared info directory (where exclude
// lives), "" when root holds no readable .git.
func infoDir(root string) string {
	if _, common := gitfiles.Dirs(root); common != "" {
		return filepath.Join(common, "info")
	}
	return ""
}
