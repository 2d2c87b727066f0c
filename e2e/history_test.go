package e2e

import (
	"strings"
	"syscall"
	"testing"

	"github.com/wiggum-dev/wiggum/internal/killpoint"
)

// A run SIGKILLed while its agent had amended the commit made before its
// attempt - the last story's - could not be resumed: the checkpoint was no
// longer an ancestor of HEAD, so the rollback of the interrupted attempt
// was refused and every later run stopped there. The resumed run now saves
// the rewrite, puts the earlier commit back and rolls the attempt back;
// every commit made before the kill is on main or in a backup, and each
// story lands in a commit of its own. With the commit journal on, as a
// real user's repository has it.
func TestResumeAfterAnAttemptThatAmended(t *testing.T) {
	dir, marks, agent := scriptRepo(t, "", 2, `S=$WIGGUM_STORY
cat > /dev/null
echo "$S" >> "$MARKS/invocations"
echo "work of $S" > "work-$S.txt"
if [ "$S" = US-2 ] && [ ! -e "$MARKS/amended" ]; then
  touch "$MARKS/amended"
  git add -A && git commit -q --amend -m "amended by US-2"
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
	made := map[string]bool{}
	for _, c := range workCommits(t, dir) {
		made[c] = true
	}
	r := resumeOK(t, dir, env, args, 2, made, true)
	if !strings.Contains(r.stdout, "US-2: the agent rewrote 1 commit(s) of main made before its attempt; they are back as they were, and its rewrite is saved in refs/wiggum/backup/") {
		t.Errorf("the resumed run does not say what it put back:\n%s", r.stdout)
	}
	subjects := mustRun(t, dir, "git", "log", "--format=%s", "main")
	if !strings.HasPrefix(subjects, "US-2: story 2\nUS-1: story 1\nplan\ninit\n") {
		t.Errorf("main's history:\n%s", subjects)
	}
	if !inSomeBackup(t, dir, "work-US-2.txt") {
		t.Error("the amended commit is in no backup")
	}
}
