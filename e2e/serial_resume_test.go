package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/wiggum-dev/wiggum/internal/killpoint"
)

// serialAgent is the scripted agent of the serial kill-window tests: it
// counts its invocations per story outside the repository, writes the
// story's work file and reports a cost of $0.25 as Claude's stream does;
// odd stories commit their work themselves. With $FAIL_ONCE set, US-1's
// first attempt fails after its work (and its commit). With $HOOKLESS set
// it commits with git's hooks turned off, as Gemini CLI's shell does, and
// with git by its full path ($REAL_GIT), round wiggum's git shim (which
// would journal it): nothing journals the commit.
const serialAgent = `S=$WIGGUM_STORY
cat > "$MARKS/prompt-$S"
echo "$S" >> "$MARKS/invocations"
n=${S#US-}
echo "work of $S" > "work-$S.txt"
if [ $((n % 2)) -eq 1 ]; then
  git add "work-$S.txt"
  if [ -n "$HOOKLESS" ]; then "$REAL_GIT" -c core.hooksPath=/dev/null commit -q -m "agent: $S"; else git commit -q -m "agent: $S"; fi
fi
if [ -n "$FAIL_ONCE" ] && [ "$S" = US-1 ] && [ ! -e "$MARKS/failed" ]; then
  touch "$MARKS/failed"; echo BROKEN-OUTPUT; exit 1
fi
echo '{"type":"result","subtype":"success","is_error":false,"result":"ok","total_cost_usd":0.25}'
`

// serialRepo makes a repository with a plan of n stories and the serial
// scripted agent; it returns the repository, the marks directory and the
// run's arguments.
func serialRepo(t *testing.T, n int) (dir, marks string, args []string) {
	t.Helper()
	dir, marks, agent := scriptRepo(t, "# Plan\n\n", n, serialAgent)
	return dir, marks, []string{"run", "--plan", "plan.md", "--agent-cmd", "sh " + agent, "--test-cmd", "true", "--retries", "0"}
}

// serialWindows are the kill points of a serial iteration, in the order a
// story passes them, and whether the story's attempt had finished there -
// its agent exited 0 and its checks passed - so the resumed run must
// commit and tick it without running the agent again. Before the checks
// pass, the attempt is unfinished: rolled back (saved first) and redone.
var serialWindows = []struct {
	name     string
	finished bool
}{
	{"agent-reported", false},   // the agent reported its cost; still running
	{"agent-exited", false},     // the agent exited 0; --test-cmd not run yet
	{"attempt-passed", true},    // the checks passed; nothing ticked yet
	{"serial-ticked", true},     // the plan ticked, nothing staged
	{"commit-staged", true},     // work and tick staged, not committed
	{"attempt-committed", true}, // committed; the attempt's end not recorded
	{"attempt-done", true},      // its end recorded; nothing left to do
}

