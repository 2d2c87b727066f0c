package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// escapeAgent removes its worktree's .git (US-1 only, unless CALM is set),
// then commits: with the .git file gone, git's search for a repository
// walks up out of the worktree, which lies inside the main tree.
const escapeAgent = `cat > /dev/null
if [ "$WIGGUM_STORY" = US-1 ] && [ -z "$CALM" ]; then
  rm -rf .git
  git commit -q --allow-empty -m "escaped from $WIGGUM_STORY"
fi
echo "work of $WIGGUM_STORY" > "f-$WIGGUM_STORY.txt"
`

// TestWorktreeWithoutGitNeverReachesMain: an agent that removed its
// worktree's .git cannot commit to, or reset, the main repository, and
// fails only its own story: the other workers go on and land theirs, the
// run ends with work left (exit 5) saying which worktree lost its .git,
// that story's files are saved under refs/wiggum/backup/ before its
// worktree is removed, and main keeps every commit. The next run finishes
// the story. (Before, the whole run stopped with exit 1 at the first
// failed rollback, stopping every other worker's story.)
func TestWorktreeWithoutGitNeverReachesMain(t *testing.T) {
	dir, _, agent := scriptRepo(t, "", 3, escapeAgent)
	before := mustRun(t, dir, "git", "rev-parse", "HEAD")
	args := []string{"run", "--plan", "plan.md", "--workers", "2", "--agent-cmd", "sh " + agent, "--retries", "0"}
	res := wiggum(t, dir, nil, args...)
	out := res.stdout + res.stderr
	if res.code != 5 {
		t.Fatalf("exit %d, want 5 (work left)\n%s", res.code, out)
	}
	log := mustRun(t, dir, "git", "log", "--format=%H %s", "main")
	if strings.Contains(log, "escaped") {
		t.Fatalf("the agent's commit reached main:\n%s", log)
	}
	if !strings.Contains(log, strings.TrimSpace(before)) {
		t.Fatalf("main lost %s (reset by the agent?):\n%s", before, log)
	}
	for _, id := range []string{"US-2", "US-3"} {
		if !strings.Contains(log, id+": mark done") {
			t.Errorf("%s did not land:\n%s\n%s", id, log, out)
		}
	}
	if plan := readFile(t, filepath.Join(dir, "plan.md")); !strings.Contains(plan, "- [ ] US-1") {
		t.Errorf("US-1 is not open:\n%s", plan)
	}
	if !strings.Contains(out, "the worktree of US-1") || !strings.Contains(out, "has lost its .git") {
		t.Errorf("the run does not say the worktree of US-1 lost its .git:\n%s", out)
	}
	backups := strings.Fields(mustRun(t, dir, "git", "for-each-ref", "--format=%(refname)", "refs/wiggum/backup/"))
	saved := false
	for _, ref := range backups {
		if got := run(t, dir, nil, "git", "show", ref+":f-US-1.txt"); got.code == 0 && strings.TrimSpace(got.stdout) == "work of US-1" {
			saved = true
			if !strings.Contains(out, ref) {
				t.Errorf("the run does not name the backup %s:\n%s", ref, out)
			}
		}
	}
	if !saved {
		t.Errorf("US-1's files are in no backup (%v)\n%s", backups, out)
	}
	if ents, _ := filepath.Glob(filepath.Join(dir, ".ralph", "wiggum", "worktrees", "*")); len(ents) != 0 {
		t.Errorf("worktrees left: %v", ents)
	}
	if st := mustRun(t, dir, "git", "status", "--porcelain"); strings.TrimSpace(st) != "" {
		t.Errorf("the main tree is dirty after the run:\n%s", st)
	}
	again := wiggum(t, dir, []string{"CALM=1"}, args...)
	if again.code != 0 {
		t.Fatalf("the next run: exit %d\n%s%s", again.code, again.stdout, again.stderr)
	}
	if plan := readFile(t, filepath.Join(dir, "plan.md")); strings.Contains(plan, "[ ]") {
		t.Errorf("stories left open after the next run:\n%s", plan)
	}
	if got := strings.TrimSpace(mustRun(t, dir, "git", "show", "main:f-US-1.txt")); got != "work of US-1" {
		t.Errorf("US-1's work on main: %q", got)
	}
}
