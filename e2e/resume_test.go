package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/wiggum-dev/wiggum/internal/killpoint"
	"github.com/wiggum-dev/wiggum/internal/report"
	"github.com/wiggum-dev/wiggum/internal/watch"
)

// TestKilledParallelRunResumes is the field report: `wiggum run --workers 2`
// over 6 stories, SIGKILLed while two agents are mid-story with an
// uncommitted file each, then run again. The second run must finish every
// story without creating a second worktree or branch for the killed
// stories, leave no worktree or branch behind, and the killed attempts'
// files must be in a backup ref.
func TestKilledParallelRunResumes(t *testing.T) {
	dir := newRepo(t)
	marks := t.TempDir()
	var plan strings.Builder
	for i := 1; i <= 6; i++ {
		fmt.Fprintf(&plan, "- [ ] US-00%d: story %d\n", i, i)
	}
	writeFile(t, filepath.Join(dir, "plan.md"), plan.String())
	mustRun(t, dir, "git", "add", "plan.md")
	mustRun(t, dir, "git", "commit", "-q", "-m", "plan")
	// Stories 5 and 6 write a file and hang until killed; the others are
	// quick, so the kill finds exactly those two mid-story.
	agent := filepath.Join(marks, "agent.sh")
	writeFile(t, agent, `cat > /dev/null
echo "work of $WIGGUM_STORY" > "wip-$WIGGUM_STORY.txt"
case $WIGGUM_STORY in US-005|US-006)
  if [ ! -e "`+marks+`/resumed" ]; then touch "`+marks+`/$WIGGUM_STORY"; sleep `+uniqueSleep()+`; fi ;;
esac
`)
	args := []string{"run", "--plan", "plan.md", "--workers", "2", "--agent-cmd", "sh " + agent}
	p := startWiggum(t, dir, nil, args...)
	waitFile(t, filepath.Join(marks, "US-005"))
	waitFile(t, filepath.Join(marks, "US-006"))
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	if code := p.wait(t); code != 128+int(syscall.SIGKILL) {
		t.Fatalf("wiggum exited %d before the kill", code)
	}
	st := wiggum(t, dir, nil, "status")
	if !strings.Contains(st.stdout, "was interrupted") || !strings.Contains(st.stdout, "wiggum run --plan plan.md --workers 2") {
		t.Errorf("status after the kill does not say how to resume:\n%s%s", st.stdout, st.stderr)
	}

	writeFile(t, filepath.Join(marks, "resumed"), "")
	r := wiggum(t, dir, nil, args...)
	if r.code != 0 {
		t.Fatalf("resumed run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, s := range []string{"US-005", "US-006"} {
		if !strings.Contains(r.stdout, "redoing "+s+": saved its partial work as refs/wiggum/backup/") {
			t.Errorf("no word about %s's saved worktree:\n%s", s, r.stdout)
		}
	}
	// A second worktree or branch of a story is named <story>-2; the check
	// looked for "-2" anywhere before, which a backup ref's commit id can
	// hold (refs/wiggum/backup/<time>-2c1d7f8...).
	if reflog := mustRun(t, dir, "git", "reflog", "--all"); strings.Contains(r.stdout, "US-005-2") || strings.Contains(r.stdout, "US-006-2") ||
		strings.Contains(reflog, "wiggum/US-005-2") || strings.Contains(reflog, "wiggum/US-006-2") {
		t.Errorf("a second worktree or branch was made for a killed story:\n%s", r.stdout)
	}
	if plan, _ := os.ReadFile(filepath.Join(dir, "plan.md")); strings.Contains(string(plan), "[ ]") {
		t.Errorf("stories left open:\n%s", plan)
	}
	checkNoWorktreesLeft(t, dir)
	// The killed attempts' uncommitted files are in a backup.
	refs := strings.Fields(mustRun(t, dir, "git", "for-each-ref", "--format=%(refname)", "refs/wiggum/backup/"))
	for _, s := range []string{"US-005", "US-006"} {
		found := false
		for _, ref := range refs {
			if run(t, dir, nil, "git", "cat-file", "-e", ref+":wip-"+s+".txt").code == 0 {
				found = true
			}
		}
		if !found {
			t.Errorf("the killed attempt's wip-%s.txt is in no backup (%v)", s, refs)
		}
	}
	st = wiggum(t, dir, nil, "status", "--json")
	if !strings.Contains(st.stdout, `"resume": null`) {
		t.Errorf("status still reports a run to resume:\n%s", st.stdout)
	}
	if left := withMarker(marks); len(left) > 0 {
		t.Errorf("processes left: %v", left)
	}
}

// TestKilledSerialRunResumes: SIGKILL a serial run mid-attempt (the agent
// made a commit and left a file); the next run rolls the attempt back,
// saving both, does not count it as failed, and finishes.
func TestKilledSerialRunResumes(t *testing.T) {
	dir, marks := twoStories(t)
	agent := filepath.Join(marks, "agent.sh")
	writeFile(t, agent, `cat > /dev/null
if [ "$WIGGUM_STORY" = US-2 ] && [ ! -e "`+marks+`/resumed" ]; then
  echo half > half.txt; git add half.txt; git commit -q -m "agent: half"; echo wip > wip.txt
  touch "`+marks+`/ready"; sleep `+uniqueSleep()+`
fi
echo done > "done-$WIGGUM_STORY.txt"
`)
	args := []string{"run", "--plan", "plan.md", "--agent-cmd", "sh " + agent, "--retries", "0"}
	killWhenReady(t, dir, marks, args...)
	// --retries 0: had the killed attempt counted, US-2 would be skipped.
	r := wiggum(t, dir, nil, args...)
	if r.code != 0 {
		t.Fatalf("resumed run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "US-2: rolled back the attempt a crash interrupted") {
		t.Errorf("no rollback of the killed attempt:\n%s", r.stdout)
	}
	log := mustRun(t, dir, "git", "log", "--format=%s")
	if log != "US-2: two\nUS-1: one\nplan\ninit\n" {
		t.Errorf("history:\n%s", log)
	}
	if !inSomeBackup(t, dir, "wip.txt", "half.txt") {
		t.Error("the killed attempt's commit and file are in no backup")
	}
}

// TestResumeLogsKilledAttempt: an attempt killed after its agent reported
// its cost is closed by the resume in the event log too, so report and
// watch count what it cost, as the run and status do, and report lists
// its backup.
func TestResumeLogsKilledAttempt(t *testing.T) {
	dir, marks := twoStories(t)
	agent := filepath.Join(marks, "agent.sh")
	writeFile(t, agent, `cat > /dev/null
echo '{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.25,"num_turns":1,"usage":{"input_tokens":1000,"output_tokens":100},"result":"done"}'
echo done > "done-$WIGGUM_STORY.txt"
if [ "$WIGGUM_STORY" = US-2 ] && [ ! -e "`+marks+`/resumed" ]; then
  touch "`+marks+`/ready"; sleep `+uniqueSleep()+`
fi
`)
	args := []string{"run", "--plan", "plan.md", "--agent-cmd", "sh " + agent}
	killWhenReady(t, dir, marks, args...)
	r := wiggum(t, dir, nil, args...)
	if r.code != 0 || !strings.Contains(r.stdout, "spent $0.75") {
		t.Fatalf("resumed run: exit %d, want $0.75 spent\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = wiggum(t, dir, nil, "report", "--json")
	var rep report.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("report --json: %v\n%s", err, r.stdout)
	}
	if rep.Totals.CostUSD != 0.75 {
		t.Errorf("report: total $%.2f, want $0.75 as the run spent", rep.Totals.CostUSD)
	}
	var us2 *report.Story
	for _, s := range rep.Stories {
		if s.ID == "US-2" {
			us2 = s
		}
	}
	if us2 == nil || len(us2.Attempts) != 2 || us2.Attempts[0].Outcome != "interrupted" || us2.Attempts[0].CostUSD != 0.25 ||
		!strings.HasPrefix(us2.Attempts[0].Backup, "refs/wiggum/backup/") || len(us2.Backups) != 1 {
		js, _ := json.Marshal(us2)
		t.Errorf("report: US-2's killed attempt is not interrupted with its cost and backup: %s", js)
	}
	src := watch.NewSource(dir)
	defer src.Close()
	var st watch.State
	if err := src.Each(st.Apply); err != nil {
		t.Fatal(err)
	}
	if st.Cost != 0.75 {
		t.Errorf("watch: cost $%.2f, want $0.75 as the run spent", st.Cost)
	}
}

// twoStories makes a repository whose plan.md has US-1 and US-2, and a
// directory for the marks of an agent the test kills mid-attempt.
func twoStories(t *testing.T) (dir, marks string) {
	t.Helper()
	dir, marks = newRepo(t), t.TempDir()
	writeFile(t, filepath.Join(dir, "plan.md"), "- [ ] US-1: one\n- [ ] US-2: two\n")
	mustRun(t, dir, "git", "add", "plan.md")
	mustRun(t, dir, "git", "commit", "-q", "-m", "plan")
	return dir, marks
}

// killWhenReady starts wiggum with args, SIGKILLs it once its agent
// touched marks/ready, and then touches marks/resumed for the agents of
// the run after it.
func killWhenReady(t *testing.T, dir, marks string, args ...string) {
	t.Helper()
	p := startWiggum(t, dir, nil, args...)
	waitFile(t, filepath.Join(marks, "ready"))
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t)
	writeFile(t, filepath.Join(marks, "resumed"), "")
}

// resumeWindows are the kill points around the end of a parallel story and
// its landing, in the order a story passes them: its work committed but
// the attempt not yet recorded done (redone: nothing says it finished),
// recorded done but not landed (landed on resume, not redone), then each
// step of the merge coordinator's landing and of the worktree's removal.
var resumeWindows = []string{
	"attempt-committed", "attempt-done", "merge-intent", "merge-tree-moved",
	"merge-ref-moved", "merge-ticked", "land-ticked", "remove-saved", "remove-unregistered",
}

// resumeAgent is the scripted agent of the kill-window tests: it counts
// its invocations per story outside the repository and writes the story's
// work file; odd stories commit it themselves, even ones tick their own
// story in the worktree's plan, as ralph prompts ask, and add a note to it
// (the loop takes a lone tick of the agent's own story back; it keeps the
// rest of the edit out of the branch, and saves it when the worktree
// goes: the remove-saved window). Stories
// listed in $MARKS/hang hang until killed, until $MARKS/resumed exists.
const resumeAgent = `cat > /dev/null
S=$WIGGUM_STORY
echo "$S" >> "$MARKS/invocations"
n=${S#US-}
echo "work of $S" > "work-$S.txt"
if [ $((n % 2)) -eq 1 ]; then
  git add "work-$S.txt" && git commit -q -m "agent: $S"
else
  sed -i "s/^- \[ \] $S:/- [x] $S:/" plan.md
  echo "<!-- $S: a note of the agent's -->" >> plan.md
fi
if grep -qx "$S" "$MARKS/hang" 2>/dev/null && [ ! -e "$MARKS/resumed" ]; then
  touch "$MARKS/hanging-$S"; sleep $SLEEP
fi
sleep 0.$((n % 3 + 1))
`

// resumeRepo makes a repository with a plan of n stories and the scripted
// agent; it returns the repository, the marks directory and the run's
// arguments.
func resumeRepo(t *testing.T, n, workers int) (dir, marks string, args []string) {
	t.Helper()
	dir, marks, agent := scriptRepo(t, "", n, resumeAgent)
	return dir, marks, []string{"run", "--plan", "plan.md", "--workers", strconv.Itoa(workers), "--agent-cmd", "sh " + agent, "--retries", "0"}
}

// scriptRepo makes a repository whose committed plan.md (after head) lists n
// open stories US-1..US-n, and a marks directory holding the agent script;
// it returns the repository, the marks directory and the script's path.
func scriptRepo(t *testing.T, head string, n int, script string) (dir, marks, agent string) {
	t.Helper()
	dir = newRepo(t)
	marks = t.TempDir()
	var plan strings.Builder
	plan.WriteString(head)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&plan, "- [ ] US-%d: story %d\n", i, i)
	}
	writeFile(t, filepath.Join(dir, "plan.md"), plan.String())
	mustRun(t, dir, "git", "add", "plan.md")
	mustRun(t, dir, "git", "commit", "-q", "-m", "plan")
	agent = filepath.Join(marks, "agent.sh")
	writeFile(t, agent, script)
	return dir, marks, agent
}

