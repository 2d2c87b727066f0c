package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/wiggum-dev/wiggum/internal/killpoint"
)

// costAgent is the scripted agent of the parallel crash-record tests: it
// counts its invocations per story outside the repository, writes the
// story's work file (odd stories commit it themselves) and reports a cost
// of $0.25 as Claude's stream does. A story listed in $MARKS/hang hangs
// before it reports anything, one listed in $MARKS/linger after it
// reported its cost - each until $MARKS/resumed exists; the others start
// their work once every story in $MARKS/hang hangs.
const costAgent = `cat > /dev/null
S=$WIGGUM_STORY
echo "$S" >> "$MARKS/invocations"
for h in $(cat "$MARKS/hang" 2>/dev/null); do
  [ "$h" = "$S" ] && continue
  while [ ! -e "$MARKS/hanging-$h" ] && [ ! -e "$MARKS/resumed" ]; do sleep 0.05; done
done
n=${S#US-}
echo "work of $S" > "work-$S.txt"
if [ $((n % 2)) -eq 1 ]; then
  git add "work-$S.txt" && git commit -q -m "agent: $S"
fi
if grep -qx "$S" "$MARKS/hang" 2>/dev/null && [ ! -e "$MARKS/resumed" ]; then
  touch "$MARKS/hanging-$S"; sleep $SLEEP
fi
echo '{"type":"result","subtype":"success","is_error":false,"result":"ok","total_cost_usd":0.25}'
if grep -qx "$S" "$MARKS/linger" 2>/dev/null && [ ! -e "$MARKS/resumed" ]; then
  sleep $SLEEP
fi
`

// statusSpent reads the run's spending from wiggum status --json.
func statusSpent(t *testing.T, dir string) float64 {
	t.Helper()
	st := wiggum(t, dir, nil, "status", "--json")
	var s struct {
		Resume *struct {
			Spent float64 `json:"spent_usd"`
		} `json:"resume"`
	}
	if st.code != 0 || json.Unmarshal([]byte(st.stdout), &s) != nil || s.Resume == nil {
		t.Fatalf("status after the kill: exit %d\n%s%s", st.code, st.stdout, st.stderr)
	}
	return s.Resume.Spent
}

// TestParallelResumeKeepsCrashRecords SIGKILLs a 2-worker run over 2
// stories at each kill point of one story's attempt after its agent
// reported its cost, while the other story's agent hangs having reported
// nothing; then resumes it. The cost the killed attempt's agent reported
// is in the run's spending at once (wiggum status) and after the resume
// (the run's last line), whether the attempt is redone or not. An attempt
// whose checks had passed (attempt-passed, attempt-committed) is landed,
// not given to the agent again, when its worktree is as the attempt left
// it: the agent committed its work itself (odd stories), or the loop's
// commit of it was made, or - an even story killed before that commit -
// its work is uncommitted in the worktree, and the resumed run commits it
// as the killed run was about to.
// Two cases kill the resumed run too, while it lands such a story: the
// run after it lands it, still without the agent, and counts its cost
// once.
func TestParallelResumeKeepsCrashRecords(t *testing.T) {
	cases := []struct {
		window  string
		story   string // the story reaching window; the other one hangs
		linger  bool   // its agent keeps running after it reported its cost
		landed  bool   // the resumed run lands it without the agent
		wantRun int    // its agent runs in all
		then    string // a kill point for the first resumed run, or ""
	}{
		{"agent-reported", "US-1", true, false, 2, ""},
		{"agent-reported", "US-2", true, false, 2, ""},
		{"agent-exited", "US-1", false, false, 2, ""},
		{"attempt-passed", "US-1", false, true, 1, ""},
		{"attempt-passed", "US-2", false, true, 1, ""},
		{"attempt-committed", "US-1", false, true, 1, ""},
		{"attempt-committed", "US-2", false, true, 1, ""},
		{"attempt-committed", "US-2", false, true, 1, "merge-intent"},
		{"attempt-passed", "US-1", false, true, 1, "land-ticked"},
	}
	for _, c := range cases {
		name := c.window + "/" + c.story
		if c.then != "" {
			name += "+" + c.then
		}
		t.Run(name, func(t *testing.T) {
			dir, marks, agent := scriptRepo(t, "", 2, costAgent)
			args := []string{"run", "--plan", "plan.md", "--workers", "2", "--agent-cmd", "sh " + agent, "--test-cmd", "true", "--retries", "0"}
			other := "US-2"
			if c.story == "US-2" {
				other = "US-1"
			}
			writeFile(t, filepath.Join(marks, "hang"), other+"\n")
			if c.linger {
				writeFile(t, filepath.Join(marks, "linger"), c.story+"\n")
			}
			env := []string{"MARKS=" + marks, "SLEEP=" + uniqueSleep()}
			p := startWiggum(t, dir, append(env, killpoint.Env+"="+c.window), args...)
			if code := p.wait(t); code != 128+int(syscall.SIGKILL) {
				t.Fatalf("the run exited %d, never reaching %s\n%s%s", code, c.window, p.stdout(), p.stderr())
			}
			before := map[string]bool{}
			for _, commit := range workCommits(t, dir) {
				before[commit] = true
			}
			if spent := statusSpent(t, dir); spent != 0.25 {
				t.Errorf("wiggum status says the killed run spent $%.2f; its agent for %s reported $0.25", spent, c.story)
			}
			firstResumed := ""
			if c.then != "" {
				// The other story hangs again, and is killed again.
				p := startWiggum(t, dir, append(env, killpoint.Env+"="+c.then), args...)
				if code := p.wait(t); code != 128+int(syscall.SIGKILL) {
					t.Fatalf("the resumed run exited %d, never reaching %s\n%s%s", code, c.then, p.stdout(), p.stderr())
				}
				for _, commit := range workCommits(t, dir) {
					before[commit] = true
				}
				firstResumed = p.stdout()
			}
			writeFile(t, filepath.Join(marks, "resumed"), "")
			r := resumeOK(t, dir, env, args, 2, before, false)
			if c.then == "" {
				firstResumed = r.stdout
			}

			ran := invocations(t, marks)
			if ran[c.story] != c.wantRun || ran[other] < 2 || c.then == "" && ran[other] != 2 {
				t.Errorf("agent runs %v; want %s %d, %s 2 (one hung, killed; one more per resumed run killed)\n%s", ran, c.story, c.wantRun, other, r.stdout)
			}
			said := strings.Contains(firstResumed, "landing "+c.story+": it finished before the crash")
			if said != c.landed {
				t.Errorf("the resumed run says it lands %s finished before the crash: %v, want %v\n%s", c.story, said, c.landed, r.stdout)
			}
			// Every agent that reported its cost counts once: the killed
			// one's report, the other story's run after the last resume
			// (it hung, reporting nothing, in every run killed), and the
			// story's second run when it is redone.
			cents := 25 * (1 + 1 + c.wantRun - 1)
			if want := fmt.Sprintf("spent $%d.%02d", cents/100, cents%100); !strings.Contains(r.stdout, want) {
				t.Errorf("the resumed run did not say %q:\n%s", want, r.stdout)
			}
		})
	}
}

