package e2e

import (
	"strings"
	"testing"
)

// escapeAgent removes its worktree's .git (US-1 only), then commits: with
// the .git file gone, git's search for a repository walks up out of the
// worktree, which lies inside the main tree.
const escapeAgent = `cat > /dev/null
if [ "$WIGGUM_STORY" = US-1 ]; then
  rm -rf .git
  git commit -q --allow-empty -m "escaped from $WIGGUM_STORY"
fi
echo "work of $WIGGUM_STORY" > "f-$WIGGUM_STORY.txt"
`

// TestWorktreeWithoutGitNeverReachesMain: an agent that removed its
// worktree's .git cannot commit to, or reset, the main repository; the
// story fails, the other story lands, and main keeps every commit.
func TestWorktreeWithoutGitNeverReachesMain(t *testing.T) {
	dir, _, agent := scriptRepo(t, "", 2, escapeAgent)
	before := mustRun(t, dir, "git", "rev-parse", "HEAD")
	res := wiggum(t, dir, nil, "run", "--plan", "plan.md", "--workers", "2", "--agent-cmd", "sh "+agent, "--retries", "0")
	if res.code == 0 {
		t.Fatalf("the run passed a story whose worktree lost its .git\n%s%s", res.stdout, res.stderr)
	}
	log := mustRun(t, dir, "git", "log", "--format=%H %s", "main")
	if strings.Contains(log, "escaped") {
		t.Fatalf("the agent's commit reached main:\n%s", log)
	}
	if !strings.Contains(log, strings.TrimSpace(before)) {
		t.Fatalf("main lost %s (reset by the agent?):\n%s", before, log)
	}
	if !strings.Contains(log, "US-2: mark done") {
		t.Errorf("US-2 did not land:\n%s\n%s%s", log, res.stdout, res.stderr)
	}
	if !strings.Contains(res.stderr, "the worktree of US-1") || !strings.Contains(res.stderr, "has lost its .git") {
		t.Errorf("the run does not say the worktree of US-1 lost its .git:\n%s", res.stderr)
	}
	if st := mustRun(t, dir, "git", "status", "--porcelain"); strings.TrimSpace(st) != "" {
		t.Errorf("the main tree is dirty after the run:\n%s", st)
	}
	t.Logf("exit %d\n%s%s", res.code, res.stdout, res.stderr)
}
