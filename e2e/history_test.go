package e2e

import (
	"strings"
	"syscall"
	"testing"

	"github.com/wiggum-dev/wiggum/internal/killpoint"
)

// A run SIGKILLed while its agent had amended the commit made before its
// attempt - the last story's - leaves a checkpoint that is no longer an
// ancestor of HEAD: the resumed run's rollback of the interrupted attempt
// is refused and changes nothing (the contract's rule), and every later
// run stopped there with no word on what to do. The refusal now says what
// the agent did and how to go on; done as it says, the next run resumes,
// the agent's rewrite and its files kept where the person put them, and
// each story lands in a commit of its own.
func TestResumeAfterAnAttemptThatAmended(t *testing.T) {
	dir, marks, agent := scriptRepo(t, "", 2, `S=$WIGGUM_STORY
cat > /dev/null
echo "$S" >> "$MARKS/invocations"
echo "work of $S" > "work-$S.txt"
if [ "$S" = US-2 ] && [ ! -e "$MARKS/amended" ]; then
  touch "$MARKS/amended"
  git add -A && git commit -q --amend -m "amended by US-2"
  echo "not committed" > loose.txt
  echo '{"type":"result","subtype":"success","is_error":false,"result":"ok","total_cost_usd":0.25}'
  sleep 30
fi
`)
	mustRun(t, dir, wiggumBin, "install", "--git")
	args := []string{"run", "--plan", "plan.md", "--agent-cmd", "sh " + agent, "--retries", "0"}
	env := []string{"MARKS=" + marks}
	p := startWiggum(t, dir, append(env, killpoint.Env+"=agent-reported"), args...)
	if code := p.wait(t); code != 128+int(syscall.SIGKILL) {
		t.Fatalf("the run exited %d, never reaching agent-reported\n%s%s", code, p.stdout(), p.stderr())
	}
	amended := strings.TrimSpace(mustRun(t, dir, "git", "rev-parse", "HEAD"))
	r := wiggum(t, dir, env, args...)
	if r.code != 4 || !strings.Contains(r.stderr, "no longer an ancestor of HEAD") || !strings.Contains(r.stderr, "To go on, keep what it did (git branch wiggum-rewrite HEAD; git stash -u") {
		t.Fatalf("resumed run: exit %d, want 4 with what to do\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if head := strings.TrimSpace(mustRun(t, dir, "git", "rev-parse", "HEAD")); head != amended {
		t.Fatalf("the refused rollback moved HEAD from %s to %s", amended, head)
	}
	// As the refusal says.
	i := strings.Index(r.stderr, "git reset --hard ")
	cp := strings.Fields(r.stderr[i+len("git reset --hard "):])[0]
	cp = strings.TrimRight(cp, "),.")
	mustRun(t, dir, "git", "branch", "wiggum-rewrite", "HEAD")
	mustRun(t, dir, "git", "stash", "-q", "-u")
	mustRun(t, dir, "git", "reset", "-q", "--hard", cp)
	r = wiggum(t, dir, env, args...)
	if r.code != 0 {
		t.Fatalf("the run after the fix: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	subjects := mustRun(t, dir, "git", "log", "--format=%s", "main")
	if !strings.HasPrefix(subjects, "US-2: story 2\nUS-1: story 1\nplan\ninit\n") {
		t.Errorf("main's history:\n%s", subjects)
	}
	if log := mustRun(t, dir, "git", "log", "-1", "--format=%s", "wiggum-rewrite"); strings.TrimSpace(log) != "amended by US-2" {
		t.Errorf("the rewrite is not kept: %s", log)
	}
	if show := mustRun(t, dir, "git", "stash", "show", "--include-untracked", "--name-only"); !strings.Contains(show, "loose.txt") {
		t.Errorf("the attempt's uncommitted file is not in the stash:\n%s", show)
	}
}

// An --agent-cmd agent's git is wiggum's git shim too: its commit made
// with git's hooks turned off (as in Gemini CLI's shell) is journaled by
// the shim, so its failed attempt is rolled back - saved - and retried,
// where it stopped the run with exit 4 before.
func TestHooklessCommitOfACustomAgentIsRolledBack(t *testing.T) {
	dir, marks, agent := scriptRepo(t, "", 1, `cat > /dev/null
echo "work" > work.txt
git add work.txt
git -c core.hooksPath=/dev/null commit -q -m "agent's commit, hooks off"
if [ ! -e "$MARKS/failed" ]; then touch "$MARKS/failed"; exit 1; fi
`)
	mustRun(t, dir, wiggumBin, "install", "--git")
	r := wiggum(t, dir, []string{"MARKS=" + marks}, "run", "--plan", "plan.md", "--agent-cmd", "sh "+agent, "--retries", "1")
	if r.code != 0 || !strings.Contains(r.stdout, "rolled back; the attempt is saved in refs/wiggum/backup/") {
		t.Fatalf("exit %d, want 0 with the failed attempt rolled back\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if log := mustRun(t, dir, "git", "log", "--format=%s", "main"); strings.Count(log, "agent's commit, hooks off") != 1 {
		t.Errorf("main holds the agent's commit other than once (the retry's):\n%s", log)
	}
	if !inSomeBackup(t, dir, "work.txt") {
		t.Error("the failed attempt's commit is in no backup")
	}
}
