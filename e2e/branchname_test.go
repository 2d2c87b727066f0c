package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// snarktankAgent does what snarktank/ralph's prompt tells the agent: get
// on the prd.json's branchName ("check it out or create from main"), do
// the story, commit it all, append its entry to progress.txt. It gives up
// (exit 1) when git will not switch.
const snarktankAgent = `cat > /dev/null
# In parallel, both at work before either lands.
if [ -n "$SYNC" ]; then
  touch "$SYNC/$WIGGUM_STORY"
  i=0
  until [ -e "$SYNC/US-001" ] && [ -e "$SYNC/US-002" ]; do
    i=$((i + 1)); [ $i -gt 1200 ] && exit 1
    sleep 0.05
  done
fi
b=ralph/feature-x
if [ "$(git branch --show-current)" != "$b" ]; then
  git checkout -q "$b" || git checkout -q -b "$b" "$MAIN" || exit 1
fi
echo "$WIGGUM_STORY" > "work-$WIGGUM_STORY.txt"
git add -A && git commit -q -m "feat: $WIGGUM_STORY"
printf '## %s\n- learned something\n---\n' "$WIGGUM_STORY" >> progress.txt
`

const branchPRD = `{
  "project": "demo",
  "branchName": "ralph/feature-x",
  "userStories": [
    {"id": "US-001", "title": "first", "priority": 1, "passes": false},
    {"id": "US-002", "title": "second", "priority": 2, "passes": false}
  ]
}
`

const progressStart = "# Ralph Progress Log\n---\n"

// A prd.json names the branch its work goes on (branchName), and
// snarktank/ralph's prompt has the agent switch there. The run undid that
// switch (its work goes on the branch the attempt started on) and deleted
// the branch: a person who moved from ralph.sh found every story on main.
// The run now works on the prd.json's branch itself - made from HEAD, as
// the prompt says, or the existing one - and leaves main as it was. In a
// parallel run the agents' worktrees cannot check that branch out (it is
// in use in the main tree) nor make it (it exists): their git says where
// the work lands and stays on the worktree's branch, so each attempt
// passes and lands on the prd.json's branch; progress.txt, which every
// story appends its entry to, keeps them all (git conflicted on every
// landing but the first).
func TestRunWorksOnThePRDsBranch(t *testing.T) {
	for _, c := range []struct {
		name    string
		workers string
		exists  bool
	}{
		{"serial", "1", false},
		{"serial, branch exists", "1", true},
		{"parallel", "2", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := newRepo(t)
			writeFile(t, filepath.Join(dir, "prd.json"), branchPRD)
			writeFile(t, filepath.Join(dir, "progress.txt"), progressStart)
			mustRun(t, dir, "git", "add", "prd.json", "progress.txt")
			mustRun(t, dir, "git", "commit", "-q", "-m", "prd")
			main := strings.TrimSpace(mustRun(t, dir, "git", "symbolic-ref", "--short", "HEAD"))
			mainTip := strings.TrimSpace(mustRun(t, dir, "git", "rev-parse", "HEAD"))
			base := mainTip
			if c.exists {
				mustRun(t, dir, "git", "switch", "-q", "-c", "ralph/feature-x")
				writeFile(t, filepath.Join(dir, "earlier.txt"), "earlier work\n")
				mustRun(t, dir, "git", "add", "earlier.txt")
				mustRun(t, dir, "git", "commit", "-q", "-m", "earlier work on the branch")
				base = strings.TrimSpace(mustRun(t, dir, "git", "rev-parse", "HEAD"))
				mustRun(t, dir, "git", "switch", "-q", main)
			}
			agent := filepath.Join(t.TempDir(), "agent.sh")
			writeFile(t, agent, snarktankAgent)
			env := []string{"MAIN=" + main}
			if c.workers != "1" {
				env = append(env, "SYNC="+t.TempDir())
			}
			r := wiggum(t, dir, env, "run", "--workers", c.workers, "--retries", "0", "--agent-cmd", "sh "+agent)
			if r.code != 0 {
				t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, "working on branch ralph/feature-x (the branchName of prd.json)") {
				t.Errorf("the run does not say which branch it works on:\n%s", r.stdout)
			}
			if head := strings.TrimSpace(mustRun(t, dir, "git", "symbolic-ref", "--short", "HEAD")); head != "ralph/feature-x" {
				t.Errorf("the run ended on %s", head)
			}
			if tip := strings.TrimSpace(mustRun(t, dir, "git", "rev-parse", main)); tip != mainTip {
				t.Errorf("%s moved from %.8s to %.8s:\n%s", main, mainTip, tip, mustRun(t, dir, "git", "log", "--oneline", main))
			}
			if out := run(t, dir, nil, "git", "merge-base", "--is-ancestor", base, "ralph/feature-x"); out.code != 0 {
				t.Errorf("ralph/feature-x does not continue %.8s", base)
			}
			files := mustRun(t, dir, "git", "ls-tree", "--name-only", "ralph/feature-x")
			for _, f := range []string{"work-US-001.txt", "work-US-002.txt"} {
				if !strings.Contains(files, f) {
					t.Errorf("%s is not on ralph/feature-x:\n%s", f, files)
				}
			}
			if left := mustRun(t, dir, "git", "for-each-ref", "--format=%(refname:short)", "refs/heads/wiggum/"); left != "" {
				t.Errorf("branches left: %s", left)
			}
			// Each story appended its entry to progress.txt: in parallel
			// both landings keep both (git alone conflicts on the second).
			progress := mustRun(t, dir, "git", "show", "ralph/feature-x:progress.txt")
			if !strings.HasPrefix(progress, progressStart) || strings.Count(progress, "- learned something\n---\n") != 2 ||
				!strings.Contains(progress, "## US-001\n") || !strings.Contains(progress, "## US-002\n") {
				t.Errorf("progress.txt on ralph/feature-x:\n%s", progress)
			}
			if c.workers != "1" && !strings.Contains(r.stdout, "progress.txt: both sides added to the end, both kept") {
				t.Errorf("the run does not say it kept both progress entries:\n%s", r.stdout)
			}
			if c.workers != "1" && !strings.Contains(r.stdout, "wiggum: staying on wiggum/US-00") {
				t.Errorf("the agents' git did not say it kept them on their worktrees' branches:\n%s", r.stdout)
			}
			if st := mustRun(t, dir, "git", "status", "--porcelain"); st != "" {
				t.Errorf("the tree is not clean:\n%s", st)
			}
		})
	}
}