// TestSerialResumeAtEachKillWindow SIGKILLs a serial run over 3 stories at
// each kill point of its first story's iteration, then resumes it; a few
// cases kill the resumed run too, while it finishes what the first one
// left. Odd stories are committed by the agent itself. Variants: the plan
// dirty before the run (--allow-dirty: its ticks are never committed, the
// work is committed alone); the commit journal on (wiggum's post-commit
// hook attributes the agent's commits to its session, so the rollback of
// an unfinished attempt is proven safe); and the journal on with an agent
// that commits with git hooks off, as Gemini CLI does, whose commits the
// journal never sees. For every case: the resumed run finishes every
// story, commits each story's tick once and its work once, loses no
// commit made before a kill (each is on main or in a backup), runs the
// agent again only for a story whose attempt had not finished, and says
// what it did with the killed attempt.
func TestSerialResumeAtEachKillWindow(t *testing.T) {
	const stories = 3
	type tc struct {
		kills    []string
		finished bool
		mode     string // "", "dirty", "journal", "hookless", "moved", "fail"
	}
	var cases []tc
	for _, w := range serialWindows {
		cases = append(cases, tc{kills: []string{w.name}, finished: w.finished})
	}
	cases = append(cases,
		tc{kills: []string{"attempt-passed", "serial-ticked"}, finished: true},
		tc{kills: []string{"serial-ticked", "commit-staged"}, finished: true},
		tc{kills: []string{"agent-exited", "agent-exited"}, finished: false},
		tc{kills: []string{"agent-reported", "agent-reported"}, finished: false},
		tc{kills: []string{"attempt-passed"}, finished: true, mode: "dirty"},
		tc{kills: []string{"serial-work-committed"}, finished: true, mode: "dirty"},
		tc{kills: []string{"serial-ticked", "serial-work-committed"}, finished: true, mode: "dirty"},
		tc{kills: []string{"agent-exited"}, finished: false, mode: "journal"},
		tc{kills: []string{"serial-ticked"}, finished: true, mode: "journal"},
		tc{kills: []string{"attempt-passed"}, finished: true, mode: "hookless"},
		tc{kills: []string{"commit-staged"}, finished: true, mode: "hookless"},
		// Someone commits after the kill: the finished attempt is not
		// committed on top of that blindly; it is rolled back like an
		// unfinished one, saved first, with the reason.
		tc{kills: []string{"attempt-passed"}, finished: false, mode: "moved"},
		// US-1's first attempt fails, and the kill comes before or after
		// its rollback: the resumed run counts the failure (--retries 1:
		// the next attempt is the last) and gives its output to the next
		// prompt, as the killed run would have.
		tc{kills: []string{"attempt-failed"}, finished: false, mode: "fail"},
		tc{kills: []string{"attempt-rolled-back"}, finished: false, mode: "fail"},
	)
	for _, c := range cases {
		name := strings.Join(c.kills, "+")
		if c.mode != "" {
			name = c.mode + "/" + name
		}
		t.Run(name, func(t *testing.T) {
			dir, marks, args := serialRepo(t, stories)
			env := []string{"MARKS=" + marks}
			switch c.mode {
			case "dirty":
				// An edit to the plan before the run, which the run must
				// never commit: the ticks stay in the file with it.
				writeFile(t, filepath.Join(dir, "plan.md"), readFile(t, filepath.Join(dir, "plan.md"))+"\nNotes: the user's own.\n")
				args = append(args, "--allow-dirty")
			case "journal":
				mustRun(t, dir, wiggumBin, "install", "--git")
			case "hookless":
				mustRun(t, dir, wiggumBin, "install", "--git")
				env = append(env, "HOOKLESS=1")
			case "fail":
				env = append(env, "FAIL_ONCE=1")
				args = append(args, "--retries", "1")
			}
			before := map[string]bool{}
			for i, window := range c.kills {
				p := startWiggum(t, dir, append(env, killpoint.Env+"="+window), args...)
				if code := p.wait(t); code != 128+int(syscall.SIGKILL) {
					t.Fatalf("run %d exited %d, never reaching %s\n%s%s", i+1, code, window, p.stdout(), p.stderr())
				}
				for _, c := range workCommits(t, dir) {
					before[c] = true
				}
			}
			// wiggum status says which story the next run finishes
			// without the agent.
			atKill := recordedDone(t, dir)
			if want := c.finished || c.mode == "moved"; slices.Contains(atKill, "US-1") != want {
				t.Errorf("status after the kill lists %v as finished or done; US-1 should be among them: %v", atKill, want)
			}
			if c.mode == "moved" {
				mustRun(t, dir, "git", "commit", "-q", "--allow-empty", "-m", "someone else")
				before[strings.TrimSpace(mustRun(t, dir, "git", "rev-parse", "HEAD"))] = true
			}
			ranBefore := invocations(t, marks)["US-1"]
			r := resumeOK(t, dir, env, args, stories, before, true)
			checkSerialResumed(t, dir, stories, c.mode == "dirty")

			ran := invocations(t, marks)
			switch {
			case c.finished && ran["US-1"] != 1:
				t.Errorf("US-1 finished before the kill and was given to the agent %d time(s) in all, want 1\n%s", ran["US-1"], r.stdout)
			case !c.finished && ran["US-1"] != ranBefore+1:
				t.Errorf("US-1 was unfinished at the kill: the agent ran it %d time(s) after the resume, want 1\n%s", ran["US-1"]-ranBefore, r.stdout)
			}
			for i := 2; i <= stories; i++ {
				if id := fmt.Sprintf("US-%d", i); ran[id] != 1 {
					t.Errorf("%s given to the agent %d time(s), want 1", id, ran[id])
				}
			}
			// Every attempt whose agent finished, before the kill or on
			// resume, counts in the run's spending: a finished attempt's
			// cost from its pass record, also when it is rolled back, and
			// an attempt killed while its agent still ran after reporting
			// its cost (agent-reported) or while its checks ran
			// (agent-exited) from its usage record - each such kill adds
			// the $0.25 its agent reported to the three stories' $0.75.
			cents := 75
			if c.mode == "moved" {
				cents += 25
			}
			for _, k := range c.kills {
				if k == "agent-exited" || k == "agent-reported" {
					cents += 25
				}
			}
			spent := fmt.Sprintf("spent $%d.%02d", cents/100, cents%100)
			if !strings.Contains(r.stdout, spent) {
				t.Errorf("the resumed run did not say %q:\n%s", spent, r.stdout)
			}
			last := c.kills[len(c.kills)-1]
			finishedMsg := "US-1: its attempt had finished before the crash (the agent exited 0 and its checks passed)"
			rolledMsg := "US-1: rolled back the attempt a crash interrupted (its agent had not finished or its checks had not passed); its work is saved in refs/wiggum/backup/"
			switch {
			case c.mode == "moved":
				rolledMsg = "US-1: rolled back the attempt a crash interrupted (it had finished, but HEAD moved since its checks passed (to "
			case last == "attempt-failed":
				rolledMsg = "US-1: rolled back the attempt a crash interrupted (it had failed: the agent exited with status 1); its work is saved in refs/wiggum/backup/"
			case last == "attempt-rolled-back":
				rolledMsg = "US-1: its attempt had failed (the agent exited with status 1) and was rolled back; counted as a failed attempt"
			}
			if c.mode == "fail" {
				prompt := readFile(t, filepath.Join(marks, "prompt-US-1"))
				if !strings.Contains(r.stdout, "US-1: story 1 (attempt 2 of 2)") || !strings.Contains(prompt, "BROKEN-OUTPUT") {
					t.Errorf("the failure before the kill is not counted, or not in the next prompt:\n%s\nprompt:\n%s", r.stdout, prompt)
				}
			}
			switch {
			case last == "attempt-done":
				if strings.Contains(r.stdout, finishedMsg) || strings.Contains(r.stdout, "rolled back") {
					t.Errorf("the resumed run redid or rolled back a story whose end was recorded:\n%s", r.stdout)
				}
			case c.finished:
				if !strings.Contains(r.stdout, finishedMsg) || strings.Contains(r.stdout, "rolled back") {
					t.Errorf("the resumed run does not say it committed US-1's finished attempt (or rolled it back):\n%s", r.stdout)
				}
			default:
				if !strings.Contains(r.stdout, rolledMsg) {
					t.Errorf("the resumed run does not say it rolled back US-1's unfinished attempt:\n%s", r.stdout)
				}
				// The killed attempt's file is saved.
				if !inSomeBackup(t, dir, "work-US-1.txt") {
					t.Error("the killed attempt's work-US-1.txt is in no backup")
				}
			}
		})
	}
}

