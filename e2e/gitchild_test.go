package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestKilledWiggumLeavesNoGit SIGKILLs `wiggum checkpoint` while one of its
// git commands runs (held in place by a git wrapper first on PATH): the kernel
// frees the lock at once, so that git command must die with wiggum, or it
// would write refs and files while another process holds the lock.
func TestKilledWiggumLeavesNoGit(t *testing.T) {
	dir := newRepo(t)
	realGit, err := lookGit()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	wrapper := "#!/bin/sh\n" +
		"if [ \"$1\" = update-ref ]; then echo $$ > \"$MARKS/git.pid\"; while [ ! -e \"$MARKS/go\" ]; do sleep 0.02; done; fi\n" +
		"exec " + realGit + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	marks := t.TempDir()
	writeState(t, dir, "a.txt", "dirty\n") // a dirty tree makes checkpoint run update-ref
	path := "PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")
	w := startWiggum(t, dir, []string{path, "MARKS=" + marks}, "checkpoint")
	gitPID := readPID(t, filepath.Join(marks, "git.pid"))
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	w.wait(t)
	if r := wiggum(t, dir, nil, "lock", "--", "true"); r.code != 0 {
		t.Fatalf("lock after the checkpoint was killed: exit %d; stderr: %s", r.code, r.stderr)
	}
	defer os.WriteFile(filepath.Join(marks, "go"), nil, 0o644)
	eventually(t, "the killed wiggum's git to die", func() bool { return !alive(gitPID) })
}

func lookGit() (string, error) {
	for _, d := range strings.Split(os.Getenv("PATH"), string(os.PathListSeparator)) {
		p := filepath.Join(d, "git")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", os.ErrNotExist
}
