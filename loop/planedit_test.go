package loop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wiggum-dev/wiggum/internal/plan"
)

// whileAgentRuns runs edit while the first agent runs, then lets each
// agent go on.
func whileAgentRuns(t *testing.T, edit func()) (script string) {
	t.Helper()
	marks := t.TempDir()
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		first := true
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if _, err := os.Stat(filepath.Join(marks, "started")); err == nil {
				if first {
					edit()
					first = false
				}
				_ = os.WriteFile(filepath.Join(marks, "go"), nil, 0o644)
			}
		}
	}()
	return `cat >/dev/null; touch "` + marks + `/started"; while [ ! -e "` + marks + `/go" ]; do sleep 0.01; done; rm -f "` + marks + `/started" "` + marks + `/go"; `
}

func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Error(err)
	}
}

// A person adds a story to the plan while an attempt runs - queuing work
// for an unattended loop. Before, the failed attempt's rollback returned
// the plan to the checkpoint with everything else: the new story was gone
// from the plan without a word (only a backup held it), and the run's
// iteration cap, set from the plan at the start, would not have run it
// anyway. Now the rollback leaves the plan's new stories, says so, and the
// run does them; a run that passes commits them with the tick and goes on
// to them too.
func TestStoriesAddedDuringTheRunAreKeptAndRun(t *testing.T) {
	for _, fail := range []bool{true, false} {
		name := map[bool]string{true: "failed attempt", false: "passed attempt"}[fail]
		t.Run(name, func(t *testing.T) {
			st, p := newRepo(t, 1)
			dir := st.Repo.Root
			script := whileAgentRuns(t, func() {
				appendTo(t, filepath.Join(dir, "plan.md"), "- [ ] US-2: queued while it ran\n")
			})
			script += `echo "$WIGGUM_STORY" > "f-$WIGGUM_STORY"`
			if fail {
				script += `; test "$WIGGUM_STORY" != US-1`
			}
			o := opts(p, script)
			o.Retries, o.MaxIter = 0, 0
			var out strings.Builder
			o.Out = &out
			sum, _ := Run(context.Background(), st, o)
			if !strings.Contains(strings.Join(sum.Completed, " "), "US-2") {
				t.Fatalf("the queued story was not done: %+v\n%s", sum, out.String())
			}
			data, _ := os.ReadFile(filepath.Join(dir, "plan.md"))
			if !strings.Contains(string(data), "- [x] US-2: queued while it ran") {
				t.Fatalf("plan:\n%s", data)
			}
			if fail && !strings.Contains(out.String(), "plan.md gained US-2 during the attempt: kept") {
				t.Errorf("the rollback does not say it kept the new story:\n%s", out.String())
			}
		})
	}
}