// invocations counts the agent's runs per story.
func invocations(t *testing.T, marks string) map[string]int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(marks, "invocations"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, s := range strings.Fields(string(data)) {
		n[s]++
	}
	return n
}

// workCommits lists the commits on refs/heads/ and refs/wiggum/backup/:
// everything anyone committed, which a resume must keep on the target or
// in a backup.
func workCommits(t *testing.T, dir string) []string {
	t.Helper()
	refs := strings.Fields(mustRun(t, dir, "git", "for-each-ref", "--format=%(objectname)", "refs/heads/", "refs/wiggum/backup/"))
	return strings.Fields(mustRun(t, dir, "git", append([]string{"rev-list"}, refs...)...))
}

// finishedBefore reads, from wiggum status, the stories the killed run
// recorded as done.
func finishedBefore(t *testing.T, dir string) []string {
	t.Helper()
	st := wiggum(t, dir, nil, "status", "--json")
	var s struct {
		Resume *struct {
			Done []string `json:"done"`
		} `json:"resume"`
	}
	if st.code != 0 || json.Unmarshal([]byte(st.stdout), &s) != nil || s.Resume == nil {
		t.Fatalf("status after the kill: exit %d\n%s%s", st.code, st.stdout, st.stderr)
	}
	return s.Resume.Done
}

