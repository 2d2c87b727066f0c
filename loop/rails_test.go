package loop

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wiggum-dev/wiggum/install"
	"github.com/wiggum-dev/wiggum/internal/events"
	"github.com/wiggum-dev/wiggum/internal/layout"
	"github.com/wiggum-dev/wiggum/internal/plan"
)

// An attempt that breaks wiggum's hooks - deletes a git hook shim, rewrites
// the agent's hook settings - fails even though its agent exited 0: it is
// rolled back (the settings file with it), the git hook is put back (no
// rollback would: it is not in the tree), and the retry goes on guarded.
// What a rollback cannot undo, core.hooksPath, stops the run.
func TestAttemptThatBreaksTheHooksFails(t *testing.T) {
	const settings = `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "wiggum hook claude"}]}]}}` + "\n"
	for _, tc := range []struct {
		name, breaks, want string
		claude, stops      bool
	}{
		{name: "git hook deleted", breaks: `rm -f "$HOOKS/pre-push"`, want: "removed or changed wiggum's git hook(s) pre-push"},
		{name: "settings rewritten", breaks: `echo '{}' > .claude/settings.json`, want: "removed or changed wiggum's hooks in", claude: true},
		{name: "hooks turned off", breaks: `sed -i 's/{"hooks"/{"disableAllHooks": true, "hooks"/' .claude/settings.json`, want: "turned the agent's hooks off", claude: true},
		{name: "hooksPath", breaks: `git config core.hooksPath /dev/null`, want: "core.hooksPath", stops: true},
		{name: "session files deleted", breaks: `rm -f .ralph/.agent-lock .ralph/.agent-lock.json`, want: "deleted or replaced the agent lock file .ralph/.agent-lock and the holder record .ralph/.agent-lock.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HOME", t.TempDir())
			st, p := newRepo(t, 1)
			root := st.Repo.Root
			if _, err := install.InstallGit(context.Background(), st.Repo, false); err != nil {
				t.Fatal(err)
			}
			shim, _ := os.ReadFile(filepath.Join(st.Repo.HooksDir, "pre-push"))
			if err := os.MkdirAll(filepath.Join(root, ".claude"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, ".claude", "settings.json"), []byte(settings), 0o644); err != nil {
				t.Fatal(err)
			}
			gitT(t, root, "add", "-A")
			gitT(t, root, "commit", "-q", "-m", "hooks")
			marker := filepath.Join(t.TempDir(), "broke")
			o := opts(p, `cat >/dev/null; echo x > "f-$WIGGUM_STORY"
if [ ! -e "`+marker+`" ]; then touch "`+marker+`"; HOOKS="`+st.Repo.HooksDir+`"; `+tc.breaks+`; fi`)
			if tc.claude {
				o.Agent.Name, o.VerifyHooks = "claude", true
			}
			var out bytes.Buffer
			o.Out = &out
			sum, err := Run(context.Background(), st, o)
			if tc.stops {
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "rollback does not undo") {
					t.Fatalf("want the run stopped naming %q, got %v\n%s", tc.want, err, out.String())
				}
				return
			}
			if err != nil || len(sum.Completed) != 1 {
				t.Fatalf("the retry should be done: %v %+v\n%s", err, sum, out.String())
			}
			if !strings.Contains(out.String(), "✘ US-1 failed: the attempt "+tc.want) {
				t.Errorf("the first attempt did not fail naming what it broke (%q):\n%s", tc.want, out.String())
			}
			if got, _ := os.ReadFile(filepath.Join(root, ".claude", "settings.json")); string(got) != settings {
				t.Errorf("the settings are not as before the attempt: %s", got)
			}
			if got, _ := os.ReadFile(filepath.Join(st.Repo.HooksDir, "pre-push")); !bytes.Equal(got, shim) {
				t.Errorf("the pre-push shim was not put back: %q", got)
			}
			if log := gitT(t, root, "log", "--format=%s", "-1"); !strings.Contains(log, "US-1") {
				t.Errorf("the story was not committed by its retry: %s", log)
			}
			// The run ended and let go of every file it locked.
			leftovers(t, st)
		})
	}
}

