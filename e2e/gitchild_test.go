package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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

// TestPruneClearsAKilledRunsGit: a parallel run is SIGKILLed while a
// worker's `git commit` holds its branch's lock, and that git does not heed
// the SIGTERM of wiggum's death (git 2.39 was seen spinning in its own
// signal handler for good; the wrapper here ignores TERM). `wiggum worktree
// prune`, which a person runs after a crash, kills it - a git whose wiggum
// is dead - removes the lock it left and says both; the person's own git
// then works on that branch, and the next run lands every story. (A CI run
// of TestKilledWhileMakingAhead failed on such a lock: the test's own `git
// update-ref -d` of a branch prune had kept.)
func TestPruneClearsAKilledRunsGit(t *testing.T) {
	dir := newRepo(t)
	aheadPlan(t, dir, 2)
	realGit, err := lookGit()
	if err != nil {
		t.Fatal(err)
	}
	bin, marks := t.TempDir(), t.TempDir()
	wrapper := "#!/bin/sh\n" +
		"for a; do [ \"$a\" = commit ] && c=1; done\n" +
		"case $(pwd -P) in */.ralph/wiggum/worktrees/*) ;; *) c= ;; esac\n" +
		"if [ -n \"$c\" ]; then\n" +
		"  b=$(" + realGit + " symbolic-ref --short HEAD); d=$(" + realGit + " rev-parse --git-common-dir)\n" +
		"  : > \"$d/refs/heads/$b.lock\"; trap '' TERM; echo $$ > " + marks + "/tmp.$$; mv " + marks + "/tmp.$$ " + marks + "/git.$$\n" +
		"  while :; do sleep 0.05; done\n" +
		"fi\n" +
		"exec " + realGit + " \"$@\"\n"
	writeFile(t, filepath.Join(bin, "git"), wrapper)
	if err := os.Chmod(filepath.Join(bin, "git"), 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--plan", "plan.md", "--workers", "2", "--agent-cmd", `cat > /dev/null; echo "$WIGGUM_STORY" > "f-$WIGGUM_STORY.txt"`}
	path := "PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")
	// Whatever happens to the test, no wrapper outlives it (each ignores
	// SIGTERM and would spin for good).
	t.Cleanup(func() {
		found, _ := filepath.Glob(filepath.Join(marks, "git.*"))
		for _, f := range found {
			if data, err := os.ReadFile(f); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	})
	w := startWiggum(t, dir, []string{path}, args...)
	// Both workers may be committing; each such git writes its pid.
	var gits []int
	eventually(t, "a worker's git commit holding its branch's lock", func() bool {
		found, _ := filepath.Glob(filepath.Join(marks, "git.*"))
		return len(found) > 0
	})
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	w.wait(t)
	time.Sleep(100 * time.Millisecond) // a git that was starting shows its pid
	found, _ := filepath.Glob(filepath.Join(marks, "git.*"))
	for _, f := range found {
		gits = append(gits, readPID(t, f))
	}

	p := wiggum(t, dir, nil, "worktree", "prune")
	if p.code != 0 {
		t.Fatalf("prune: exit %d\n%s\n%s", p.code, p.stdout, p.stderr)
	}
	for _, pid := range gits {
		if !strings.Contains(p.stdout, fmt.Sprintf("killed git (pid %d: /bin/sh ", pid)) {
			t.Errorf("prune does not say it killed the killed run's git (pid %d):\n%s", pid, p.stdout)
		}
		if alive(pid) {
			t.Errorf("the killed run's git (pid %d) still runs after prune", pid)
		}
	}
	if !strings.Contains(p.stdout, ".lock, left by a git process that died without cleaning up") {
		t.Errorf("prune does not say it removed the lock:\n%s", p.stdout)
	}
	// The person's own git works on every wiggum branch prune kept.
	for _, ref := range strings.Fields(mustRun(t, dir, "git", "for-each-ref", "--format=%(refname)", "refs/heads/wiggum/")) {
		mustRun(t, dir, "git", "update-ref", "-m", "test: set a kept branch aside", "refs/kept/"+ref, ref)
		mustRun(t, dir, "git", "update-ref", "-d", ref)
	}
	if r := wiggum(t, dir, nil, args...); r.code != 0 {
		t.Fatalf("resumed run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	checkLandedOnce(t, dir, 2)
}