// resumeOK runs wiggum with args once more, which must resume and finish
// the run (exit 0), and checks it as checkResumed does, with every commit
// in made before the kills kept.
func resumeOK(t *testing.T, dir string, env, args []string, n int, made map[string]bool, serial bool) result {
	t.Helper()
	r := wiggum(t, dir, env, args...)
	if r.code != 0 {
		t.Fatalf("resumed run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var kept []string
	for c := range made {
		kept = append(kept, c)
	}
	checkResumed(t, dir, n, kept, serial)
	return r
}

// checkResumed verifies a resumed parallel run over n stories: each ticked
// once and landed once, its work on main, every commit made before the
// kill (before) on main or in a backup, nothing left behind. A serial
// resume (serial) commits each story's tick with its work, so only its
// work and the plan are checked story by story.
func checkResumed(t *testing.T, dir string, n int, before []string, serial bool) {
	t.Helper()
	if plan, _ := os.ReadFile(filepath.Join(dir, "plan.md")); strings.Contains(string(plan), "[ ]") {
		t.Errorf("stories left open:\n%s", plan)
	}
	subjects := strings.Split(strings.TrimSpace(mustRun(t, dir, "git", "log", "--format=%s", "main")), "\n")
	for i := 1; i <= n && !serial; i++ {
		id := fmt.Sprintf("US-%d", i)
		ticks, merges, work := 0, 0, 0
		for _, s := range subjects {
			switch {
			case s == id+": mark done":
				ticks++
			case strings.HasPrefix(s, "Merge "+id+": "):
				merges++
			case s == "agent: "+id, s == fmt.Sprintf("%s: story %d", id, i):
				work++
			}
		}
		if ticks != 1 || merges > 1 || work != 1 {
			t.Errorf("%s: %d tick commit(s), %d merge(s), %d work commit(s) on main; want 1, at most 1, 1\n%s", id, ticks, merges, work, strings.Join(subjects, "\n"))
		}
	}
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("US-%d", i)
		if _, err := os.Stat(filepath.Join(dir, "work-"+id+".txt")); err != nil {
			t.Errorf("%s: its work is not in the tree: %v", id, err)
		}
	}
	kept := map[string]bool{}
	refs := strings.Fields(mustRun(t, dir, "git", "for-each-ref", "--format=%(objectname)", "refs/wiggum/backup/"))
	for _, c := range strings.Fields(mustRun(t, dir, "git", append([]string{"rev-list", "main"}, refs...)...)) {
		kept[c] = true
	}
	for _, c := range before {
		if !kept[c] {
			t.Errorf("commit %s, made before the kill, is neither on main nor in a backup", c)
		}
	}
	checkNoWorktreesLeft(t, dir)
}

// checkNoWorktreesLeft checks that a finished run left nothing of its
// parallel mode: only the main tree registered, no wiggum/ branch, no
// worktree directory.
func checkNoWorktreesLeft(t *testing.T, dir string) {
	t.Helper()
	if wts := strings.Count(mustRun(t, dir, "git", "worktree", "list", "--porcelain"), "worktree "); wts != 1 {
		t.Errorf("%d worktrees registered, want 1", wts)
	}
	if b := mustRun(t, dir, "git", "for-each-ref", "refs/heads/wiggum/"); b != "" {
		t.Errorf("branches left:\n%s", b)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, ".ralph/wiggum/worktrees")); len(ents) != 0 {
		t.Errorf("%d worktree directories left", len(ents))
	}
}