// wiggum's state is never the tree's content, even when git no longer
// ignores it - an agent empties .git/info/exclude, or a .gitignore
// un-ignores it: a failed attempt's rollback does not remove (or save) the
// lock file and the run journal as files the attempt made, and a success
// commit does not take them in.
func TestStateStaysOutWhenGitStopsIgnoringIt(t *testing.T) {
	for _, tc := range []struct{ name, unhide string }{
		{"exclude emptied", `: > "$INFO/exclude"`},
		{"gitignore negation", `printf '!/.ralph/\n!/.ralph/**\n' > .gitignore`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, p := newRepo(t, 2)
			root := st.Repo.Root
			marker := filepath.Join(t.TempDir(), "failed-once")
			o := opts(p, `cat >/dev/null; INFO="`+st.Repo.InfoDir+`"; `+tc.unhide+`; echo x > "f-$WIGGUM_STORY"
if [ ! -e "`+marker+`" ]; then touch "`+marker+`"; exit 1; fi`)
			var out bytes.Buffer
			o.Out = &out
			sum, err := Run(context.Background(), st, o)
			if err != nil || len(sum.Completed) != 2 {
				t.Fatalf("%v %+v\n%s", err, sum, out.String())
			}
			if strings.Contains(out.String(), "locked and written again") {
				t.Errorf("the rollback removed the lock file or its record:\n%s", out.String())
			}
			for _, f := range []string{layout.LockFile, layout.HolderFile, ".ralph/wiggum/run-journal.jsonl"} {
				if _, err := os.Stat(filepath.Join(root, f)); f != layout.HolderFile && err != nil {
					t.Errorf("%s is gone after the run: %v", f, err)
				}
			}
			for _, rev := range []string{"HEAD", "HEAD~1", "HEAD~2"} {
				if files := gitT(t, root, "show", "--name-only", "--format=", rev); strings.Contains(files, ".ralph") {
					t.Errorf("%s commits wiggum's state:\n%s", rev, files)
				}
			}
			if backup := gitT(t, root, "for-each-ref", "--format=%(refname)", "refs/wiggum/backup/"); backup != "" {
				ref := strings.Fields(backup)[0]
				if files := gitT(t, root, "ls-tree", "-r", "--name-only", ref); strings.Contains(files, ".ralph/wiggum") || strings.Contains(files, layout.LockFile) {
					t.Errorf("the backup holds wiggum's state:\n%s", files)
				}
			}
		})
	}
}

// In a parallel run the main tree's lock is every worker's: an agent that
// deletes it from its worktree is not blamed for it (it may be another
// worker's), but the lock file and its record are made again, so no second
// wiggum gets in, and the run ends with every lock let go.
func TestParallelMainLockDeleted(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "deleted")
	st, o, out := parallelOpts(t, 2, `cat >/dev/null; echo x > "f-$WIGGUM_STORY"
if [ "$WIGGUM_STORY" = US-1 ] && [ ! -e "`+marker+`" ]; then touch "`+marker+`"; rm -f "$WIGGUM_MAIN/.ralph/.agent-lock" "$WIGGUM_MAIN/.ralph/.agent-lock.json"; fi`)
	t.Setenv("WIGGUM_MAIN", st.Repo.Root)
	o.Workers = 2
	sum, err := Run(context.Background(), st, o)
	if err != nil || len(sum.Completed) != 2 {
		t.Fatalf("%v %+v\n%s", err, sum, out.String())
	}
	if !strings.Contains(out.String(), "the agent lock file .ralph/.agent-lock and the holder record .ralph/.agent-lock.json deleted or replaced during the attempt: locked and written again") {
		t.Errorf("the main lock was not made again:\n%s", out.String())
	}
	if strings.Contains(out.String(), "failed") {
		t.Errorf("a worker was blamed for the shared lock:\n%s", out.String())
	}
	leftovers(t, st)
}

