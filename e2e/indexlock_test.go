package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// holdIndexForMoments has git itself hold the repository's index lock
// for about hold, again and again, gap apart, until stop is called: git
// commit -a holds the lock while its pre-commit hook runs - here one that
// sleeps, then fails, so no commit is made - as an editor's or IDE's git
// status holds it, set off by the files an agent writes.
func holdIndexForMoments(t *testing.T, dir string, hold, gap time.Duration) (stop func()) {
	t.Helper()
	hooks := t.TempDir()
	writeFile(t, filepath.Join(hooks, "pre-commit"), fmt.Sprintf("#!/bin/sh\nsleep %.3f\nexit 1\n", hold.Seconds()))
	if err := os.Chmod(filepath.Join(hooks, "pre-commit"), 0o755); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			cmd := exec.Command("git", "-c", "core.hooksPath="+hooks, "commit", "-a", "--allow-empty", "-q", "-m", "the lock holder's")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err == nil {
				t.Errorf("the lock holder's commit was made:\n%s", out)
				return
			}
			time.Sleep(gap)
		}
	})
	return sync.OnceFunc(func() { close(done); wg.Wait() })
}

// Another git holding the index for moments - most of the time here -
// failed a passed attempt's commit ("Unable to create index.lock: File
// exists"; the good work rolled back as a failure) and refused a failed
// attempt's rollback, and the unattended run stopped with exit 4 over a
// lock let go of milliseconds later. git commands that take the index
// lock first are run again while another holds it, and the rollback
// waits for its own lock the same way.
func TestRunWhileAnotherGitHoldsTheIndexForMoments(t *testing.T) {
	for _, workers := range []string{"1", "2"} {
		t.Run("workers "+workers, func(t *testing.T) {
			dir := newRepo(t)
			const n = 6
			aheadPlan(t, dir, n)
			// Every third iteration fails: rollbacks as well as commits.
			agent := filepath.Join(t.TempDir(), "agent.sh")
			writeFile(t, agent, `cat > /dev/null
echo "$WIGGUM_STORY $WIGGUM_ITERATION" >> "work-$WIGGUM_STORY.txt"
[ $((WIGGUM_ITERATION % 3)) -eq 0 ] && exit 1
exit 0
`)
			stop := holdIndexForMoments(t, dir, 40*time.Millisecond, 10*time.Millisecond)
			r := wiggum(t, dir, nil, "run", "--plan", "plan.md", "--workers", workers, "--retries", "3", "--agent-cmd", "sh "+agent)
			stop()
			if r.code != 0 {
				t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if strings.Contains(r.stdout+r.stderr, "index.lock") {
				t.Errorf("a failure over the index lock:\n%s\n%s", r.stdout, r.stderr)
			}
			for i := 1; i <= n; i++ {
				if run(t, dir, nil, "git", "cat-file", "-e", fmt.Sprintf("HEAD:work-US-%d.txt", i)).code != 0 {
					t.Errorf("US-%d's work is not in HEAD:\n%s", i, r.stdout)
				}
			}
			if st := mustRun(t, dir, "git", "status", "--porcelain"); st != "" {
				t.Errorf("left uncommitted:\n%s", st)
			}
		})
	}
}