// TestResumeAtEachKillWindow SIGKILLs a 2-worker run over 4 stories at
// each kill point around a story's end and its landing, then resumes it;
// a few cases kill the resumed run too, while it lands what the first one
// finished. For every case: every story is ticked once and landed once, no
// commit made before a kill is lost (it is on main or in a backup), and a
// story recorded as done before a kill is never given to the agent again -
// in the window between its attempt's end and its landing (attempt-done)
// it is landed by the resumed run's merge coordinator instead.
func TestResumeAtEachKillWindow(t *testing.T) {
	const stories = 4
	var cases [][]string
	for _, w := range resumeWindows {
		cases = append(cases, []string{w})
	}
	cases = append(cases, []string{"attempt-done", "merge-intent"}, []string{"attempt-done", "merge-ticked"}, []string{"attempt-done", "attempt-done"})
	for _, kills := range cases {
		t.Run(strings.Join(kills, "+"), func(t *testing.T) {
			dir, marks, args := resumeRepo(t, stories, 2)
			env := []string{"MARKS=" + marks, "SLEEP=0"}
			before := map[string]bool{}
			type kill struct {
				done []string
				ran  map[string]int
			}
			var at []kill
			for i, window := range kills {
				p := startWiggum(t, dir, append(env, killpoint.Env+"="+window), args...)
				if code := p.wait(t); code != 128+int(syscall.SIGKILL) {
					t.Fatalf("run %d exited %d, never reaching %s\n%s%s", i+1, code, window, p.stdout(), p.stderr())
				}
				if i > 0 && kills[0] == "attempt-done" && !strings.Contains(p.stdout(), ": it finished before the crash") {
					t.Errorf("run %d does not take over the story the first run finished:\n%s", i+1, p.stdout())
				}
				for _, c := range workCommits(t, dir) {
					before[c] = true
				}
				at = append(at, kill{done: finishedBefore(t, dir), ran: invocations(t, marks)})
			}
			r := resumeOK(t, dir, env, args, stories, before, false)
			again := invocations(t, marks)
			for i, k := range at {
				for _, s := range k.done {
					if again[s] != k.ran[s] {
						t.Errorf("%s was recorded done before kill %d and given to the agent again after it (%d runs then, %d now)\n%s", s, i+1, k.ran[s], again[s], r.stdout)
					}
				}
			}
			if len(kills) == 1 && kills[0] == "attempt-done" {
				landed := 0
				for _, s := range at[0].done {
					if strings.Contains(r.stdout, "landing "+s+": it finished before the crash") {
						landed++
					}
				}
				if landed == 0 {
					t.Errorf("the resumed run does not say it lands a story finished before the crash (done before the kill: %v)\n%s", at[0].done, r.stdout)
				}
			}
			t.Logf("done before each kill: %v; agent runs at the end %v\n%s", at, again, r.stdout)
		})
	}
}