// checkSerialResumed verifies what a resumed serial run left on main: one
// commit of each story's own besides the agent's commit of an odd story
// (none when that left nothing: the plan dirty before the run),
// no separate tick commit unless the plan was dirty before the run (then
// every tick stays in the file, uncommitted, with the user's edit), each
// story's work in HEAD, and nothing else uncommitted.
func checkSerialResumed(t *testing.T, dir string, n int, dirtyPlan bool) {
	t.Helper()
	subjects := strings.Split(strings.TrimSpace(mustRun(t, dir, "git", "log", "--format=%s", "main")), "\n")
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("US-%d", i)
		own, ticks, agent := 0, 0, 0
		for _, s := range subjects {
			switch s {
			case fmt.Sprintf("%s: story %d", id, i):
				own++
			case id + ": mark done":
				ticks++
			case "agent: " + id:
				agent++
			}
		}
		// An odd story's agent commits its work itself; with the plan
		// left out of every commit, that leaves wiggum nothing to commit.
		wantAgent, wantOwn := i%2, 1
		if dirtyPlan && wantAgent == 1 {
			wantOwn = 0
		}
		if own != wantOwn || ticks != 0 || agent != wantAgent {
			t.Errorf("%s: %d commit(s) of its own, %d tick commit(s), %d agent commit(s) on main; want %d, 0, %d\n%s", id, own, ticks, agent, wantOwn, wantAgent, strings.Join(subjects, "\n"))
		}
		if run(t, dir, nil, "git", "cat-file", "-e", "HEAD:work-"+id+".txt").code != 0 {
			t.Errorf("%s: its work is not committed", id)
		}
		committed := mustRun(t, dir, "git", "show", "HEAD:plan.md")
		if ticked := strings.Contains(committed, "- [x] "+id+":"); ticked == dirtyPlan {
			t.Errorf("%s: ticked in HEAD's plan: %v, want %v\n%s", id, ticked, !dirtyPlan, committed)
		}
	}
	status := mustRun(t, dir, "git", "status", "--porcelain")
	want := ""
	if dirtyPlan {
		want = " M plan.md\n"
		if !strings.Contains(readFile(t, filepath.Join(dir, "plan.md")), "Notes: the user's own.") {
			t.Error("the user's own edit to the plan is gone")
		}
	}
	if status != want {
		t.Errorf("git status after the resumed run:\n%s\nwant:\n%s", status, want)
	}
}