// The switch is refused, with nothing changed and no agent run, when git
// would not make it: a file of the person's in the way.
func TestRunRefusesABranchSwitchInTheWay(t *testing.T) {
	dir := newRepo(t)
	writeFile(t, filepath.Join(dir, "prd.json"), branchPRD)
	mustRun(t, dir, "git", "add", "prd.json")
	mustRun(t, dir, "git", "commit", "-q", "-m", "prd")
	main := strings.TrimSpace(mustRun(t, dir, "git", "symbolic-ref", "--short", "HEAD"))
	mustRun(t, dir, "git", "switch", "-q", "-c", "ralph/feature-x")
	writeFile(t, filepath.Join(dir, "notes.txt"), "the branch's\n")
	mustRun(t, dir, "git", "add", "notes.txt")
	mustRun(t, dir, "git", "commit", "-q", "-m", "notes")
	mustRun(t, dir, "git", "switch", "-q", main)
	writeFile(t, filepath.Join(dir, "notes.txt"), "mine, not committed\n")
	marker := filepath.Join(t.TempDir(), "ran")
	r := wiggum(t, dir, nil, "run", "--allow-dirty", "--agent-cmd", "touch "+marker)
	if r.code != 2 {
		t.Fatalf("run: exit %d, want 2\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "cannot switch from "+main+" to ralph/feature-x (the branchName of prd.json)") ||
		!strings.Contains(r.stderr, "notes.txt") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("stderr is not the one-line reason naming the file:\n%s", r.stderr)
	}
	if exists(marker) {
		t.Error("the agent ran")
	}
	if head := strings.TrimSpace(mustRun(t, dir, "git", "symbolic-ref", "--short", "HEAD")); head != main {
		t.Errorf("HEAD is on %s", head)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(data) != "mine, not committed\n" {
		t.Errorf("notes.txt is %q", data)
	}
	// Refused before its first attempt, the run leaves nothing to resume.
	r = wiggum(t, dir, nil, "run", "--dry-run", "--agent-cmd", "true")
	if r.code != 0 || strings.Contains(r.stdout+r.stderr, "resum") {
		t.Errorf("dry run after the refusal: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// A run killed in an attempt on one branch, resumed with another named
// (--branch): the unfinished attempt is rolled back where it was - its
// checkpoint's branch - before the switch; switched first, its changes
// went along to a branch its checkpoint is not on, the rollback was
// refused ("the branch changed") and the run stopped with exit 4 after
// making the new branch. And resumed on the same branch after the person
// went back to main, the run switches first and rolls back there.
func TestResumeSettlesTheKilledAttemptOnItsBranch(t *testing.T) {
	for _, c := range []struct {
		name, resumeBranch, personOn string
	}{
		{"another branch named", "other", ""},
		{"the person went back to main", "ralph/x", "main"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, marks := twoStories(t)
			main := strings.TrimSpace(mustRun(t, dir, "git", "symbolic-ref", "--short", "HEAD"))
			agent := filepath.Join(marks, "agent.sh")
			writeFile(t, agent, `cat > /dev/null
echo "$WIGGUM_STORY" > "work-$WIGGUM_STORY.txt"
if [ ! -e "`+marks+`/resumed" ]; then
  touch "`+marks+`/ready"; sleep `+uniqueSleep()+`
fi
`)
			killWhenReady(t, dir, marks, "run", "--plan", "plan.md", "--branch", "ralph/x", "--agent-cmd", "sh "+agent, "--retries", "0")
			if c.personOn != "" {
				mustRun(t, dir, "git", "switch", "-q", strings.ReplaceAll(c.personOn, "main", main))
			}
			r := wiggum(t, dir, nil, "run", "--plan", "plan.md", "--branch", c.resumeBranch, "--agent-cmd", "sh "+agent, "--retries", "0")
			if r.code != 0 {
				t.Fatalf("resumed run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, "US-1: rolled back the attempt a crash interrupted") {
				t.Errorf("no rollback of the killed attempt:\n%s", r.stdout)
			}
			if head := strings.TrimSpace(mustRun(t, dir, "git", "symbolic-ref", "--short", "HEAD")); head != c.resumeBranch {
				t.Errorf("the run ended on %s", head)
			}
			if log := mustRun(t, dir, "git", "log", "--format=%s", c.resumeBranch); log != "US-2: two\nUS-1: one\nplan\ninit\n" {
				t.Errorf("%s:\n%s", c.resumeBranch, log)
			}
			if log := mustRun(t, dir, "git", "log", "--format=%s", main); log != "plan\ninit\n" {
				t.Errorf("%s moved:\n%s", main, log)
			}
		})
	}
}