// killedWithUS1Finished runs 2 workers over 2 stories and SIGKILLs the
// run at kill point attempt-done, with US-1 finished (recorded done, not
// landed) and US-2 hanging mid-story. It returns the repository, the
// agent's marks directory, and the run's arguments and environment for a
// resume.
func killedWithUS1Finished(t *testing.T) (dir, marks string, args, env []string) {
	t.Helper()
	dir, marks, args = resumeRepo(t, 2, 2)
	writeFile(t, filepath.Join(marks, "hang"), "US-2\n")
	env = []string{"MARKS=" + marks, "SLEEP=" + uniqueSleep()}
	p := startWiggum(t, dir, append(env, killpoint.Env+"=attempt-done"), args...)
	if code := p.wait(t); code != 128+int(syscall.SIGKILL) {
		t.Fatalf("the run exited %d, never reaching attempt-done\n%s%s", code, p.stdout(), p.stderr())
	}
	if done := finishedBefore(t, dir); len(done) != 1 || done[0] != "US-1" {
		t.Fatalf("done before the kill: %v, want [US-1]", done)
	}
	return dir, marks, args, env
}

// TestResumeRedoesTamperedFinishedStory: a story finished before the kill,
// then someone changed its worktree - a commit on its branch after the one
// its attempt recorded, a file left there, its HEAD detached - or the run
// is resumed without --workers, with no merge coordinator to land it. Resume must not land that
// blindly: it saves the worktree under refs/wiggum/backup/ (the extra
// commit or file included), says why, and redoes the story.
func TestResumeRedoesTamperedFinishedStory(t *testing.T) {
	for tamper, why := range map[string]string{
		"commit":   "its branch wiggum/US-1 moved after the attempt ended",
		"file":     "its worktree has changes made after the attempt ended (extra.txt)",
		"detached": "its worktree left wiggum/US-1 after the attempt ended",
		// Not tampered: resumed without --workers, by a serial run.
		"serial": "this run is serial, and only a parallel run's merge coordinator lands a worker's branch",
	} {
		t.Run(tamper, func(t *testing.T) {
			dir, marks, args, env := killedWithUS1Finished(t)
			wt := filepath.Join(dir, ".ralph/wiggum/worktrees/US-1")
			var extra string
			switch tamper {
			case "commit":
				writeFile(t, filepath.Join(wt, "extra.txt"), "not the agent's\n")
				mustRun(t, wt, "git", "add", "extra.txt")
				mustRun(t, wt, "git", "commit", "-q", "-m", "someone else")
				extra = strings.TrimSpace(mustRun(t, wt, "git", "rev-parse", "HEAD"))
			case "file":
				writeFile(t, filepath.Join(wt, "extra.txt"), "not the agent's\n")
			case "detached":
				mustRun(t, wt, "git", "checkout", "-q", "--detach", "HEAD")
				writeFile(t, filepath.Join(wt, "extra.txt"), "not the agent's\n")
			}
			before := workCommits(t, dir)
			ran := invocations(t, marks)
			writeFile(t, filepath.Join(marks, "resumed"), "")
			if tamper == "serial" {
				args = slices.DeleteFunc(args, func(a string) bool { return a == "--workers" || a == "2" })
			}
			r := wiggum(t, dir, env, args...)
			if r.code != 0 {
				t.Fatalf("resumed run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			checkResumed(t, dir, 2, before, tamper == "serial")
			if again := invocations(t, marks); again["US-1"] != ran["US-1"]+1 {
				t.Errorf("US-1 ran %d time(s) after the resume, want 1 (redone)\n%s", again["US-1"]-ran["US-1"], r.stdout)
			}
			if strings.Contains(r.stdout, "landing US-1") || !strings.Contains(r.stdout, "US-1 finished before the crash but is not landed: "+why) ||
				!strings.Contains(r.stdout, "redoing US-1: saved its partial work as refs/wiggum/backup/") {
				t.Errorf("the resumed run does not say it redoes US-1 and why:\n%s", r.stdout)
			}
			if run(t, dir, nil, "git", "cat-file", "-e", "main:extra.txt").code == 0 {
				t.Errorf("the tampered worktree's extra.txt landed on main")
			}
			if tamper == "serial" {
				return
			}
			if !inSomeBackup(t, dir, "extra.txt") {
				t.Errorf("extra.txt is in no backup")
			}
			if extra != "" && run(t, dir, nil, "git", "merge-base", "--is-ancestor", extra, "main").code == 0 {
				t.Errorf("the commit made after the story finished (%s) landed on main", extra)
			}
			if left := withMarker(marks); len(left) > 0 {
				t.Errorf("processes left: %v", left)
			}
		})
	}
}

// TestResumeLandsPastWiggumsOwnLeftovers: a run resuming a finished story
// was killed while it leased the story's worktree again, mid-way through
// writing the lease's holder record, leaving the record's temporary file
// (wiggum's own, outside what git is told to ignore). That is not a change
// to the worktree: the next resume still lands the story, not redo it (the
// soak found this one).
func TestResumeLandsPastWiggumsOwnLeftovers(t *testing.T) {
	dir, marks, args, env := killedWithUS1Finished(t)
	temp := filepath.Join(dir, ".ralph/wiggum/worktrees/US-1/.ralph/..agent-lock.json8200839734990023139")
	writeFile(t, temp, `{"pid": 1`)
	if st := mustRun(t, filepath.Dir(filepath.Dir(temp)), "git", "status", "--porcelain", "--untracked-files=all"); !strings.Contains(st, "..agent-lock.json") {
		t.Fatalf("git does not see the temporary file, so this tests nothing:\n%s\n%s", st, mustRun(t, dir, "git", "worktree", "list"))
	}
	before := workCommits(t, dir)
	ran := invocations(t, marks)
	writeFile(t, filepath.Join(marks, "resumed"), "")
	r := wiggum(t, dir, env, args...)
	if r.code != 0 {
		t.Fatalf("resumed run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	checkResumed(t, dir, 2, before, false)
	if again := invocations(t, marks); again["US-1"] != ran["US-1"] || !strings.Contains(r.stdout, "landing US-1: it finished before the crash") {
		t.Errorf("US-1 not landed as it finished (%d agent run(s) after the resume):\n%s", again["US-1"]-ran["US-1"], r.stdout)
	}
}