// The same in a prd.json plan: a story added to userStories survives the
// failed attempt's rollback.
func TestStoriesAddedToAPRDJSONAreKept(t *testing.T) {
	st, _ := newRepo(t, 0)
	dir := st.Repo.Root
	prd := filepath.Join(dir, "prd.json")
	if err := os.WriteFile(prd, []byte(`{"userStories": [{"id": "US-1", "title": "one", "priority": 1, "passes": false}]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "add", "prd.json")
	gitT(t, dir, "commit", "-q", "-m", "prd")
	p, err := plan.Resolve(dir, dir, plan.Source{File: "prd.json"})
	if err != nil {
		t.Fatal(err)
	}
	script := whileAgentRuns(t, func() {
		if err := os.WriteFile(prd, []byte(`{"userStories": [{"id": "US-1", "title": "one", "priority": 1, "passes": false}, {"id": "US-2", "title": "two", "priority": 2, "passes": false}]}`+"\n"), 0o644); err != nil {
			t.Error(err)
		}
	}) + "exit 1"
	o := opts(p, script)
	o.Retries, o.MaxIter = 0, 1
	var out strings.Builder
	o.Out = &out
	_, _ = Run(context.Background(), st, o)
	stories, err := p.Stories()
	if err != nil || len(stories) != 2 {
		t.Fatalf("stories after the rollback: %+v, %v\n%s", stories, err, out.String())
	}
	if !strings.Contains(out.String(), "prd.json gained US-2 during the attempt: kept") {
		t.Errorf("not said:\n%s", out.String())
	}
}

// A change to a story that was there - here the agent ticking its own
// box, with a story queued besides - cannot be told from the attempt's
// work: the plan is rolled back with it, and the run says where the
// changed plan is saved.
func TestPlanWithAChangedStoryIsRolledBackAndSaid(t *testing.T) {
	st, p := newRepo(t, 1)
	dir := st.Repo.Root
	script := whileAgentRuns(t, func() {
		appendTo(t, filepath.Join(dir, "plan.md"), "- [ ] US-2: queued\n")
	}) + `sed -i 's/- \[ \] US-1/- [x] US-1/' plan.md; exit 1`
	o := opts(p, script)
	o.Retries, o.MaxIter = 0, 1
	var out strings.Builder
	o.Out = &out
	sum, _ := Run(context.Background(), st, o)
	data, _ := os.ReadFile(filepath.Join(dir, "plan.md"))
	if string(data) != "- [ ] US-1: story 1\n" {
		t.Fatalf("plan not rolled back:\n%s", data)
	}
	if len(sum.Backups) != 1 {
		t.Fatalf("backups: %v", sum.Backups)
	}
	want := "plan.md changed during the attempt (US-1): rolled back with it; the changed plan is saved: git show " + sum.Backups[0] + ":plan.md"
	if !strings.Contains(out.String(), want) {
		t.Fatalf("not said (%q):\n%s", want, out.String())
	}
	if saved := gitT(t, dir, "show", sum.Backups[0]+":plan.md"); !strings.Contains(saved, "US-2: queued") {
		t.Fatalf("the saved plan lacks the queued story:\n%s", saved)
	}
}

// A failed attempt that ran npm install and added node_modules/ to
// .gitignore: before, the rollback put .gitignore back and left
// node_modules, and the next story's commit took it in. Now it is saved
// and removed with the rest of the attempt.
func TestFilesHiddenByAFailedAttemptAreNotCommittedLater(t *testing.T) {
	st, p := newRepo(t, 2)
	dir := st.Repo.Root
	o := opts(p, `cat >/dev/null; if [ "$WIGGUM_STORY" = US-1 ]; then mkdir -p node_modules/dep && echo dep > node_modules/dep/index.js && echo node_modules/ >> .gitignore; exit 1; fi; echo ok > ok.txt`)
	o.Retries = 0
	var out strings.Builder
	o.Out = &out
	sum, _ := Run(context.Background(), st, o)
	if len(sum.Completed) != 1 {
		t.Fatalf("run: %+v\n%s", sum, out.String())
	}
	if files := gitT(t, dir, "ls-tree", "-r", "--name-only", "HEAD"); strings.Contains(files, "node_modules") {
		t.Fatalf("the failed attempt's node_modules was committed with US-2:\n%s\n%s", files, out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err == nil {
		t.Errorf("node_modules is left in the tree")
	}
	if !strings.Contains(out.String(), "1 file(s) the attempt's .gitignore change had hidden (node_modules/dep/index.js) removed; saved in refs/wiggum/backup/") {
		t.Errorf("not said:\n%s", out.String())
	}
}

// An agent that ticks its own story in the plan, as snarktank's prompt
// asks: the tick is the loop's to make. In a worker's worktree it was left
// over, uncommitted, and every story's removal said "uncommitted work in
// its worktree is saved" for it; a failed attempt's rollback reported the
// plan as changed. Now it is taken back quietly, and nothing is saved.
func TestAgentsOwnTickIsTheLoops(t *testing.T) {
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			st, p := newRepo(t, 3)
			o := opts(p, `cat >/dev/null; sed -i "s/- \[ \] $WIGGUM_STORY:/- [x] $WIGGUM_STORY:/" plan.md; echo "$WIGGUM_STORY" > "f-$WIGGUM_STORY"; test "$WIGGUM_STORY" != US-3`)
			o.Retries, o.Workers = 0, workers
			var out strings.Builder
			o.Out = &out
			sum, _ := Run(context.Background(), st, o)
			if len(sum.Completed) != 2 {
				t.Fatalf("run: %+v\n%s", sum, out.String())
			}
			if strings.Contains(out.String(), "uncommitted work in its worktree") || strings.Contains(out.String(), "plan.md changed") {
				t.Errorf("the agent's own tick is reported as work:\n%s", out.String())
			}
			if len(sum.Backups) != 1 {
				t.Errorf("backups %v: want only the failed attempt's", sum.Backups)
			}
			data, _ := os.ReadFile(filepath.Join(st.Repo.Root, "plan.md"))
			if string(data) != "- [x] US-1: story 1\n- [x] US-2: story 2\n- [ ] US-3: story 3\n" {
				t.Errorf("plan:\n%s", data)
			}
		})
	}
}

// An agent that removes its own story from the plan, rather than tick it:
// the attempt fails, saying so (it said only "story not found"), and the
// plan change names only that story - the stories below it, moved up a
// line, were named as changed too.
func TestStoryRemovedByItsAgentFailsAndIsNamed(t *testing.T) {
	st, p := newRepo(t, 3)
	dir := st.Repo.Root
	o := opts(p, `cat >/dev/null; echo w > "w-$WIGGUM_STORY"; sed -i "/$WIGGUM_STORY:/d" plan.md`)
	o.Retries, o.MaxIter = 0, 1
	var out strings.Builder
	o.Out = &out
	_, _ = Run(context.Background(), st, o)
	for _, want := range []string{
		"plan.md changed during the attempt (US-1 (removed)): rolled back with it",
		"US-1 failed: US-1 was removed from the plan plan.md during its own attempt - by the agent, or by you: wiggum cannot tell which; a story is done when it is ticked, not removed, so the attempt fails",
		"To drop US-1, stop the run (Ctrl-C), take it out of the plan, and run again",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("not said (%q):\n%s", want, out.String())
		}
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "plan.md")); !strings.Contains(string(data), "US-1") {
		t.Fatalf("the plan was not rolled back:\n%s", data)
	}
}

// A worker's agent that ticks or takes out other stories in its worktree's
// copy of the plan: not taken - they run in their own attempts from the
// main tree's plan - and the landing says so, where before the change
// went with the worktree as "uncommitted work" without a word of what it
// was.
func TestWorkerPlanChangesAreNamed(t *testing.T) {
	st, o, out := parallelOpts(t, 4, `cat >/dev/null; echo x > "f-$WIGGUM_STORY"
[ "$WIGGUM_STORY" = US-1 ] && sed -i 's/- \[ \] US-3:/- [x] US-3:/; /US-4:/d' plan.md; true`)
	o.Workers = 2
	sum, err := Run(context.Background(), st, o)
	if err != nil || len(sum.Completed) != 4 {
		t.Fatalf("%v %+v\n%s", err, sum, out.String())
	}
	if !strings.Contains(out.String(), "US-1: its agent also changed US-3, US-4 (removed) in its worktree's copy of the plan: not taken - the run's plan is the main tree's") {
		t.Errorf("the worker's plan changes were not named:\n%s", out.String())
	}
	for _, f := range []string{"f-US-3", "f-US-4"} {
		if _, err := os.Stat(filepath.Join(st.Repo.Root, f)); err != nil {
			t.Errorf("%s: the story did not run: %v\n%s", f, err, out.String())
		}
	}
}

// A failing attempt whose agent adds a follow-up story to the plan: the
// rollback keeps it, and each retry's agent adds the same line again.
// Each copy was kept too, said as a change "outside its stories", and the
// plan ended with the story listed once per attempt, each counted as one
// more open story (and committed with the next story's work). Now a line
// that lists a story the plan has already is the attempt's copy: dropped
// (the backup has it), and said.
func TestRetryThatAddsTheSameStoryAgainIsNotKeptTwice(t *testing.T) {
	st, p := newRepo(t, 2)
	dir := st.Repo.Root
	o := opts(p, `cat >/dev/null; echo "$WIGGUM_STORY" >> a
if [ "$WIGGUM_STORY" = US-1 ]; then echo "- [ ] US-9: follow-up found by agent" >> plan.md; exit 1; fi`)
	o.Retries, o.MaxIter = 2, 4
	var out strings.Builder
	o.Out = &out
	sum, _ := Run(context.Background(), st, o)
	if len(sum.Completed) != 1 || sum.Left != 2 {
		t.Errorf("summary %+v: want US-2 done, US-1 and US-9 open\n%s", sum, out.String())
	}
	data, _ := os.ReadFile(filepath.Join(dir, "plan.md"))
	if want := "- [ ] US-1: story 1\n- [x] US-2: story 2\n- [ ] US-9: follow-up found by agent\n"; string(data) != want {
		t.Errorf("plan:\n%s\nwant:\n%s", data, want)
	}
	if n := strings.Count(out.String(), "plan.md gained US-9 during the attempt: kept"); n != 1 {
		t.Errorf("the new story said kept %d times, want once:\n%s", n, out.String())
	}
	if n := strings.Count(out.String(), "US-9 is already in the plan: the attempt's copy dropped"); n != 2 {
		t.Errorf("the retries' copies said dropped %d times, want 2:\n%s", n, out.String())
	}
	if strings.Contains(out.String(), "outside its stories") {
		t.Errorf("a copy of a story said as a change outside the stories:\n%s", out.String())
	}
}