// TestParallelBudgetStopSaysFinalSpending: the reason a parallel run gives
// for its --max-cost stop says what the run spent in the end, with the
// attempts that were running when the budget was reached and finished
// after, as its summary does, and counts the stories open once. (Before,
// it gave the figures of the moment the budget was reached: "the run spent
// $1.50" after "spent $2.00", and "N story(ies) left" beside "M open".)
func TestParallelBudgetStopSaysFinalSpending(t *testing.T) {
	// US-1..US-3 go first, together. US-3 ends once a fourth story has
	// started - whichever: a worker may take US-5 before US-4, whose
	// worktree is still being made (a wait on US-4 hung CI for 27
	// minutes) - and the later ones end once the budget is reached, so
	// two attempts are running then. Each wait gives up after 60 s,
	// failing the story (and the test) rather than hanging.
	dir, marks, agent := scriptRepo(t, "", 7, `cat > /dev/null
S=$WIGGUM_STORY
touch "$MARKS/started-$S"
n=0
case $S in
US-1|US-2) ;;
US-3) until [ "$(ls "$MARKS" | grep -c '^started-')" -ge 4 ]; do sleep 0.05; n=$((n+1)); [ $n -lt 1200 ] || exit 1; done ;;
*) until grep -q budget_reached ../../events.jsonl 2>/dev/null; do sleep 0.05; n=$((n+1)); [ $n -lt 1200 ] || exit 1; done ;;
esac
echo '{"type":"result","subtype":"success","is_error":false,"result":"ok","total_cost_usd":0.5}'
`)
	res := wiggum(t, dir, []string{"MARKS=" + marks}, "run", "--plan", "plan.md", "--workers", "3", "-q", "--max-cost", "1.2", "--agent-cmd", "sh "+agent)
	out := res.stdout + res.stderr
	if res.code != 5 {
		t.Fatalf("exit %d, want 5\n%s", res.code, out)
	}
	summary := regexp.MustCompile(`\d+ open; spent (\$[0-9.]+)`).FindStringSubmatch(out)
	if summary == nil {
		t.Fatalf("no summary with the spending:\n%s", out)
	}
	if want := "the run spent " + summary[1] + ", reaching --max-cost $1.20"; !strings.Contains(res.stderr, want) {
		t.Errorf("the stop does not say %q:\n%s", want, out)
	}
	if strings.Contains(res.stderr, "left;") {
		t.Errorf("the stop counts the stories left twice:\n%s", out)
	}
	st := wiggum(t, dir, nil, "status")
	if strings.Contains(st.stdout, "stopped: stopped") || strings.Contains(st.stdout, "it stopped: stopped:") {
		t.Errorf("status says stopped twice:\n%s", st.stdout)
	}
}
