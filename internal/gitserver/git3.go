package gitserver

import "os"

// git 3 refuses git run inside a bare repository without --git-dir
// (safe.bareRepository=explicit), and the tests that serve a bare
// repository look into it that way: every test process that imports this
// package allows it, for the git it starts and the git wiggum starts
// (config through the environment reaches both). gits before 3 allow it
// already. Nothing but tests imports this package.
func init() {
	if os.Getenv("GIT_CONFIG_COUNT") == "" {
		os.Setenv("GIT_CONFIG_COUNT", "1")
		os.Setenv("GIT_CONFIG_KEY_0", "safe.bareRepository")
		os.Setenv("GIT_CONFIG_VALUE_0", "all")
	}
}