// inSomeBackup reports whether one backup ref holds every one of paths.
func inSomeBackup(t *testing.T, dir string, paths ...string) bool {
	t.Helper()
	for _, ref := range strings.Fields(mustRun(t, dir, "git", "for-each-ref", "--format=%(refname)", "refs/wiggum/backup/")) {
		all := true
		for _, p := range paths {
			all = all && run(t, dir, nil, "git", "cat-file", "-e", ref+":"+p).code == 0
		}
		if all {
			return true
		}
	}
	return false
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestSerialHooklessAgentCommits: with the commit journal on, an agent
// that commits with git's hooks turned off (Gemini CLI's shell does) and
// by git's full path, round wiggum's git shim, makes
// commits the journal never sees. A finished story is still committed and
// ticked once, the agent's commit under wiggum's. An unfinished one -
// failed, or cut short by a SIGKILL - cannot be rolled back on wiggum's
// say-so: its commit is nobody's provable own (DESIGN.md, failure 2), so
// the run stops with exit 4, changes nothing, and says what to do; after
// `wiggum rollback --discard-foreign` (which saves it) the next run redoes
// the story (a failed attempt counts: with a retry), and the commit is in
// a backup.
func TestSerialHooklessAgentCommits(t *testing.T) {
	for _, how := range []string{"failed", "killed"} {
		t.Run(how, func(t *testing.T) {
			dir, marks, args := serialRepo(t, 3)
			mustRun(t, dir, wiggumBin, "install", "--git")
			// US-1 finishes; US-3 (odd: it commits its work itself) fails
			// or hangs until killed, once.
			agent := filepath.Join(marks, "agent.sh")
			writeFile(t, agent, serialAgent+`
if [ "$S" = US-3 ] && [ ! -e "$MARKS/again" ]; then
  touch "$MARKS/again"
  case "$HOW" in
  failed) exit 1 ;;
  killed) touch "$MARKS/hanging"; sleep $SLEEP ;;
  esac
fi
`)
			env := []string{"MARKS=" + marks, "HOOKLESS=1", "HOW=" + how, "SLEEP=" + uniqueSleep()}
			var first result
			if how == "failed" {
				first = wiggum(t, dir, env, args...)
			} else {
				p := startWiggum(t, dir, env, args...)
				waitFile(t, filepath.Join(marks, "hanging"))
				_ = p.cmd.Process.Signal(syscall.SIGKILL)
				p.wait(t)
				first = wiggum(t, dir, env, args...)
			}
			if first.code != 4 {
				t.Fatalf("exit %d, want 4 (the rollback refused)\n%s\n%s", first.code, first.stdout, first.stderr)
			}
			agentCommit := strings.TrimSpace(mustRun(t, dir, "git", "rev-parse", "HEAD"))
			if subject := mustRun(t, dir, "git", "log", "-1", "--format=%s"); subject != "agent: US-3\n" {
				t.Fatalf("HEAD is %q, want the agent's own commit, kept", subject)
			}
			for _, want := range []string{"is not in the commit journal", "Gemini CLI", "wiggum rollback --discard-foreign"} {
				if !strings.Contains(first.stderr, want) {
					t.Errorf("the refusal does not say %q:\n%s", want, first.stderr)
				}
			}
			// US-1 and US-2 were finished: committed with their ticks.
			for _, s := range []string{"US-1: story 1", "US-2: story 2", "agent: US-1"} {
				if !strings.Contains(mustRun(t, dir, "git", "log", "--format=%s"), s+"\n") {
					t.Errorf("no commit %q", s)
				}
			}
			rb := wiggum(t, dir, nil, "rollback", "--discard-foreign")
			if rb.code != 0 {
				t.Fatalf("rollback --discard-foreign: exit %d\n%s%s", rb.code, rb.stdout, rb.stderr)
			}
			// The refused attempt stays in the journal: a failed one
			// counts, as in any resumed run, so the story is redone
			// with a retry allowed.
			again := slices.Clone(args)
			if how == "failed" {
				again[slices.Index(again, "--retries")+1] = "1"
			}
			r := wiggum(t, dir, env, again...)
			if r.code != 0 {
				t.Fatalf("the run after the rollback: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			checkResumed(t, dir, 3, []string{agentCommit}, true)
			checkSerialResumed(t, dir, 3, false)
			// Saved by the rollback (the redone attempt may make the very
			// same commit again: same tree, parent, message and second).
			backups := strings.Fields(mustRun(t, dir, "git", "for-each-ref", "--format=%(objectname)", "refs/wiggum/backup/"))
			if !slices.Contains(strings.Fields(mustRun(t, dir, "git", append([]string{"rev-list"}, backups...)...)), agentCommit) {
				t.Errorf("the unfinished attempt's commit %s is in no backup", agentCommit)
			}
			if n := invocations(t, marks)["US-3"]; n != 2 {
				t.Errorf("US-3 given to the agent %d time(s), want 2 (the unfinished attempt, then redone)", n)
			}
		})
	}
}

// TestSerialResumeDoesNotTrustTheAgentsTick: an agent that ticks its own
// story in the plan and commits its work under the very message wiggum
// would use, then is killed with wiggum before it exits, has not finished:
// its checks never ran (here they would fail). The resumed run must roll
// the attempt back (saving it) and give the story to the agent again, not
// take the agent's tick and commit for the loop's.
func TestSerialResumeDoesNotTrustTheAgentsTick(t *testing.T) {
	dir, marks, args := serialRepo(t, 1)
	agent := filepath.Join(marks, "agent.sh")
	writeFile(t, agent, `cat > /dev/null
echo "$WIGGUM_STORY" >> "$MARKS/invocations"
sed -i "s/^- \[ \] $WIGGUM_STORY:/- [x] $WIGGUM_STORY:/" plan.md
echo work > work-US-1.txt
git add -A && git commit -q -m "US-1: story 1"
if [ ! -e "$MARKS/resumed" ]; then touch "$MARKS/hanging"; sleep $SLEEP; fi
touch checked.txt
`)
	args = append(args[:len(args)-4], "--test-cmd", "test -e checked.txt", "--retries", "0")
	env := []string{"MARKS=" + marks, "SLEEP=" + uniqueSleep()}
	p := startWiggum(t, dir, env, args...)
	waitFile(t, filepath.Join(marks, "hanging"))
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t)
	killed := strings.TrimSpace(mustRun(t, dir, "git", "rev-parse", "HEAD"))
	writeFile(t, filepath.Join(marks, "resumed"), "")
	r := wiggum(t, dir, env, args...)
	if r.code != 0 {
		t.Fatalf("resumed run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if n := invocations(t, marks)["US-1"]; n != 2 || !strings.Contains(r.stdout, "US-1: rolled back the attempt a crash interrupted (its agent had not finished or its checks had not passed)") {
		t.Errorf("the agent's own tick and commit were taken for a finished story (%d agent runs):\n%s", n, r.stdout)
	}
	if run(t, dir, nil, "git", "cat-file", "-e", "HEAD:checked.txt").code != 0 {
		t.Error("the story was committed without the run that passed its checks")
	}
	checkResumed(t, dir, 1, []string{killed}, true)
}

// A person who finds the run killed queues a story in the plan, writes a
// note and commits a fix, then resumes the run. The resume rolls back the
// attempt the kill cut off, and everything made since its checkpoint went
// back with it, saved in the backup but without a word: the queued story
// vanished from the plan and never ran, the person's commit was taken off
// main. The queued story is now kept, as a live rollback keeps one, and
// the resume names the commits and files it took back.
func TestResumeKeepsWhatThePersonQueued(t *testing.T) {
	dir, marks, args := serialRepo(t, 2)
	env := []string{"MARKS=" + marks}
	p := startWiggum(t, dir, append(env, killpoint.Env+"=agent-exited"), args...)
	if code := p.wait(t); code != 128+int(syscall.SIGKILL) {
		t.Fatalf("run exited %d, never reaching agent-exited\n%s%s", code, p.stdout(), p.stderr())
	}
	// wiggum status tells what the resume will do first.
	if st := mustRun(t, dir, wiggumBin, "status"); !strings.Contains(st, "cut off by the kill: the attempt at US-1 - the resumed run first rolls the tree back to its checkpoint") {
		t.Errorf("status does not say the resume rolls US-1's attempt back:\n%s", st)
	}
	// The person, after the crash.
	plan := filepath.Join(dir, "plan.md")
	writeFile(t, plan, readFile(t, plan)+"- [ ] US-3: queued after the crash\n")
	writeFile(t, filepath.Join(dir, "fix.txt"), "the person's fix\n")
	mustRun(t, dir, "git", "add", "fix.txt")
	mustRun(t, dir, "git", "commit", "-q", "-m", "person: hotfix after the crash")
	fix := strings.TrimSpace(mustRun(t, dir, "git", "rev-parse", "--short", "HEAD"))
	writeFile(t, filepath.Join(dir, "NOTES.md"), "todo: ask bob\n")

	r := wiggum(t, dir, env, args...)
	if r.code != 0 {
		t.Fatalf("resumed run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"plan.md gained US-3 during the attempt: kept",
		"commit(s) made since the attempt's checkpoint went with it - its agent's, or anyone's since the crash: ",
		fix + " person: hotfix after the crash",
		"NOTES.md",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the resume did not say %q:\n%s", want, r.stdout)
		}
	}
	if ran := invocations(t, marks); ran["US-3"] != 1 {
		t.Errorf("the queued US-3 ran %d time(s), want 1\n%s", ran["US-3"], r.stdout)
	}
	if got := readFile(t, plan); !strings.Contains(got, "- [x] US-3: queued after the crash") {
		t.Errorf("the queued story is not in the plan, done:\n%s", got)
	}
	if !inSomeBackup(t, dir, "fix.txt", "NOTES.md") {
		t.Error("the person's fix and note are in no backup")
	}
}

// TestResumeNumbersIterationsOn: a resumed run numbers its iterations on
// from the killed run's, so WIGGUM_ITERATION (and the report) never
// repeats a number within one run. (Before, the resume started again at
// 1.)
func TestResumeNumbersIterationsOn(t *testing.T) {
	dir, marks, agent := scriptRepo(t, "", 2, `cat > /dev/null
echo "$WIGGUM_ITERATION" >> "$MARKS/iterations"
echo "work of $WIGGUM_STORY" > "f-$WIGGUM_STORY.txt"
if [ "$WIGGUM_STORY" = US-2 ] && [ ! -e "$MARKS/resumed" ]; then
  touch "$MARKS/ready"; while [ ! -e "$MARKS/resumed" ]; do sleep 0.05; done; exit 1
fi
`)
	args := []string{"run", "--plan", "plan.md", "-q", "--agent-cmd", "sh " + agent}
	p := startWiggum(t, dir, []string{"MARKS=" + marks}, args...)
	waitFile(t, filepath.Join(marks, "ready"))
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t)
	writeFile(t, filepath.Join(marks, "resumed"), "")
	res := wiggum(t, dir, []string{"MARKS=" + marks}, args...)
	if res.code != 0 || !strings.Contains(res.stdout+res.stderr, "resuming") {
		t.Fatalf("the resumed run: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	seen := map[string]bool{}
	for _, it := range strings.Fields(readFile(t, filepath.Join(marks, "iterations"))) {
		if seen[it] {
			t.Errorf("iteration %s given twice: %q", it, readFile(t, filepath.Join(marks, "iterations")))
		}
		seen[it] = true
	}
}

// TestResumeSummaryNamesRedoneBackups: the partial work of a killed
// parallel attempt, saved by the resume before the story is redone, is
// named in the run's summary with the other saves. (Before, only the
// "redoing" line named it.)
func TestResumeSummaryNamesRedoneBackups(t *testing.T) {
	dir, marks, agent := scriptRepo(t, "", 2, `cat > /dev/null
echo "work of $WIGGUM_STORY" > "f-$WIGGUM_STORY.txt"
if [ "$WIGGUM_STORY" = US-2 ] && [ ! -e "$MARKS/resumed" ]; then
  touch "$MARKS/ready"; while [ ! -e "$MARKS/resumed" ]; do sleep 0.05; done
fi
`)
	args := []string{"run", "--plan", "plan.md", "--workers", "2", "-q", "--agent-cmd", "sh " + agent}
	p := startWiggum(t, dir, []string{"MARKS=" + marks}, args...)
	waitFile(t, filepath.Join(marks, "ready"))
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t)
	writeFile(t, filepath.Join(marks, "resumed"), "")
	res := wiggum(t, dir, []string{"MARKS=" + marks}, args...)
	out := res.stdout + res.stderr
	if res.code != 0 {
		t.Fatalf("the resumed run: exit %d\n%s", res.code, out)
	}
	m := regexp.MustCompile(`redoing US-2: saved its partial work as (\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the resume did not save US-2's partial work:\n%s", out)
	}
	if !regexp.MustCompile(`is saved in [^\n]*` + regexp.QuoteMeta(m[1])).MatchString(out) {
		t.Errorf("the summary does not name %s:\n%s", m[1], out)
	}
}