// An agent that takes open stories out of the plan - a sed gone wrong, a
// plan rewritten without them - has them not run: the run says which, and
// how to find them, where before they vanished without a word ("2 done, 0
// open" of a plan of 4). A story done and then removed is nothing to say.
func TestAgentRemovingStoriesIsNamed(t *testing.T) {
	st, p := newRepo(t, 5)
	o := opts(p, `cat >/dev/null; echo x > "f-$WIGGUM_STORY"
[ "$WIGGUM_STORY" = US-2 ] && sed -i '/US-1:/d; /US-4:/d; /US-5:/d' plan.md; true`)
	var out bytes.Buffer
	o.Out = &out
	sum, err := Run(context.Background(), st, o)
	if err != nil || len(sum.Completed) != 3 {
		t.Fatalf("%v %+v\n%s", err, sum, out.String())
	}
	if !strings.Contains(out.String(), "the agent of US-2 took US-4, US-5, open, out of the plan: they will not run - put them back to have them done (git log -p -- plan.md shows what it took out)") {
		t.Errorf("the stories taken out were not named:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "\nto look at: US-2 took US-4, US-5 out of the plan (wiggum report lists them)\n") {
		t.Errorf("the run's end does not name them:\n%s", out.String())
	}
	evs := readEvents(t, st)
	if !slices.ContainsFunc(evs, func(e events.Event) bool {
		return e.Name == events.RemovedByAgent && e.Story == "US-2" && slices.Equal(e.Removed, []string{"US-4", "US-5"})
	}) {
		t.Errorf("no removed_by_agent event for US-4, US-5:\n%+v", evs)
	}
}

// An agent that deletes the plan, or leaves it unreadable, fails its
// attempt with that said - to the person and to the next attempt's agent
// - where before it read "mark US-1 done: plan: read ...: no such file or
// directory"; the rollback puts the plan back and the next attempt ticks.
func TestAgentBreakingThePlanIsTold(t *testing.T) {
	for _, tc := range []struct{ name, planFile, breakIt, want, told string }{
		{"deleted", "plan.md", "rm plan.md", "the agent deleted the plan plan.md, the run's record of what is done, so US-1 cannot be ticked and the attempt fails", "leave the plan where it is"},
		{"unreadable", "prd.json", `printf '{"userStories": [' > prd.json`, "the agent's changes left the plan prd.json unreadable (plan: ", "keep the plan well formed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, p := newRepo(t, 2)
			if tc.planFile == "prd.json" {
				prd := `{"userStories": [{"id": "US-1", "title": "a", "passes": false}, {"id": "US-2", "title": "b", "passes": false}]}`
				if err := os.WriteFile(filepath.Join(st.Repo.Root, "prd.json"), []byte(prd), 0o644); err != nil {
					t.Fatal(err)
				}
				gitT(t, st.Repo.Root, "add", "-A")
				gitT(t, st.Repo.Root, "commit", "-q", "-m", "prd")
				var err error
				if p, err = plan.Resolve(st.Repo.Root, st.Repo.Root, plan.Source{File: "prd.json"}); err != nil {
					t.Fatal(err)
				}
			}
			o := opts(p, `prompt=$(cat); echo x > "f-$WIGGUM_STORY"
case "$prompt" in *"`+tc.told+`"*) exit 0 ;; esac
[ "$WIGGUM_STORY" = US-1 ] && `+tc.breakIt+`; true`)
			var out bytes.Buffer
			o.Out = &out
			sum, err := Run(context.Background(), st, o)
			if err != nil || len(sum.Completed) != 2 {
				t.Fatalf("%v %+v\n%s", err, sum, out.String())
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("the broken plan was not said:\n%s", out.String())
			}
		})
	}
}

// An agent that ticks other stories in the plan makes the run take them as
// done - the plan is the record - but the run says so, naming them, so
// that a story done without an attempt of its own does not pass unseen.
func TestAgentTickingOtherStoriesIsNamed(t *testing.T) {
	st, p := newRepo(t, 4)
	o := opts(p, `cat >/dev/null; echo x > "f-$WIGGUM_STORY"
[ "$WIGGUM_STORY" = US-1 ] && sed -i 's/- \[ \] US-3:/- [x] US-3:/; s/- \[ \] US-4:/- [x] US-4:/' plan.md; true`)
	var out bytes.Buffer
	o.Out = &out
	sum, err := Run(context.Background(), st, o)
	if err != nil || len(sum.Completed) != 2 {
		t.Fatalf("%v %+v\n%s", err, sum, out.String())
	}
	if !strings.Contains(out.String(), "the agent of US-1 also ticked US-3, US-4 in the plan") {
		t.Errorf("the agent's ticks were not named:\n%s", out.String())
	}
	evs := readEvents(t, st)
	if !slices.ContainsFunc(evs, func(e events.Event) bool {
		return e.Name == events.TickedByAgent && e.Story == "US-1" && slices.Equal(e.Ticked, []string{"US-3", "US-4"})
	}) {
		t.Errorf("no ticked_by_agent event for US-3, US-4:\n%+v", evs)
	}
}
