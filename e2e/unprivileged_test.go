package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// nobody is the user the permission tests run as when the tests run as root,
// which file permissions do not stop.
const nobody = "65534"

// unprivileged returns how to run a command as a user file permissions
// apply to: this process's user when it is not root; as root, the user
// nobody through setpriv (util-linux, which CI installs), with the
// directories given (the repositories and script directories of the test)
// handed to that user and the built wiggum reachable; git in those
// repositories is then run through it too (git refuses root in a
// repository another user owns). Each command gets a
// home of its own, owned by that user, with the tests' git configuration.
func unprivileged(t *testing.T, dirs ...string) func(dir string, env []string, name string, args ...string) result {
	t.Helper()
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".gitconfig"), "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n[safe]\n\tbareRepository = all\n")
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}
	if os.Geteuid() != 0 {
		return func(dir string, extra []string, name string, args ...string) result {
			t.Helper()
			return run(t, dir, append(append([]string{}, env...), extra...), name, args...)
		}
	}
	setpriv := needTool(t, "setpriv", "util-linux")
	// Every directory on the way to the test's files and to the binary
	// (t.TempDir and os.MkdirTemp make them 0700).
	for _, d := range append([]string{home, filepath.Dir(wiggumBin)}, dirs...) {
		for p := d; p != "/" && p != "." && p != os.TempDir(); p = filepath.Dir(p) {
			if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o005 != 0o005 {
				if err := os.Chmod(p, fi.Mode().Perm()|0o055); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, d := range append([]string{home}, dirs...) {
		mustRun(t, "/", "chown", "-R", nobody+":"+nobody, d)
	}
	return func(dir string, extra []string, name string, args ...string) result {
		t.Helper()
		argv := append([]string{"--reuid=" + nobody, "--regid=" + nobody, "--clear-groups", name}, args...)
		return run(t, dir, append(append([]string{}, env...), extra...), setpriv, argv...)
	}
}

// asRoot reports whether the test runs as root (and so its unprivileged
// commands as nobody): what the test itself writes must be handed over.
func asRoot() bool { return os.Geteuid() == 0 }

// giveAway hands paths the test made after unprivileged to the user its
// commands run as.
func giveAway(t *testing.T, paths ...string) {
	t.Helper()
	if !asRoot() {
		return
	}
	for _, p := range paths {
		if out, err := exec.Command("chown", "-R", nobody+":"+nobody, p).CombinedOutput(); err != nil {
			t.Fatalf("chown %s: %v %s", p, err, strings.TrimSpace(string(out)))
		}
	}
}
