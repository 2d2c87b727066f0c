package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// git's stash is one for every worktree of a repository (refs/stash), so
// in a parallel run one agent's `git stash pop` took the newest entry -
// another worker's - whenever that worker had stashed since: each story
// was committed with the other's work, ticked done, and merged. The two
// agents here stash and pop in the order that did it (A stashes, B
// stashes, A pops, B pops), each waiting for the other's mark, so the test
// does not depend on timing. Each agent now sees only the stash entries
// made on its own branch: both pop their own work.
func TestParallelAgentsPopTheirOwnStash(t *testing.T) {
	dir := newRepo(t)
	marks := t.TempDir()
	aheadPlan(t, dir, 2)
	agent := filepath.Join(marks, "agent.sh")
	writeFile(t, agent, `cat > /dev/null
M=`+marks+`
await() {
  i=0
  until [ -e "$M/$1" ]; do
    i=$((i + 1)); [ $i -gt 1200 ] && { echo "never saw $1" > "$M/fail-$WIGGUM_STORY"; exit 1; }
    sleep 0.05
  done
}
echo "$WIGGUM_STORY" > "work-$WIGGUM_STORY.txt"
case $WIGGUM_STORY in
US-1)
  git stash -q -u || exit 1
  touch "$M/stashed-1"
  await stashed-2
  git stash pop -q || { echo "pop failed" > "$M/fail-$WIGGUM_STORY"; exit 1; }
  git stash list > "$M/list-1"
  touch "$M/popped-1" ;;
US-2)
  await stashed-1
  git stash -q -u || exit 1
  touch "$M/stashed-2"
  await popped-1
  git stash pop -q || { echo "pop failed" > "$M/fail-$WIGGUM_STORY"; exit 1; }
  git stash list > "$M/list-2" ;;
esac
ls work-*.txt > "$M/files-$WIGGUM_STORY"
`)
	r := wiggum(t, dir, nil, "run", "--plan", "plan.md", "--workers", "2", "--retries", "0", "--agent-cmd", "sh "+agent)
	for _, s := range []string{"US-1", "US-2"} {
		if f, err := os.ReadFile(filepath.Join(marks, "fail-"+s)); err == nil {
			t.Errorf("%s: %s", s, f)
		}
		if f, err := os.ReadFile(filepath.Join(marks, "files-"+s)); err != nil || strings.TrimSpace(string(f)) != "work-"+s+".txt" {
			t.Errorf("%s's agent popped into its tree: %q (%v)", s, f, err)
		}
	}
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, s := range []string{"US-1", "US-2"} {
		log := mustRun(t, dir, "git", "log", "--format=%s", "--", "work-"+s+".txt")
		if !strings.Contains(log, s+": story") || strings.Count(strings.TrimSpace(log), "\n") != 0 {
			t.Errorf("work-%s.txt came with another story's commit:\n%s", s, log)
		}
	}
	// While US-1's agent popped, US-2's entry was the stash's newest; its
	// agent's list shows only its own entries (none left).
	if l, _ := os.ReadFile(filepath.Join(marks, "list-1")); len(l) != 0 {
		t.Errorf("US-1's agent sees another worker's stash entry:\n%s", l)
	}
	if list := mustRun(t, dir, "git", "stash", "list"); list != "" {
		t.Errorf("the stash is not empty:\n%s", list)
	}
}
